"""Chunk boundaries and chunk reads on int, string, composite and other key types: the splits of
a table partition its rows exactly, in the database's key order."""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest

from sparkcdc.core.splits import Key, SnapshotSplit
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.chunk_reader import key_bounds, keys_in_range, next_boundary, read_chunk
from sparkcdc.mysql.connection import SourceConfig, connect
from sparkcdc.mysql.schema import TableSchema, load_table_schema
from sparkcdc.testing.mariadb import MariaDBServer

UTC = dt.timezone.utc
_rng = random.Random(11)
_WORDS = [
    "apple",
    "Apple2",
    "banana",
    "BANANA3",
    "Mango",
    "mango2",
    "zebra",
    "Zulu",
    "éclair",
    "Éclat",
    "_under",
    "[bracket",
    "a b",
    "ab",
    "a-c",
    "Ödön",
    "ø",
    "ß",
    "ss",
    "日本",
]

# name -> (column DDL, Python values generating the rows)
KEY_TYPES: dict[str, tuple[str, Callable[[int], list[Any]]]] = {
    "int": ("k INT NOT NULL", lambda n: _rng.sample(range(-1000, 1000), n)),
    "bigint-unsigned": ("k BIGINT UNSIGNED NOT NULL", lambda n: [2**64 - 1 - i * 3 for i in range(n)]),
    "varchar-ci": (
        "k VARCHAR(30) COLLATE utf8mb4_general_ci NOT NULL",
        lambda n: [f"{_WORDS[i % len(_WORDS)]}.{i}" for i in range(n)],
    ),
    "varchar-latin1": (
        "k VARCHAR(30) CHARACTER SET latin1 COLLATE latin1_swedish_ci NOT NULL",
        lambda n: [f"{w}{i}" for i, w in enumerate(["aä", "Ää", "å", "z", "Z", "o", "ö", "é", "E"] * 8)][:n],
    ),
    "decimal": ("k DECIMAL(30,10) NOT NULL", lambda n: [Decimal(i) / 7 - 3 for i in range(n)]),
    "datetime6": (
        "k DATETIME(6) NOT NULL",
        lambda n: [dt.datetime(2024, 1, 1) + dt.timedelta(seconds=i * 0.37) for i in range(n)],
    ),
    "timestamp6": (
        "k TIMESTAMP(6) NOT NULL",
        lambda n: [f"2024-03-31 0{i % 10}:{i:02d}:00.{i:06d}" for i in range(n)],
    ),
    "time6": ("k TIME(6) NOT NULL", lambda n: [f"{'-' if i % 2 else ''}{i}:00:00.{i:06d}" for i in range(n)]),
    "varbinary": (
        "k VARBINARY(8) NOT NULL",
        lambda n: [bytes([i % 7, i]) if i % 3 else bytes([i]) for i in range(n)],
    ),
    "double": ("k DOUBLE NOT NULL", lambda n: [i * 0.1 - 2 for i in range(n)]),
}


def _plan(conn: Any, schema: TableSchema, chunk_size: int) -> list[SnapshotSplit]:
    boundaries: list[Key] = []
    previous: Key | None = None
    while (boundary := next_boundary(conn, schema, previous, chunk_size)) is not None:
        boundaries.append(boundary)
        previous = boundary
    edges: list[Key | None] = [None, *boundaries, None]
    return [SnapshotSplit(schema.table, i, edges[i], edges[i + 1]) for i in range(len(edges) - 1)]


