"""Issue 14 items 1 and 2 on real servers: every spatial type (SRID 0 and 4326) and every zero-date
variant (NOT NULL and NULL-able DATE/DATETIME/TIMESTAMP) go through the snapshot and the binlog
into MariaDB, PostgreSQL (bytea, and PostGIS geometry where the database has the extension), Spark
(the Delta sink's representation) and the changelog, compared value by value with the source.
Rule 7 (snapshot value == binlog value) is checked for both the plain canonical form and the
zero-date-keeping one, with both chunk readers."""

from __future__ import annotations

import base64
import datetime as dt
import json
import struct
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from harness.mariadb import binlog_offset, unique_name
from sparkcdc.core.events import ChangeEvent
from sparkcdc.core.microbatch import TableChanges, changelog_records
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.splits import SnapshotSplit
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.binlog.reader import read_changes
from sparkcdc.mysql.chunk_reader import read_chunk
from sparkcdc.mysql.connection import SourceConfig, connect
from sparkcdc.mysql.schema import TableSchema, load_table_schema
from sparkcdc.mysql.zero_dates import keep_zero_dates
from sparkcdc.sinks.changelog import ChangelogSinkConfig
from sparkcdc.sinks.jdbc import JdbcSinkConfig
from sparkcdc.sinks.spark_types import from_spark_arrow, spark_struct, to_spark_arrow
from sparkcdc.testing.mariadb import MariaDBServer
from sparkcdc.testing.postgres import PostgresServer

SPATIAL = ["g", "pt", "ls", "pg", "mpt", "mls", "mpg", "gc"]
DATES = ["d", "dn", "dt", "dtn", "ts", "tsn"]
DDL = """CREATE TABLE {t} (
  id INT PRIMARY KEY,
  g GEOMETRY NULL, pt POINT NULL, ls LINESTRING NULL, pg POLYGON NULL, mpt MULTIPOINT NULL,
  mls MULTILINESTRING NULL, mpg MULTIPOLYGON NULL, gc GEOMETRYCOLLECTION NULL,
  d DATE NOT NULL, dn DATE NULL, dt DATETIME NOT NULL, dtn DATETIME(3) NULL,
  ts TIMESTAMP NOT NULL DEFAULT '2001-01-01 00:00:00', tsn TIMESTAMP(6) NULL DEFAULT NULL
)"""
WKT = [
    "POINT(1 2)",
    "POINT(-71.06 42.36)",
    "LINESTRING(0 0, 1 1, 2 5)",
    "POLYGON((0 0, 4 0, 4 4, 0 4, 0 0), (1 1, 2 1, 2 2, 1 1))",
    "MULTIPOINT((1 1), (2 2))",
    "MULTILINESTRING((0 0, 1 1), (2 2, 3 4))",
    "MULTIPOLYGON(((0 0, 1 0, 1 1, 0 0)), ((5 5, 6 5, 6 6, 5 5)))",
    "GEOMETRYCOLLECTION(POINT(1 1), LINESTRING(0 0, 2 2))",
]
# One WKT per spatial column: g holds any geometry.
SHAPES = dict(zip(SPATIAL, ["POLYGON((0 0, 3 0, 3 3, 0 0))", *WKT[1:]], strict=True))
# (d, dn, dt, dtn, ts, tsn) per row: every zero and partly-zero variant, NOT NULL and NULL-able.
DATE_ROWS: dict[int, tuple[str | None, ...]] = {
    1: ("0000-00-00", "0000-00-00", "0000-00-00 00:00:00", "0000-00-00 00:00:00.000", "0000-00-00 00:00:00",
        None),
    2: ("2020-00-10", "2020-05-00", "2020-00-10 12:34:56", "2020-05-00 01:02:03.456", "2021-03-04 05:06:07",
        "0000-00-00 00:00:00.000000"),
    3: ("0000-01-01", None, "0000-03-04 05:06:07", None, "2038-01-19 03:14:07", "1999-12-31 23:59:59.999999"),
    4: ("2024-02-29", "1000-01-01", "9999-12-31 23:59:59", "2024-02-29 12:00:00.500", "1970-01-01 00:00:01",
        "2024-06-01 00:00:00.000001"),
}  # fmt: skip


