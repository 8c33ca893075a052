"""Awkward tables replicate exactly: empty, one row, NULL-heavy, string keys under a
case-insensitive PAD SPACE collation, composite keys, unsigned BIGINT keys at 2**64 - 1, and a
table cut into 100 chunks. One ``sparkcdc run`` of two pipelines covers them all."""

from __future__ import annotations

import random

import pytest
from snapshot_support import Scenario

pytestmark = pytest.mark.integration

U64_MAX = 2**64 - 1

TABLES = {
    "empty": "CREATE TABLE {db}.empty (id INT PRIMARY KEY, v VARCHAR(10))",
    "single": "CREATE TABLE {db}.single (id BIGINT PRIMARY KEY, v TEXT)",
    "nulls": (
        "CREATE TABLE {db}.nulls (id INT PRIMARY KEY, a INT NULL, b VARCHAR(50) NULL, c DECIMAL(20,6) NULL,"
        " d DATETIME(3) NULL, e BLOB NULL, f DOUBLE NULL, g DATE NULL, h BIGINT UNSIGNED NULL)"
    ),
    "strings": (
        "CREATE TABLE {db}.strings (k VARCHAR(40) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"
        " PRIMARY KEY, n INT NOT NULL, raw VARBINARY(40) NOT NULL)"
    ),
    "composite": (
        "CREATE TABLE {db}.composite (a INT NOT NULL, b VARCHAR(20) NOT NULL, c BIGINT NOT NULL,"
        " v VARCHAR(30), PRIMARY KEY (a, b, c))"
    ),
    "composite_tuple": (
        "CREATE TABLE {db}.composite_tuple (a INT NOT NULL, b INT NOT NULL, v INT, PRIMARY KEY (a, b))"
    ),
    "ubig_sparse": "CREATE TABLE {db}.ubig_sparse (id BIGINT UNSIGNED PRIMARY KEY, v VARCHAR(30))",
    "ubig_dense": "CREATE TABLE {db}.ubig_dense (id BIGINT UNSIGNED PRIMARY KEY, v VARCHAR(30))",
    "hundred": "CREATE TABLE {db}.hundred (id INT PRIMARY KEY, v VARCHAR(20))",
}


def _string_keys(rng: random.Random) -> list[str]:
    """Distinct keys under utf8mb4_general_ci (no two equal ignoring case and trailing spaces)
    whose collation order differs from Python's: mixed case, trailing spaces, tabs below space."""
    keys: dict[str, str] = {}
    words = ["alpha", "Beta", "gamma", "DELTA", "epsilon", "Zeta", "eta", "THETA", "iota", "Kappa"]
    for i in range(1200):
        base = f"{rng.choice(words)}{i:04d}"
        base = "".join(ch.upper() if rng.random() < 0.3 else ch for ch in base)
        variant = rng.choice(["", " ", "  ", "\t", "!", " x", "Ä", "ö"])
        key = base + variant
        norm = key.rstrip(" ").lower()
        keys.setdefault(norm, key)
    # Edge cases around PAD SPACE: "zz" (with two trailing spaces) sorts equal to "zz",
    # which sorts after "zz\t" in the collation but before it in Python.
    keys["zz"] = "zz  "
    keys["zz\t"] = "zz\t"
    keys["zz!"] = "zz!"
    keys[""] = ""
    return list(keys.values())


def _fill(scenario: Scenario) -> None:
    db = scenario.db
    rng = random.Random(4)
    for ddl in TABLES.values():
        scenario.execute(ddl.format(db=db))
    scenario.execute(f"INSERT INTO {db}.single VALUES (-9223372036854775808, 'only row')")
    scenario.execute(
        f"""INSERT INTO {db}.nulls SELECT seq,
              IF(seq % 7 = 0, seq, NULL), IF(seq % 11 = 0, CONCAT('b', seq), NULL),
              IF(seq % 13 = 0, seq / 3, NULL), IF(seq % 17 = 0, '2024-02-29 23:59:59.999', NULL),
              IF(seq % 19 = 0, UNHEX('00FF00'), NULL), IF(seq % 23 = 0, seq * 1.5e300, NULL),
              IF(seq % 29 = 0, '1000-01-01', NULL), IF(seq % 31 = 0, {U64_MAX} - seq, NULL)
            FROM {db}.seq_1_to_1500"""
    )
    with scenario.server.root_connection(db) as conn, conn.cursor() as cur:
        keys = _string_keys(rng)
        cur.executemany(
            "INSERT INTO strings VALUES (%s, %s, %s)",
            [(k, i, k.encode()) for i, k in enumerate(keys)],
        )
        cur.execute(
            "INSERT INTO composite SELECT seq DIV 50, CONCAT(IF(seq % 2, 'Key', 'key'), seq % 50),"
            " seq, IF(seq % 3 = 0, NULL, CONCAT('v', seq)) FROM seq_1_to_1500"
        )
        cur.execute("INSERT INTO composite_tuple SELECT seq DIV 700, seq, seq * 2 FROM seq_1_to_1500")
        sparse = {0, 1, 2, 2**63 - 1, 2**63, 2**63 + 1, U64_MAX - 1, U64_MAX}
        sparse |= {U64_MAX - k * 7919 for k in range(600)} | {2**63 + k for k in range(300)}
        cur.executemany("INSERT INTO ubig_sparse VALUES (%s, %s)", [(k, str(k)) for k in sorted(sparse)])
        cur.executemany(
            "INSERT INTO ubig_dense VALUES (%s, %s)", [(U64_MAX - k, f"d{k}") for k in range(1000)]
        )
        cur.execute("INSERT INTO hundred SELECT seq, CONCAT('h', seq) FROM seq_1_to_1000")


def test_awkward_tables_replicate_exactly(scenario: Scenario) -> None:
    _fill(scenario)
    main_tables = [t for t in TABLES if t != "hundred"]
    first = scenario.manifest(
        "edge-tables",
        main_tables,
        chunk_size=200,
        splits_per_task=2,
        snapshot={"chunkKeyColumns": {f"{scenario.db}.composite_tuple": ["a", "b"]}},
    )
    second = scenario.manifest("edge-hundred", ["hundred"], chunk_size=10, splits_per_task=10)
    both = scenario.work / "both.yaml"
    both.write_text(first.read_text() + "---\n" + second.read_text())
    scenario.run_ok(both)

    for table in TABLES:
        scenario.assert_replica_equal(table)
    assert scenario.sink_count("empty") == 0
    assert scenario.rows(scenario.sink_db, "ubig_sparse")[-1][0] == U64_MAX
    # Trailing spaces survive: the collation ignores them, the replica must not.
    assert scenario.execute(f"SELECT k FROM `{scenario.sink_db}`.strings WHERE k = BINARY 'zz  '") == [
        ("zz  ",)
    ]

    edge = scenario.checkpoint("edge-tables")
    hundred = scenario.checkpoint("edge-hundred")
    assert edge is not None and edge.snapshot_done
    assert hundred is not None and hundred.snapshot_done
    splits = {t.table: plan.split_count() for t, plan in {**edge.plans, **hundred.plans}.items()}
    assert splits["hundred"] == 100, splits
    # The chunked tables were really cut into several splits, by the database where needed.
    for table in ("nulls", "strings", "composite", "composite_tuple", "ubig_sparse", "ubig_dense"):
        assert splits[table] >= 5, splits
    assert edge.plans[next(t for t in edge.plans if t.table == "composite_tuple")].key_columns == ("a", "b")
    assert {info.split.index for infos in hundred.finished.values() for info in infos} == set(range(100))
