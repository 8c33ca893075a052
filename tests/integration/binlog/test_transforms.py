"""Column rules, metadata columns and soft deletes, end to end on real MariaDB and PostgreSQL.

* ``spec.transforms`` with an excluded and two masked columns: the JDBC (MariaDB), PostgreSQL and
  changelog sinks hold the excluded column nowhere, the ``sha256`` column only as the digest of
  the source value (the same digest for a value read by the snapshot and one that arrived through
  the binlog: rule 7 extends to masks), the ``redact`` column as NULL; no unmasked value appears
  in any sink, changelog file or log of the runs. ``sparkcdc verify`` compares the columns the
  sink holds unchanged and finds the replica equal.
* A key column cannot be left out: the run is refused before anything is written, naming the
  column and the reason.
* ``metadataColumns`` and ``deleteMode: soft`` into MariaDB and PostgreSQL: snapshot rows carry
  ``_op = r`` and their split's high watermark; a delete keeps the row with its last image and
  ``_deleted = 1``; a re-insert revives it; a key change leaves the old key deleted and the new
  key updated. Verification ignores the kept deleted rows and finds the replica equal.
"""

from __future__ import annotations

import hashlib
from typing import Any

from binlog_support import Case, assert_same_rows

from sparkcdc.testing.postgres import PostgresServer

SECRET_EMAIL = "alice.secret@example.org"
SECRET_SSN = "078-05-1120"
SECRET_NOTE = "never-leaves-the-source"

# Their runs read snapshot waves on the driver's threads (binlog/conftest.py): no JVM per run.