def _insert(server: MariaDBServer, table: str, rid: int, srid: int, spatial: bool) -> None:
    values = DATE_ROWS[rid]
    names = ["id", *DATES] + (SPATIAL if spatial else [])
    marks = ["%s"] * (1 + len(DATES)) + ["ST_GeomFromText(%s, %s)"] * (len(SPATIAL) if spatial else 0)
    params: list[Any] = [rid, *values]
    for column in SPATIAL if spatial else []:
        params += [SHAPES[column], srid]
    conn = server.root_connection()
    try:
        with conn.cursor() as cur:
            cur.execute("SET SESSION sql_mode = '', time_zone = '+00:00'")
            cur.execute(f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join(marks)})", params)
    finally:
        conn.close()


def _source_rows(server: MariaDBServer, table: str) -> dict[int, dict[str, Any]]:
    """Per row: each spatial column's (SRID, WKB) and each date column's text (None for NULL)."""
    spatial = ", ".join(f"ST_SRID({c}), ST_AsBinary({c})" for c in SPATIAL)
    dates = ", ".join(f"CAST({c} AS CHAR)" for c in DATES)
    conn = server.root_connection()
    try:
        with conn.cursor() as cur:
            cur.execute("SET time_zone = '+00:00'")
            cur.execute(f"SELECT id, {spatial}, {dates} FROM {table}")
            rows = cur.fetchall()
    finally:
        conn.close()
    out = {}
    for row in rows:
        geo = {c: None if row[1 + 2 * i] is None else (int(row[1 + 2 * i]), bytes(row[2 + 2 * i]))
               for i, c in enumerate(SPATIAL)}  # fmt: skip
        text = dict(zip(DATES, row[1 + 2 * len(SPATIAL) :], strict=True))
        out[int(row[0])] = {**geo, **text}
    return out


def _is_zero(text: str | None) -> bool:
    return text is not None and (text.startswith("0000") or "-00" in text[:10])


def _ewkb(srid: int, wkb: bytes) -> bytes:
    # PostGIS EWKB, little-endian as MariaDB writes WKB: the SRID flag, then the SRID.
    assert wkb[0] == 1
    if srid == 0:
        return wkb
    (kind,) = struct.unpack("<I", wkb[1:5])
    return wkb[:1] + struct.pack("<II", kind | 0x20000000, srid) + wkb[5:]


@pytest.fixture
def source(mariadb: MariaDBServer, fresh_db: str) -> Iterator[tuple[str, TableId]]:
    table = f"`{fresh_db}`.`exact`"
    mariadb.execute(DDL.format(t=table))
    yield table, TableId(fresh_db, "exact")


def _snapshot(config: SourceConfig, schema: TableSchema) -> dict[int, dict[str, Any]]:
    conn = connect(config, streaming=True)
    try:
        split = SnapshotSplit(schema.table, 0, None, None)
        rows = read_chunk(conn, schema, split, reader=config.chunk_reader).to_pylist()
    finally:
        conn.close()
    return {r["id"]: r for r in rows}


def _events(
    config: SourceConfig, schema: TableSchema, start: BinlogOffset, stop: BinlogOffset, sid: int
) -> list[ChangeEvent]:
    return list(read_changes(config, sid, start, stop, {schema.table: schema}))


