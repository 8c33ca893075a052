"""Snapshot splits into MariaDB by ``LOAD DATA LOCAL INFILE`` (sinks/jdbc/bulk_load.py): values
the text format gives a meaning (tabs, newlines, backslashes, ``\\N``, the word NULL, empty
strings, any bytes) arrive exactly; a split written again (a rerun after a kill) replaces its
range; a duplicate key is never skipped silently; a target that refuses ``LOCAL INFILE`` gets
the same rows by INSERTs. The type round-trip through this path is compared with the INSERTs in
test_jdbc_write_paths.py."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pyarrow as pa
import pymysql
import pytest

from harness.mariadb import unique_name
from harness.schemas import col, table_schema
from sparkcdc.core.image_columns import ImageColumns, LoadText
from sparkcdc.core.microbatch import TableChanges
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.splits import SnapshotSplit
from sparkcdc.sinks.base import SinkError
from sparkcdc.sinks.jdbc import JdbcSink, JdbcSinkConfig
from sparkcdc.sinks.jdbc.bulk_load import BulkLoader, tsv_chunks
from sparkcdc.testing.mariadb import MariaDBServer

SCHEMA = table_schema(
    "items",
    [col("id", "bigint(20)", nullable=False), col("s", "varchar(64)"), col("b", "varbinary(64)")],
    ["id"],
)
ARROW = pa.schema([("id", pa.int64()), ("s", pa.string()), ("b", pa.binary())])
HW = BinlogOffset("binlog.000001", 4)

# Every string and byte sequence the LOAD DATA text could confuse with its syntax.
TRICKY: list[tuple[str | None, bytes | None]] = [
    ("a\tb", b"\t"),
    ("line\nbreak\r\n", b"\n\r"),
    ("back\\slash\\", b"\\"),
    ("\\N", b"\\N"),
    ("NULL", b"NULL"),
    ("", b""),
    (None, None),
    ("nul \0 byte", b"\x00\x01\xff\xfe"),
    ("\\t literally, then \\\\n", bytes(range(256))[:64]),
    ("emoji 😀 'quoted' \"double\"", "é".encode("latin-1")),  # bytes that are not UTF-8
]


@pytest.fixture
def config(mariadb: MariaDBServer) -> Iterator[JdbcSinkConfig]:
    assert mariadb.cdc_user and mariadb.cdc_password
    db = unique_name("bulk") + "_replica"  # the cdc account may create and write *_replica
    try:
        yield JdbcSinkConfig("mysql", mariadb.host, mariadb.port, db, mariadb.cdc_user, mariadb.cdc_password)
    finally:
        mariadb.execute(f"DROP DATABASE IF EXISTS `{db}`")


def _table(rows: list[tuple[int, str | None, bytes | None]]) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(ARROW.names, r, strict=True)) for r in rows], schema=ARROW)


def _stored(mariadb: MariaDBServer, config: JdbcSinkConfig) -> list[tuple[object, ...]]:
    return [tuple(r) for r in mariadb.execute(f"SELECT id, s, b FROM `{config.database}`.items ORDER BY id")]


def _loaded_by_load_data(sink: JdbcSink) -> bool | None:
    return sink._bulk.enabled if sink._bulk is not None else None


def test_tricky_values_arrive_exactly_and_a_rerun_replaces_the_range(
    mariadb: MariaDBServer, config: JdbcSinkConfig
) -> None:
    rows = [(i, s, b) for i, (s, b) in enumerate(TRICKY, start=1)]
    split = SnapshotSplit(SCHEMA.table, 0, None, None)
    sink = JdbcSink(config)
    try:
        sink.prepare([SCHEMA])
        sink.write_split(SCHEMA, split, _table(rows), HW)
        assert _loaded_by_load_data(sink) is True
        assert _stored(mariadb, config) == rows

        # The split again, as after a kill: the same rows once, and a row the source deleted
        # meanwhile (id 2) gone, one it changed (id 3) changed.
        rerun = [r for r in rows if r[0] != 2]
        rerun[1] = (3, "changed\tagain", b"\x00")
        sink.write_split(SCHEMA, split, _table(rerun), HW)
        sink.write_split(SCHEMA, split, _table(rerun), HW)
        assert _stored(mariadb, config) == rerun
    finally:
        sink.close()


def test_a_duplicate_key_is_never_skipped(mariadb: MariaDBServer, config: JdbcSinkConfig) -> None:
    """``LOCAL`` turns a duplicate key into a warning; the loader then goes the INSERT way, where
    it is the error the sink redoes the split on (a zombie attempt's rows)."""
    sink = JdbcSink(config)
    sink.prepare([SCHEMA])
    sink.close()
    mariadb.execute(f"INSERT INTO `{config.database}`.items VALUES (2, 'zombie', NULL)")
    conn = pymysql.connect(
        host=config.host,
        port=config.port,
        user=config.user,
        password=config.password,
        database=config.database,
        local_infile=True,
    )
    loader = BulkLoader(lambda n: f"`{n}`", "the test replica")
    inserted = []

    def insert() -> None:
        inserted.append(True)
        cur.execute("INSERT INTO items VALUES (1, 'a', NULL), (2, 'b', NULL)")

    try:
        with conn.cursor() as cur:
            cur.execute("START TRANSACTION")
            with pytest.raises(pymysql.IntegrityError) as raised:
                loader.write(cur, SCHEMA, _table([(1, "a", None), (2, "b", None)]), insert)
            assert raised.value.args[0] == 1062
            assert inserted == [True]
            assert loader.enabled is True  # the load ran, and was rolled back to its savepoint
        conn.rollback()
    finally:
        conn.close()
    assert _stored(mariadb, config) == [(2, "zombie", None)]


def test_a_target_without_local_infile_gets_inserts(
    mariadb: MariaDBServer, config: JdbcSinkConfig, caplog: pytest.LogCaptureFixture
) -> None:
    rows = [(i, s, b) for i, (s, b) in enumerate(TRICKY, start=1)]
    mariadb.execute("SET GLOBAL local_infile = 0")
    try:
        sink = JdbcSink(config)
        try:
            sink.prepare([SCHEMA])
            with caplog.at_level(logging.INFO, logger="sparkcdc.sinks.jdbc.bulk_load"):
                sink.write_split(SCHEMA, SnapshotSplit(SCHEMA.table, 0, None, (6,)), _table(rows[:5]), HW)
                sink.write_split(SCHEMA, SnapshotSplit(SCHEMA.table, 1, (6,), None), _table(rows[5:]), HW)
            assert _loaded_by_load_data(sink) is False
        finally:
            sink.close()
    finally:
        mariadb.execute("SET GLOBAL local_infile = 1")
    said = [r.getMessage() for r in caplog.records if "binlog upserts go into" in r.getMessage()]
    assert len(said) == 1 and "multi-row INSERTs" in said[0], said  # once per sink
    assert _stored(mariadb, config) == rows


def test_bulk_load_off_writes_with_inserts(mariadb: MariaDBServer, config: JdbcSinkConfig) -> None:
    rows = [(i, s, b) for i, (s, b) in enumerate(TRICKY, start=1)]
    sink = JdbcSink(JdbcSinkConfig(**{**config.__dict__, "bulk_load": False}))
    try:
        sink.prepare([SCHEMA])
        sink.write_split(SCHEMA, SnapshotSplit(SCHEMA.table, 0, None, None), _table(rows), HW)
        assert _loaded_by_load_data(sink) is None
        assert not sink._conn._local_infile
    finally:
        sink.close()
    assert _stored(mariadb, config) == rows


def test_binlog_upserts_replace_rows_exactly_or_fall_back(
    mariadb: MariaDBServer, config: JdbcSinkConfig
) -> None:
    """A binlog batch's upserts go in by ``LOAD DATA … REPLACE`` (an upsert there is delete +
    insert, and so is REPLACE): the tricky values replace the rows of their keys; a value the
    target refuses is no silent truncation but an error (strict mode refuses it in LOAD DATA
    too; a warning would send the rows to the INSERTs, which fail so), and the batch's earlier
    writes are rolled back with it."""
    rows = [(i, s, b) for i, (s, b) in enumerate(TRICKY, start=1)]
    sink = JdbcSink(config)
    try:
        sink.prepare([SCHEMA])
        sink.write_split(SCHEMA, SnapshotSplit(SCHEMA.table, 0, None, None), _table(rows[:4]), HW)
        changed = [(i, s, b) for i, s, b in reversed(rows[2:])]  # rows 3, 4 replaced, 5.. new
        sink.apply_changes(SCHEMA, _upserts(changed, deletes=[1]))
        assert _loaded_by_load_data(sink) is True and not sink._bulk._fallbacks  # type: ignore[union-attr]
        assert _stored(mariadb, config) == [rows[1], *rows[2:]]

        too_long = [(2, "x" * 65, None), (99, "new", None)]  # s is varchar(64)
        with pytest.raises(SinkError, match=r"(?i)too long"):
            sink.apply_changes(SCHEMA, _upserts(too_long, deletes=[3]))
        assert _stored(mariadb, config) == [rows[1], *rows[2:]]
    finally:
        sink.close()


def _upserts(rows: list[tuple[int, str | None, bytes | None]], deletes: list[int]) -> TableChanges:
    names = ARROW.names
    columns = [list(c) for c in zip(*rows, strict=True)]
    return TableChanges(SCHEMA.table, ImageColumns(names, columns, [0]), [(k,) for k in deletes])


TEXT_SCHEMA = table_schema(
    "notes", [col("id", "bigint(20)", nullable=False), col("s", "varchar(64)")], ["id"]
)


def _as_load_text(rows: list[tuple[int, str | None]], made: list[int]) -> TableChanges:
    """Upserts as the Go decoder hands them over: load text (here Python's rendering, which the
    decoder's is held to byte for byte), the columns made only when asked for (counted in made)."""
    names = ["id", "s"]
    columns = [list(c) for c in zip(*rows, strict=True)]
    data = pa.Table.from_arrays(
        [pa.array(columns[0], pa.int64()), pa.array(columns[1], pa.string())], names=names
    )
    load = LoadText(b"".join(tsv_chunks(TEXT_SCHEMA, data)), len(rows))

    def make() -> list[list[object]]:
        made.append(1)
        return columns

    return TableChanges(TEXT_SCHEMA.table, ImageColumns(names, make, [0], load), [])


def test_binlog_upserts_given_as_load_text(mariadb: MariaDBServer, config: JdbcSinkConfig) -> None:
    """Upserts the decoder rendered as load text go in as that text, their values never made in
    Python; a value the target refuses is the same error as on the other paths; a target that
    takes no LOAD DATA gets them by INSERTs, made from the values then."""
    rows = [(i, s) for i, (s, _) in enumerate(TRICKY, start=1)]
    made: list[int] = []
    sink = JdbcSink(config)
    try:
        sink.prepare([TEXT_SCHEMA])
        assert sink.reads_load_text
        sink.apply_changes(TEXT_SCHEMA, _as_load_text(rows, made))
        assert made == [] and _loaded_by_load_data(sink) is True
        stored = f"SELECT id, s FROM `{config.database}`.notes ORDER BY id"
        assert [tuple(r) for r in mariadb.execute(stored)] == rows

        with pytest.raises(SinkError, match=r"(?i)too long"):
            sink.apply_changes(TEXT_SCHEMA, _as_load_text([(1, "x" * 65)], made))
        assert [tuple(r) for r in mariadb.execute(stored)] == rows

        sink._bulk._enabled = False  # type: ignore[union-attr]  # as after a refusal
        assert not sink.reads_load_text
        sink.apply_changes(TEXT_SCHEMA, _as_load_text([(1, "by insert")], made))
        assert made == [1] and mariadb.execute(stored)[0] == (1, "by insert")
    finally:
        sink.close()