def _sha(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def _pg_pipeline(case: Case, postgres: PostgresServer, name: str, tables: list[str]) -> list[dict[str, Any]]:
    pipeline = case.pipeline(name, tables)
    _, secret = case.to_postgres(pipeline, postgres, f"{case.db}_{name.replace('-', '_')}")
    return [secret, pipeline]


def _create_customers(case: Case) -> None:
    case.execute(
        f"CREATE TABLE `{case.db}`.customers (id INT PRIMARY KEY, name VARCHAR(40), email VARCHAR(80),"
        " ssn CHAR(11) NOT NULL, notes TEXT, balance DECIMAL(10,2))"
    )
    case.execute(
        f"INSERT INTO `{case.db}`.customers SELECT seq, CONCAT('n', seq),"
        f" CONCAT('user', seq % 50, '@example.org'), LPAD(seq, 11, '0'), '{SECRET_NOTE}', seq / 4"
        f" FROM `{case.db}`.seq_1_to_400"
    )
    case.execute(
        f"UPDATE `{case.db}`.customers SET email = %s, ssn = %s WHERE id = 7", (SECRET_EMAIL, SECRET_SSN)
    )


TRANSFORM = {"excludeColumns": ["notes"], "maskColumns": {"email": "sha256", "ssn": "redact"}}


def test_masked_and_excluded_columns_never_reach_a_sink(
    case: Case, postgres: PostgresServer, spark: Any
) -> None:
    _create_customers(case)
    transforms = [{"sourceTables": f"{case.db}.customers", **TRANSFORM}]
    jdbc = case.pipeline("masked", ["customers"])
    log = case.pipeline("masked-log", ["customers"], sink="changelog")
    secret, pg = _pg_pipeline(case, postgres, "masked-pg", ["customers"])
    for pipeline in (jdbc, log, pg):
        pipeline["spec"]["transforms"] = transforms
    manifest = case.manifest("masked.yaml", secret, jdbc, log, pg)
    case.run_ok(manifest)
    # Through the binlog: the secret email again (the same digest as in the snapshot), new rows.
    case.execute(
        f"INSERT INTO `{case.db}`.customers VALUES (1003, 'b', %s, %s, %s, 1),"
        " (1004, 'c', NULL, 'x', NULL, 2)",
        (SECRET_EMAIL, SECRET_SSN, SECRET_NOTE),
    )
    case.execute(f"UPDATE `{case.db}`.customers SET email = CONCAT('new', email) WHERE id % 9 = 0")
    case.execute(f"DELETE FROM `{case.db}`.customers WHERE id % 11 = 0")
    case.run_ok(manifest)

    sink = case.sink_db("masked")
    assert case.columns(sink, "customers") == ["id", "name", "email", "ssn", "balance"]
    source = case.execute(f"SELECT id, name, email, balance FROM `{case.db}`.customers")
    expected = [(i, n, None if e is None else _sha(e), None, b) for i, n, e, b in source]
    assert_same_rows(expected, case.rows(sink, "customers"), "masked MariaDB replica")
    stored = postgres.execute(
        "SELECT id, name, email, ssn, balance FROM customers", database=f"{case.db}_masked_pg"
    )
    assert_same_rows(expected, [tuple(r) for r in stored], "masked PostgreSQL replica")
    digests = case.execute(f"SELECT email FROM `{sink}`.customers WHERE id IN (7, 1003)")
    assert digests == [(_sha(SECRET_EMAIL),), (_sha(SECRET_EMAIL),)]  # snapshot == binlog

    written = [
        p.read_text(errors="replace") for p in case.work.rglob("*") if p.is_file() and p.suffix != ".yaml"
    ]
    dump = "\n".join(written) + repr(case.rows(sink, "customers")) + repr(stored)
    for secret_value in (SECRET_EMAIL, SECRET_SSN, SECRET_NOTE):
        assert secret_value not in dump, f"{secret_value} leaked into a sink, changelog file or log"
    assert _sha(SECRET_EMAIL) in dump  # the changelog holds the digest

    case.verify(spark, case.manifest("masked-verify.yaml", jdbc))


def test_a_key_column_cannot_be_left_out(case: Case) -> None:
    _create_customers(case)
    pipeline = case.pipeline("nokey", ["customers"])
    pipeline["spec"]["transforms"] = [{"sourceTables": f"{case.db}.customers", "includeColumns": ["name"]}]
    result = case.run(case.manifest("nokey.yaml", pipeline))
    assert result.returncode == 2, result.describe()
    assert "leaves out key column 'id'" in result.stderr, result.stderr
    assert case.execute(
        "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = %s", (case.sink_db("nokey"),)
    ) == [(0,)]


def test_soft_deletes_and_metadata_columns(case: Case, postgres: PostgresServer, spark: Any) -> None:
    db = case.db
    case.execute(f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY, v VARCHAR(20))")
    case.execute(f"INSERT INTO `{db}`.t SELECT seq, CONCAT('v', seq) FROM `{db}`.seq_1_to_300")
    sink_options = {
        "metadataColumns": ["op", "ts_ms", "binlog_file", "binlog_pos", "source_table"],
        "deleteMode": "soft",
    }
    jdbc = case.pipeline("soft", ["t"])
    secret, pg = _pg_pipeline(case, postgres, "soft-pg", ["t"])
    for pipeline in (jdbc, pg):
        pipeline["spec"]["sink"].update(sink_options)
    manifest = case.manifest("soft.yaml", secret, jdbc, pg)
    case.run_ok(manifest)
    snapshot_end = case.position()
    case.execute(f"DELETE FROM `{db}`.t WHERE id IN (1, 2, 5)")
    case.execute(f"INSERT INTO `{db}`.t VALUES (1, 'back')")  # revived
    case.execute(f"UPDATE `{db}`.t SET id = 1003 WHERE id = 3")  # re-keyed
    case.execute(f"UPDATE `{db}`.t SET v = 'changed' WHERE id = 4")
    case.execute(f"INSERT INTO `{db}`.t VALUES (2000, 'brief')")
    case.execute(f"DELETE FROM `{db}`.t WHERE id = 2000")
    case.execute(f"INSERT INTO `{db}`.t VALUES (5, 'five again')")
    case.execute(f"DELETE FROM `{db}`.t WHERE id = 5")  # deleted twice: its last image is kept
    case.run_ok(manifest)

    sql = (
        "SELECT id, v, _op, _deleted, _source_table FROM t"
        " WHERE id IN (1, 2, 3, 4, 5, 6, 1003, 2000) ORDER BY id"
    )
    expected = [
        (1, "back", "c", 0, "t"),
        (2, "v2", "d", 1, "t"),
        (3, "v3", "d", 1, "t"),
        (4, "changed", "u", 0, "t"),
        (5, "five again", "d", 1, "t"),
        (6, "v6", "r", 0, "t"),
        (1003, "v3", "u", 0, "t"),
        (2000, "brief", "d", 1, "t"),
    ]
    sink = case.sink_db("soft")
    assert case.execute(sql.replace("FROM t", f"FROM `{sink}`.t")) == expected
    assert [tuple(r) for r in postgres.execute(sql, database=f"{db}_soft_pg")] == expected
    read = case.execute(f"SELECT _binlog_file, _binlog_pos, _ts_ms FROM `{sink}`.t WHERE _op = 'r'")
    # A snapshot row's position is its split's high watermark: before the snapshot ended.
    assert len(read) == 295 and all((f, p) <= (snapshot_end.file, snapshot_end.pos) for f, p, _ in read)
    assert all(ts > 0 for _, _, ts in read)
    changed = case.execute(f"SELECT _binlog_file, _binlog_pos FROM `{sink}`.t WHERE _op <> 'r'")
    assert all((f, p) > (snapshot_end.file, snapshot_end.pos) for f, p in changed)
    case.verify(spark, case.manifest("soft-verify.yaml", jdbc))