@pytest.mark.parametrize("reader", ["pymysql", "auto"])
def test_spatial_and_zero_dates_exact_in_every_sink(
    mariadb: MariaDBServer,
    postgres: PostgresServer,
    source_config: SourceConfig,
    source: tuple[str, TableId],
    spark: Any,
    tmp_path: Path,
    reader: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    source_config = replace(source_config, chunk_reader=reader)
    table, tid = source
    start = binlog_offset(mariadb)
    _insert(mariadb, table, 1, 0, True)
    _insert(mariadb, table, 2, 4326, True)
    mid = binlog_offset(mariadb)
    _insert(mariadb, table, 3, 4326, True)
    _insert(mariadb, table, 4, 0, False)
    mariadb.execute(
        f"UPDATE {table} SET g = ST_GeomFromText('POINT(7 8)', 4326), d = '2021-00-00', "
        "dt = '0000-00-00 00:00:00' WHERE id = 1"
    )
    stop = binlog_offset(mariadb)
    conn = connect(source_config)
    try:
        plain = load_table_schema(conn, tid)
    finally:
        conn.close()
    kept = keep_zero_dates(plain)

    for n, schema in enumerate((plain, kept)):
        # Rule 7: a row's snapshot value is its binlog value.
        snapshot = _snapshot(source_config, schema)
        inserted = {
            e.after["id"]: e.after for e in _events(source_config, schema, start, mid, 4301 + n) if e.after
        }
        final = {
            e.after["id"]: e.after for e in _events(source_config, schema, mid, stop, 4311 + n) if e.after
        }
        assert inserted[2] == snapshot[2]
        assert {k: final[k] for k in (1, 3, 4)} == {k: snapshot[k] for k in (1, 3, 4)}
        if schema is kept:
            assert snapshot[2]["d"] == "2020-00-10" and snapshot[2]["tsn"] == "0000-00-00 00:00:00.000000"
            assert snapshot[1]["d"] == "2021-00-00" and snapshot[1]["dtn"] == "0000-00-00 00:00:00.000"
        else:
            assert snapshot[2]["d"] is None and snapshot[2]["tsn"] is None and snapshot[4]["dn"] is not None

    expected = _source_rows(mariadb, table)
    assert expected[1]["g"] == (4326, bytes.fromhex("01010000000000000000001c400000000000002040"))
    # The snapshot of rows 1-2 then the binlog from mid: every sink ends equal to the source.
    first = {k: v for k, v in _snapshot(source_config, kept).items() if k in (1, 2)}
    _check_mariadb(mariadb, kept, first, _events(source_config, kept, mid, stop, 4321), expected)
    plain_first = {k: v for k, v in _snapshot(source_config, plain).items() if k in (1, 2)}
    plain_events = _events(source_config, plain, mid, stop, 4322)
    _check_postgres(postgres, plain, plain_first, plain_events, expected)
    _check_postgis(postgres, plain, plain_first, plain_events, expected)
    _check_changelog(tmp_path, plain, plain_first, plain_events, expected)
    _check_spark(spark, plain, _snapshot(source_config, plain), expected)


def _changes(schema: TableSchema, events: list[ChangeEvent]) -> TableChanges:
    upserts = {(e.after["id"],): e.after for e in events if e.after is not None}
    records = [r for e in events for r in changelog_records(e)]
    return TableChanges(schema.table, upserts, [], records)


def _write(
    config: Any, schema: TableSchema, first: dict[int, dict[str, Any]], events: list[ChangeEvent]
) -> None:
    sink = config.open()
    try:
        sink.prepare([schema])
        data = pa.Table.from_pylist(list(first.values()), schema=schema.arrow_schema())
        sink.write_split(
            schema, SnapshotSplit(schema.table, 0, None, None), data, BinlogOffset("b.000001", 4)
        )
        sink.apply_changes(schema, _changes(schema, events))
    finally:
        sink.close()


def _check_mariadb(
    server: MariaDBServer, schema: TableSchema, first: dict[int, dict[str, Any]], events: list[ChangeEvent],
    expected: dict[int, dict[str, Any]],
) -> None:  # fmt: skip
    assert server.cdc_user and server.cdc_password
    db = unique_name("exact") + "_replica"
    config = JdbcSinkConfig("mysql", server.host, server.port, db, server.cdc_user, server.cdc_password)
    _write(config, schema, first, events)
    try:
        assert _source_rows(server, f"`{db}`.`exact`") == expected
        # The replica keeps NOT NULL: a zero date is a value there.
        nullable = server.execute(
            "SELECT COLUMN_NAME, IS_NULLABLE FROM information_schema.COLUMNS"
            f" WHERE TABLE_SCHEMA = '{db}' AND TABLE_NAME = 'exact' AND COLUMN_NAME IN ('d', 'dt', 'ts')"
        )
        assert {str(n): str(v) for n, v in nullable} == {"d": "NO", "dt": "NO", "ts": "NO"}
    finally:
        server.execute(f"DROP DATABASE IF EXISTS `{db}`")


def _check_postgres(
    postgres: PostgresServer, schema: TableSchema, first: dict[int, dict[str, Any]],
    events: list[ChangeEvent], expected: dict[int, dict[str, Any]],
) -> None:  # fmt: skip
    assert postgres.cdc_user and postgres.cdc_password
    db = unique_name("exact")
    postgres.execute(f'CREATE DATABASE "{db}" OWNER "{postgres.cdc_user}"')
    config = JdbcSinkConfig(
        "postgresql", postgres.host, postgres.port, db, postgres.cdc_user, postgres.cdc_password
    )
    _write(config, schema, first, events)
    rows = postgres.execute(f"SELECT id, {', '.join(SPATIAL + DATES)} FROM exact", database=db)
    for row in rows:
        want = expected[int(row[0])]
        for i, column in enumerate(SPATIAL):
            value = want[column]
            assert (None if row[1 + i] is None else bytes(row[1 + i])) == (value and _ewkb(*value)), column
        for i, column in enumerate(DATES):
            assert row[1 + len(SPATIAL) + i] == _python_date(column, want[column]), (row[0], column)


def _check_postgis(
    postgres: PostgresServer, schema: TableSchema, first: dict[int, dict[str, Any]],
    events: list[ChangeEvent], expected: dict[int, dict[str, Any]],
) -> None:  # fmt: skip
    """A target database with PostGIS gets ``geometry`` columns holding the same SRID and WKB."""
    assert postgres.cdc_user and postgres.cdc_password
    db = unique_name("postgis")
    postgres.execute(f'CREATE DATABASE "{db}" OWNER "{postgres.cdc_user}"')
    postgres.execute("CREATE EXTENSION postgis", database=db)  # as the superuser, as a DBA would
    config = JdbcSinkConfig(
        "postgresql", postgres.host, postgres.port, db, postgres.cdc_user, postgres.cdc_password
    )
    _write(config, schema, first, events)
    types = postgres.execute(
        "SELECT column_name, udt_name FROM information_schema.columns WHERE table_name = 'exact'", database=db
    )
    assert {str(n): str(t) for n, t in types if n in SPATIAL} == dict.fromkeys(SPATIAL, "geometry")
    listed = ", ".join(f"ST_SRID({c}), ST_AsBinary({c})" for c in SPATIAL)
    for row in postgres.execute(f"SELECT id, {listed} FROM exact", database=db):
        want = expected[int(row[0])]
        for i, column in enumerate(SPATIAL):
            srid, wkb = row[1 + 2 * i], row[2 + 2 * i]
            assert (None if wkb is None else (int(srid), bytes(wkb))) == want[column], (row[0], column)


def _python_date(column: str, text: str | None) -> Any:
    """The value a target without zero dates holds for MySQL's ``text``: NULL for a zero date."""
    if text is None or _is_zero(text):
        return None
    if column.startswith("d") and not column.startswith("dt"):
        return dt.date.fromisoformat(text)
    value = dt.datetime.fromisoformat(text)
    return value.replace(tzinfo=dt.timezone.utc) if column.startswith("ts") else value


def _check_changelog(
    tmp_path: Path, schema: TableSchema, first: dict[int, dict[str, Any]], events: list[ChangeEvent],
    expected: dict[int, dict[str, Any]],
) -> None:  # fmt: skip
    _write(ChangelogSinkConfig(str(tmp_path / "changelog")), schema, first, events)
    latest: dict[int, dict[str, Any]] = {}
    for path in sorted((tmp_path / "changelog").rglob("*.jsonl")):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            if record["op"] in ("+I", "+U"):
                latest[record["data"]["id"]] = record["data"]
    assert latest.keys() == expected.keys()
    for rid, data in latest.items():
        for column in SPATIAL:
            value = expected[rid][column]
            got = data[column]
            assert (None if got is None else (got["srid"], base64.b64decode(got["wkb"]))) == value, column
        for column in DATES:
            value = _python_date(column, expected[rid][column])
            assert data[column] == (None if value is None else value.isoformat()), (rid, column)


def _check_spark(
    spark: Any, schema: TableSchema, rows: dict[int, dict[str, Any]], expected: dict[int, Any]
) -> None:
    """The Delta sink's representation: {srid, wkb} structs that read back to the canonical value."""
    data = pa.Table.from_pylist(list(rows.values()), schema=schema.arrow_schema())
    frame = spark.createDataFrame(to_spark_arrow(schema, data), schema=spark_struct(schema))
    stored = {r["id"]: r for r in frame.collect()}
    for rid, row in stored.items():
        for column in SPATIAL:
            value = row[column]
            assert (None if value is None else (value["srid"], bytes(value["wkb"]))) == expected[rid][column]
    back = from_spark_arrow(schema, frame.toArrow())
    assert back.sort_by("id").to_pylist() == data.sort_by("id").to_pylist()
