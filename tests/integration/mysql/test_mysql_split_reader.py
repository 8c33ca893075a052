"""architecture §3 rule 2 under concurrent writes: ``read_split`` returns the split's exact content as of
its high watermark.

The check does not trust the merge: the table is quiesced and read at a known position S0, then
a writer thread inserts, updates, deletes and moves keys across the splits while splits are
read. Replaying the binlog (S0, high] onto the S0 content, row by row and without any key-range
logic, gives the table as of ``high``; its rows in the split's range must equal the split read.
The replay itself is validated at the end: replaying (S0, end] must reproduce a plain read of
the quiesced table.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import pytest

from harness.mariadb import binlog_offset
from harness.waiting import wait_until
from harness.writer import RandomWriter
from sparkcdc.core.events import ChangeEvent, Op
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.splits import Key, SnapshotSplit
from sparkcdc.core.tables import TableId
from sparkcdc.mysql import split_reader
from sparkcdc.mysql.binlog.reader import read_changes
from sparkcdc.mysql.chunk_reader import read_chunk
from sparkcdc.mysql.connection import SourceConfig, connect
from sparkcdc.mysql.schema import TableSchema, load_table_schema
from sparkcdc.mysql.split_reader import read_split
from sparkcdc.testing.mariadb import MariaDBServer

Rows = dict[Key, dict[str, Any]]


class Writer(RandomWriter):
    """Random single- and multi-row changes, some in multi-statement transactions, until stopped:
    each transaction is the list of statements ``statements`` draws."""

    def __init__(
        self, server: MariaDBServer, statements: Callable[[random.Random], list[tuple[str, tuple[Any, ...]]]]
    ):
        # Enough to land changes inside every bracket, few enough that the verifying replay of
        # the whole binlog stays quick.
        super().__init__(server, 1234, pause=0.002)
        self._statements = statements

    def transaction(self, cur: Any) -> None:
        for sql, params in self._statements(self.rng):
            cur.execute(sql, params)


def _key(schema: TableSchema, row: Any) -> Key:
    return tuple(row[c] for c in schema.row_key)


def _replay(schema: TableSchema, state: Rows, events: list[ChangeEvent]) -> Rows:
    rows = dict(state)
    for e in events:
        if e.op is Op.INSERT:
            assert e.after is not None
            rows[_key(schema, e.after)] = dict(e.after)
        elif e.op is Op.DELETE:
            assert e.before is not None
            del rows[_key(schema, e.before)]
        else:
            assert e.before is not None and e.after is not None
            del rows[_key(schema, e.before)]
            rows[_key(schema, e.after)] = dict(e.after)
    return rows


def _read_all(cfg: SourceConfig, schema: TableSchema) -> Rows:
    conn = connect(cfg, streaming=True)
    try:
        table = read_chunk(conn, schema, SnapshotSplit(schema.table, 0, None, None))
    finally:
        conn.close()
    return {_key(schema, r): r for r in table.to_pylist()}


def _check_splits(
    server: MariaDBServer,
    cfg: SourceConfig,
    schema: TableSchema,
    splits: list[SnapshotSplit],
    writer: Writer,
    in_range: Callable[[SnapshotSplit, list[Key]], set[Key]],
    rounds: int,
) -> None:
    s0 = binlog_offset(server)
    initial = _read_all(cfg, schema)
    results = []
    with writer:
        # Under load the writer's connection can take longer than a round of reads: the reads
        # start once it writes, and go on (a bounded number of rounds) until it wrote enough.
        wait_until(lambda: writer.transactions >= 5, timeout=60, message="the writer's first transactions")
        for n in range(10 * rounds):
            if n >= rounds and writer.transactions > 50:
                break
            for split in splits:
                result = read_split(cfg, schema, split, server_id=5000 + n, fetch_size=50)
                results.append((split, result))
    end = binlog_offset(server)
    assert writer.transactions > 50

    events = list(read_changes(cfg, 5999, s0, end, {schema.table: schema}))
    # The replay is trustworthy: it reproduces the quiesced table exactly.
    assert _replay(schema, initial, events) == _read_all(cfg, schema)

    merged = 0
    for split, result in results:
        assert s0 <= result.low <= result.high <= end
        assert result.data.schema.equals(schema.arrow_schema())
        before_high = [e for e in events if e.offset <= result.high]
        expected_all = _replay(schema, initial, before_high)
        inside = in_range(split, list(expected_all))
        expected = {k: v for k, v in expected_all.items() if k in inside}
        got_rows = result.data.to_pylist()
        got = {_key(schema, r): r for r in got_rows}
        assert len(got) == len(got_rows), "a key appears twice in the split"
        assert got.keys() == expected.keys(), f"split {split.split_id}: keys differ at {result.high}"
        assert got == expected, f"split {split.split_id}: values differ at {result.high}"
        merged += result.backfill_events
    # The writer was fast enough that brackets really had to be merged.
    assert merged > 0
    assert any(r.high > r.low for _, r in results)


@pytest.fixture(params=["pymysql", "auto"])
def wide_brackets(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both chunk read paths (auto: ConnectorX where installed), each with its chunk read
    padded by pauses, so changes land between the low watermark and the read as well as
    between the read and the high watermark, whatever the machine's speed."""
    real = split_reader.read_chunk

    def slow_read_chunk(*args: Any, **kwargs: Any) -> Any:
        time.sleep(0.02)
        data = real(*args, **kwargs)
        time.sleep(0.02)
        return data

    monkeypatch.setattr(split_reader, "read_chunk", slow_read_chunk)
    return str(request.param)