def _check_partition(
    mariadb: MariaDBServer, source: SourceConfig, conn: Any, schema: TableSchema, chunk_size: int
) -> list[SnapshotSplit]:
    table = f"`{schema.table.database}`.`{schema.table.table}`"
    keys = ", ".join(f"`{c}`" for c in schema.chunk_key)
    expected_order = [tuple(r) for r in mariadb.execute(f"SELECT {keys} FROM {table} ORDER BY {keys}")]
    splits = _plan(conn, schema, chunk_size)
    assert len(splits) == -(-len(expected_order) // chunk_size)  # ceil: every chunk but the last is full
    raw = connect(source, streaming=True)
    seen: list[Any] = []
    try:
        for split in splits:
            rows = read_chunk(raw, schema, split, fetch_size=5).to_pylist()
            assert len(rows) == (
                chunk_size if split.end is not None else len(expected_order) - split.index * chunk_size
            )
            split_keys = [tuple(r[c] for c in schema.chunk_key) for r in rows]
            assert all(keys_in_range(conn, schema.chunk_key_columns, split_keys, split.start, split.end))
            others = [s for s in splits if s is not split]
            for other in others:  # and no other split claims them
                assert not any(
                    keys_in_range(conn, schema.chunk_key_columns, split_keys, other.start, other.end)
                )
            seen.extend(split_keys)
    finally:
        raw.close()
    assert len(seen) == len(set(seen)) == len(expected_order)
    return splits


@pytest.mark.parametrize("key_type", list(KEY_TYPES))
def test_boundaries_partition_the_table(
    mariadb: MariaDBServer, source_config: SourceConfig, fresh_db: str, conn: Any, key_type: str
) -> None:
    ddl, values = KEY_TYPES[key_type]
    table = f"`{fresh_db}`.t"
    mariadb.execute(f"CREATE TABLE {table} ({ddl}, v INT, PRIMARY KEY (k))")
    rows = values(53)
    for i, k in enumerate(rows):
        mariadb.execute(f"INSERT INTO {table} VALUES (%s, %s)", (k, i))
    schema = load_table_schema(conn, TableId(fresh_db, "t"))
    splits = _check_partition(mariadb, source_config, conn, schema, chunk_size=7)
    assert len(splits) == 8
    low, high, count = key_bounds(conn, schema)
    assert count == 53
    everything = read_chunk(conn, schema, SnapshotSplit(schema.table, 0, None, None)).column("k").to_pylist()
    assert low in everything and high in everything
    if key_type == "bigint-unsigned":
        assert high == Decimal(2**64 - 1)
    if key_type == "timestamp6":
        assert isinstance(low, dt.datetime) and low.tzinfo is not None


def test_composite_key(mariadb: MariaDBServer, source_config: SourceConfig, fresh_db: str, conn: Any) -> None:
    table = f"`{fresh_db}`.c"
    mariadb.execute(
        f"CREATE TABLE {table} (a INT, b VARCHAR(10) COLLATE utf8mb4_general_ci, v INT, PRIMARY KEY (a, b))"
    )
    for a in range(5):
        for i, b in enumerate(["x", "Y", "z", "A", "b", "C", "ñ"]):
            mariadb.execute(f"INSERT INTO {table} VALUES (%s, %s, %s)", (a, b, i))
    schema = load_table_schema(conn, TableId(fresh_db, "c"))
    assert schema.chunk_key == ("a", "b")
    splits = _check_partition(mariadb, source_config, conn, schema, chunk_size=4)
    assert splits[1].start is not None and len(splits[1].start) == 2
    assert next_boundary(conn, schema, (0, "A"), 4) == (0, "x")  # A b C ñ x Y z in general_ci order


def test_prefix_chunk_key_moves_past_a_crowded_value(
    mariadb: MariaDBServer, fresh_db: str, conn: Any
) -> None:
    table = f"`{fresh_db}`.p"
    mariadb.execute(f"CREATE TABLE {table} (t INT, id INT, PRIMARY KEY (t, id))")
    for t, count in [(1, 3), (2, 20), (3, 2), (4, 1)]:
        for i in range(count):
            mariadb.execute(f"INSERT INTO {table} VALUES (%s, %s)", (t, i))
    schema = load_table_schema(conn, TableId(fresh_db, "p"), ["t"])
    assert next_boundary(conn, schema, None, 5) == (2,)
    assert next_boundary(conn, schema, (2,), 5) == (3,)  # 20 rows share t=2: the chunk ends at t=3
    assert next_boundary(conn, schema, (3,), 5) is None


def test_empty_table(mariadb: MariaDBServer, fresh_db: str, conn: Any) -> None:
    mariadb.execute(f"CREATE TABLE `{fresh_db}`.e (id INT PRIMARY KEY, v TEXT)")
    schema = load_table_schema(conn, TableId(fresh_db, "e"))
    assert next_boundary(conn, schema, None, 10) is None
    assert key_bounds(conn, schema) == (None, None, 0)
    empty = read_chunk(conn, schema, SnapshotSplit(schema.table, 0, None, None))
    assert empty.num_rows == 0 and empty.schema.equals(schema.arrow_schema())
