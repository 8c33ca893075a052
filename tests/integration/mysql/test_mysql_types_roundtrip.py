"""architecture §3 rule 7: a row read by the snapshot and the same row decoded from the binlog give the
same canonical values, for every type family, on a server whose time zone is not UTC."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from decimal import Decimal
from typing import Any

import pytest

from harness.mariadb import SERVER_TIME_ZONE, binlog_offset
from harness.type_table import DDL, ROWS, insert_rows, random_rows
from sparkcdc.core.events import Op
from sparkcdc.core.splits import SnapshotSplit
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.binlog.reader import read_changes
from sparkcdc.mysql.chunk_reader import read_chunk
from sparkcdc.mysql.connection import SourceConfig, connect
from sparkcdc.mysql.schema import load_table_schema
from sparkcdc.testing.mariadb import MariaDBServer

UTC = dt.timezone.utc


def _diff(a: dict[str, Any], b: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    return {k: (a.get(k), b.get(k)) for k in a.keys() | b.keys() if a.get(k) != b.get(k)}


def _by_id(rows: list[dict[str, Any]]) -> dict[Any, dict[str, Any]]:
    return {r["id"]: r for r in rows}


@pytest.mark.parametrize("reader", ["pymysql", "auto"])
def test_snapshot_and_binlog_values_agree(
    mariadb: MariaDBServer,
    source_config: SourceConfig,
    fresh_db: str,
    reader: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    source_config = replace(source_config, chunk_reader=reader)  # auto: ConnectorX where installed
    assert mariadb.execute("SELECT @@global.time_zone")[0][0] == SERVER_TIME_ZONE
    table = f"`{fresh_db}`.`types`"
    mariadb.execute(DDL.format(t=table))
    start = binlog_offset(mariadb)
    insert_rows(mariadb, table, ROWS + random_rows(200))
    mariadb.execute(f"UPDATE {table} SET ti = ti")  # no change: no row events
    mariadb.execute(f"UPDATE {table} SET tiu = 7 WHERE id IN (1, 2, 3)")
    mariadb.execute(f"DELETE FROM {table} WHERE id = 2")
    stop = binlog_offset(mariadb)

    tid = TableId(fresh_db, "types")
    control = connect(source_config)
    raw = connect(source_config, streaming=True)
    try:
        schema = load_table_schema(control, tid)
        everything = SnapshotSplit(tid, 0, None, None)
        fast = _by_id(read_chunk(raw, schema, everything, fetch_size=64, reader=reader).to_pylist())
        slow = _by_id(
            read_chunk(control, schema, everything, reader=reader).to_pylist()
        )  # PyMySQL-converted values
    finally:
        control.close()
        raw.close()

    events = list(read_changes(source_config, 4101, start, stop, {tid: schema}))
    inserts = _by_id([e.after for e in events if e.op is Op.INSERT])  # type: ignore[misc]
    updates = [e for e in events if e.op is Op.UPDATE]
    deletes = [e for e in events if e.op is Op.DELETE]
    assert len(inserts) == len(ROWS) + 200 and len(updates) == 3 and len(deletes) == 1

    # Replay the binlog to the state the snapshot saw.
    replayed = dict(inserts)
    for event in updates:
        assert event.after is not None
        replayed[event.after["id"]] = dict(event.after)
    for event in deletes:
        assert event.before is not None
        del replayed[event.before["id"]]

    assert fast.keys() == replayed.keys() == slow.keys()
    for key, row in fast.items():
        assert _diff(row, replayed[key]) == {}, f"row {key}: snapshot vs binlog"
        assert _diff(row, slow[key]) == {}, f"row {key}: raw vs PyMySQL-converted snapshot"

    # Spot checks of the canonical forms themselves.
    one = fast[1]
    assert one["biu"] == Decimal(18446744073709551615)
    assert one["d65"] == ROWS[0]["d65"]
    assert one["b1"] is True and one["b10"] == b"\x03\xff" and one["b64"] == b"\xff" * 8
    assert one["ts"] == dt.datetime(1970, 1, 1, 0, 0, 1, 1, tzinfo=UTC)  # +05:30 local -> UTC
    assert one["ts0"] == dt.datetime(2038, 1, 19, 3, 14, 7, tzinfo=UTC)
    assert one["dtm6"] == dt.datetime(9999, 12, 31, 23, 59, 59, 999999)
    assert one["tm6"] == -dt.timedelta(hours=838, minutes=59, seconds=58, microseconds=999999)
    assert one["tm3"] == -dt.timedelta(hours=12, minutes=34, seconds=56, microseconds=789000)
    assert one["tm1"] == -dt.timedelta(microseconds=500000)
    assert one["bn"] == b"\x00ab" + b"\x00" * 5
    assert one["s"] == "x,z" and one["e"] == "c" and one["vc"] == "emoji 😀 ünïcode" and one["lat"] == "café"
    assert one["j"] == ROWS[0]["j"]
    # SRID 0, then the WKB of POINT(1 2): MySQL's own format, which a MySQL target stores as it is.
    assert one["g"] == bytes.fromhex("000000000101000000000000000000f03f0000000000000040")
    zero = fast[3]
    assert zero["dte"] is None and zero["dtm"] is None and zero["dtm6"] is None and zero["ts"] is None
    assert zero["yr"] == 0 and zero["e"] == "" and zero["s"] == "x,y,z"
    assert all(v is None for k, v in fast[4].items() if k != "id")
    # Before images of updates and deletes are canonical too.
    assert updates[0].before is not None and updates[0].before["tiu"] == 255
    assert deletes[0].before is not None and deletes[0].before["s"] == ""


@pytest.mark.parametrize("row_metadata", ["MINIMAL"])
def test_binlog_without_full_row_metadata_uses_the_schema(
    mariadb: MariaDBServer, source_config: SourceConfig, fresh_db: str, row_metadata: str
) -> None:
    """Without binlog_row_metadata=FULL the binlog has no names, signedness or ENUM/SET labels;
    the reader takes them from the schema and still produces the snapshot's values."""
    table = f"`{fresh_db}`.`meta`"
    mariadb.execute(
        f"CREATE TABLE {table} (id INT PRIMARY KEY, u BIGINT UNSIGNED, e ENUM('a','b'), s SET('x','y'), "
        "lat VARCHAR(10) CHARACTER SET latin1, b VARBINARY(4), n TINYINT UNSIGNED)"
    )
    mariadb.execute(f"SET GLOBAL binlog_row_metadata = '{row_metadata}'")
    try:
        start = binlog_offset(mariadb)
        mariadb.execute(
            f"INSERT INTO {table} VALUES (1, 18446744073709551615, 'b', 'x,y', 'café', 0xff00, 200)"
        )
        mariadb.execute(f"INSERT INTO {table} VALUES (2, 1, 'a', '', 'x', '', 0)")
        stop = binlog_offset(mariadb)
    finally:
        mariadb.execute("SET GLOBAL binlog_row_metadata = 'FULL'")
    tid = TableId(fresh_db, "meta")
    conn = connect(source_config, streaming=True)
    try:
        schema = load_table_schema(conn, tid)
        snapshot = read_chunk(conn, schema, SnapshotSplit(tid, 0, None, None)).to_pylist()
    finally:
        conn.close()
    events = list(read_changes(source_config, 4102, start, stop, {tid: schema}))
    assert [e.after for e in events] == snapshot