def _int_in_range(split: SnapshotSplit, keys: list[Key]) -> set[Key]:
    return {
        k
        for k in keys
        if (split.start is None or split.start <= k[:1]) and (split.end is None or k[:1] < split.end)
    }


@pytest.fixture
def int_table(mariadb: MariaDBServer, fresh_db: str, source_config: SourceConfig) -> Iterator[TableSchema]:
    mariadb.execute(f"CREATE TABLE `{fresh_db}`.t (id INT PRIMARY KEY, v INT NOT NULL, pad VARCHAR(64))")
    conn = mariadb.root_connection()
    with conn.cursor() as cur:
        cur.executemany(
            f"INSERT INTO `{fresh_db}`.t VALUES (%s, %s, REPEAT('p', 64))",
            [(i, 0) for i in range(0, 6000, 2)],
        )
    conn.close()
    control = connect(source_config)
    try:
        yield load_table_schema(control, TableId(fresh_db, "t"))
    finally:
        control.close()


def test_int_key_splits_under_concurrent_writes(
    mariadb: MariaDBServer, source_config: SourceConfig, int_table: TableSchema, wide_brackets: str
) -> None:
    t = f"`{int_table.table.database}`.t"

    def statements(rng: random.Random) -> list[tuple[str, tuple[Any, ...]]]:
        def one() -> tuple[str, tuple[Any, ...]]:
            k = rng.randrange(1500, 4500)
            choice = rng.random()
            if choice < 0.3:
                return f"UPDATE {t} SET v = v + 1 WHERE id = %s", (k,)
            if choice < 0.5:
                return f"INSERT IGNORE INTO {t} VALUES (%s, 1, 'new')", (k,)
            if choice < 0.65:
                return f"DELETE FROM {t} WHERE id = %s", (k,)
            if choice < 0.85:  # key change, often across a split boundary
                return f"UPDATE IGNORE {t} SET id = %s WHERE id = %s", (rng.randrange(1500, 4500), k)
            return f"UPDATE {t} SET v = v + 1 WHERE id BETWEEN %s AND %s", (k, k + 40)  # multi-row event

        return [one() for _ in range(rng.choice([1, 1, 3]))]

    splits = [
        SnapshotSplit(int_table.table, 0, None, (2000,)),
        SnapshotSplit(int_table.table, 1, (2000,), (3000,)),
        SnapshotSplit(int_table.table, 2, (3000,), (4000,)),
        SnapshotSplit(int_table.table, 3, (4000,), None),
    ]
    _check_splits(
        mariadb,
        replace(source_config, chunk_reader=wide_brackets),
        int_table,
        splits,
        Writer(mariadb, statements),
        _int_in_range,
        rounds=2,
    )


@pytest.fixture
def string_table(mariadb: MariaDBServer, fresh_db: str, source_config: SourceConfig) -> Iterator[TableSchema]:
    mariadb.execute(
        f"CREATE TABLE `{fresh_db}`.s (name VARCHAR(20) COLLATE utf8mb4_general_ci, n INT, v INT NOT NULL, "
        "PRIMARY KEY (name, n))"
    )
    conn = mariadb.root_connection()
    with conn.cursor() as cur:
        cur.executemany(
            f"INSERT INTO `{fresh_db}`.s VALUES (%s, %s, 0)",
            [(w, n) for w in _NAMES for n in range(40)],
        )
    conn.close()
    control = connect(source_config)
    try:
        yield load_table_schema(control, TableId(fresh_db, "s"))
    finally:
        control.close()


# Case and accents matter to Python's order but not to utf8mb4_general_ci: 'Mango' < 'm' in Python.
_NAMES = [
    "apple",
    "Banana",
    "Mango",
    "mango2",
    "Melon",
    "nut",
    "Olive",
    "pear",
    "Quince",
    "zebra",
    "Äpfel",
    "óliva",
]


@pytest.mark.parametrize("wide_brackets", ["pymysql"], indirect=True)  # the int test covers both paths
def test_collated_composite_key_splits_under_concurrent_writes(
    mariadb: MariaDBServer, source_config: SourceConfig, string_table: TableSchema, wide_brackets: str
) -> None:
    t = f"`{string_table.table.database}`.s"

    def statements(rng: random.Random) -> list[tuple[str, tuple[Any, ...]]]:
        name, n = rng.choice(_NAMES), rng.randrange(40)
        choice = rng.random()
        if choice < 0.4:
            return [(f"UPDATE {t} SET v = v + 1 WHERE name = %s AND n = %s", (name, n))]
        if choice < 0.6:
            return [(f"DELETE FROM {t} WHERE name = %s AND n = %s", (name, n))]
        if choice < 0.8:
            return [(f"INSERT IGNORE INTO {t} VALUES (%s, %s, 1)", (name, n))]
        # move a row to another name (and so, often, to another split)
        return [
            (f"UPDATE IGNORE {t} SET name = %s WHERE name = %s AND n = %s", (rng.choice(_NAMES), name, n))
        ]

    db = string_table.table.database

    def in_range(split: SnapshotSplit, keys: list[Key]) -> set[Key]:
        # An independent judge: the server, filtering a scratch table with the column's collation.
        mariadb.execute(
            f"CREATE OR REPLACE TABLE `{db}`.judge (name VARCHAR(20) COLLATE utf8mb4_general_ci, n INT)"
        )
        if keys:
            conn = mariadb.root_connection()
            with conn.cursor() as cur:
                cur.executemany(f"INSERT INTO `{db}`.judge VALUES (%s, %s)", keys)
            conn.close()
        where, params = ["TRUE"], []
        if split.start is not None:
            where.append("(name, n) >= (%s, %s)")
            params.extend(split.start)
        if split.end is not None:
            where.append("(name, n) < (%s, %s)")
            params.extend(split.end)
        return {
            tuple(r)
            for r in mariadb.execute(f"SELECT name, n FROM `{db}`.judge WHERE {' AND '.join(where)}", params)
        }

    splits = [
        SnapshotSplit(string_table.table, 0, None, ("m", 0)),
        SnapshotSplit(string_table.table, 1, ("m", 0), ("mango2", 20)),
        SnapshotSplit(string_table.table, 2, ("mango2", 20), ("Q", 0)),
        SnapshotSplit(string_table.table, 3, ("Q", 0), None),
    ]
    _check_splits(
        mariadb,
        replace(source_config, chunk_reader=wide_brackets),
        string_table,
        splits,
        Writer(mariadb, statements),
        in_range,
        rounds=2,
    )


def test_quiet_split_has_equal_watermarks(
    mariadb: MariaDBServer, source_config: SourceConfig, int_table: TableSchema
) -> None:
    result = read_split(source_config, int_table, SnapshotSplit(int_table.table, 0, (100,), (200,)), 5100, 10)
    assert result.low.same_position(result.high) and result.backfill_events == 0
    assert result.rows_read == result.data.num_rows == 50
    assert result.data.column("id").to_pylist() == list(range(100, 200, 2))
    assert isinstance(result.high, BinlogOffset)
