"""Finding binlog positions: by timestamp, by GTID, and which files the source still has.

* **timestamp** — ``SHOW BINARY LOGS`` lists the files but not their times, so the file is
  found by binary search, reading each candidate's first event (its Format_description event,
  written when the file was created) through a short non-blocking replication read. That file is
  then scanned — headers only, rows are not decoded — for the first transaction that began at or
  after the time; the stream starts right before it, on a transaction boundary.
* **GTID on MariaDB** — ``SHOW BINLOG EVENTS`` lists every event with its position and, for
  GTID events, the GTID in ``Info`` (``BEGIN GTID 0-1-42``); each file opens with a
  ``Gtid_list`` event holding the GTID state at its start. The file is picked by binary search
  over those states, then scanned for the first transaction outside the set (gtid.py). This
  needs no replication connection (BINLOG MONITOR suffices) and gives the exact position; the
  alternative, a replication connection with ``@slave_connect_state``, would only tell where the
  server *sends* from, not a position we can checkpoint.
* **GTID on MySQL** — MySQL has no GTID in ``SHOW BINLOG EVENTS`` output that can be compared
  without set arithmetic, so the server resolves it: a non-blocking read with auto-position
  (``COM_BINLOG_DUMP_GTID``) starts at the first transaction not in the set, and its position
  is read from the first GTID event the server sends.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pymysql
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.event import (
    FormatDescriptionEvent,
    GtidEvent,
    MariadbGtidEvent,
    QueryEvent,
    RotateEvent,
    XidEvent,
)

from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.mysql.connection import SourceConfig, connection_kwargs, source_error
from sparkcdc.mysql.errors import SourceError
from sparkcdc.mysql.gtid import (
    EventRow,
    GtidScan,
    last_file_before,
    parse_gtid_list_info,
    parse_mariadb_gtid_set,
    pick_start_file,
)
from sparkcdc.mysql.queries import binlog_files

__all__ = [
    "binlog_events",
    "file_start_timestamp",
    "mariadb_gtid_offset",
    "mysql_gtid_offset",
    "timestamp_offset",
]

log = logging.getLogger(__name__)
_PAGE = 5000


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, (bytes, bytearray)) else str(value)


def binlog_events(conn: Any, file: str, start: int = 4, limit: int = _PAGE) -> list[EventRow]:
    """``SHOW BINLOG EVENTS IN file FROM start LIMIT limit``."""
    with conn.cursor(pymysql.cursors.Cursor) as cur:
        cur.execute(f"SHOW BINLOG EVENTS IN %s FROM {int(start)} LIMIT {int(limit)}", (file,))
        rows = cur.fetchall()
    return [EventRow(_text(r[0]), int(r[1]), _text(r[2]), int(r[4]), _text(r[5] or "")) for r in rows]


def _iter_events(conn: Any, files: list[str]) -> Iterator[EventRow]:
    for file in files:
        start = 4
        while True:
            page = binlog_events(conn, file, start)
            yield from page
            if len(page) < _PAGE:
                break
            start = page[-1].end_pos


def _pymysql_connect(**kwargs: Any) -> Any:
    if "db" in kwargs:  # python-mysql-replication still uses PyMySQL's deprecated name
        kwargs["database"] = kwargs.pop("db")
    return pymysql.connections.Connection(**kwargs)


def _replication_reader(
    cfg: SourceConfig, server_id: int, events: list[type], **position: Any
) -> BinLogStreamReader:
    settings = connection_kwargs(cfg)
    return BinLogStreamReader(
        connection_settings=settings,
        ctl_connection_settings=dict(settings),
        server_id=int(server_id),
        blocking=False,
        only_events=events,
        enable_logging=False,
        pymysql_wrapper=_pymysql_connect,
        **position,
    )


# -- timestamp ---------------------------------------------------------------------------------


def file_start_timestamp(cfg: SourceConfig, server_id: int, file: str) -> int | None:
    """Seconds since the epoch at which ``file`` was started (its Format_description event)."""
    stream = _replication_reader(
        cfg, server_id, [FormatDescriptionEvent], log_file=file, log_pos=4, resume_stream=True
    )
    try:
        for event in stream:
            if int(event.timestamp) > 0:
                return int(event.timestamp)
        return None
    except pymysql.err.MySQLError as exc:
        raise source_error(exc, cfg, f"reading the start of binlog file {file}") from None
    finally:
        stream.close()


def _first_transaction_at_or_after(
    cfg: SourceConfig, server_id: int, file: str, target: int
) -> BinlogOffset | None:
    """The position of the first transaction in ``file`` (or later files) that began at or after
    ``target``: the start of its GTID event (or its ``BEGIN``/DDL query without GTIDs)."""
    stream = _replication_reader(
        cfg,
        server_id,
        [MariadbGtidEvent, GtidEvent, QueryEvent, XidEvent, RotateEvent],
        log_file=file,
        log_pos=4,
        resume_stream=True,
    )
    in_transaction = False
    try:
        for event in stream:
            packet = event.packet
            begin = BinlogOffset(str(stream.log_file), int(packet.log_pos) - int(packet.event_size))
            if isinstance(event, (XidEvent, RotateEvent)):
                in_transaction = False
                continue
            if isinstance(event, QueryEvent):
                query = _text(event.query).strip().upper()
                if query == "COMMIT" or (in_transaction and query != "BEGIN"):
                    # COMMIT ends a transaction; so does the DDL that follows its GTID event.
                    in_transaction = False
                    continue
                if in_transaction:
                    continue  # MySQL's BEGIN after the GTID event that opened the transaction
                in_transaction = query == "BEGIN"  # without GTIDs: BEGIN opens, a DDL stands alone
            elif in_transaction:
                continue
            else:
                in_transaction = True  # a GTID event opens a transaction (MariaDB folds BEGIN in)
            if int(event.timestamp) >= target:
                return begin
        return None
    except pymysql.err.MySQLError as exc:
        raise source_error(exc, cfg, f"searching binlog file {file} for a timestamp") from None
    finally:
        stream.close()


def timestamp_offset(
    conn: Any, cfg: SourceConfig, server_id: int, target: float, now: BinlogOffset
) -> BinlogOffset:
    """Where to start so that the first transaction read began at or after ``target``."""
    files = [name for name, _size in binlog_files(conn)]
    if not files:
        raise SourceError("the source lists no binary logs (SHOW BINARY LOGS is empty); is log_bin on?")
    seconds = int(target)  # binlog timestamps have whole seconds
    index = last_file_before(files, lambda f: file_start_timestamp(cfg, server_id, f), seconds)
    if index == 0:
        first = file_start_timestamp(cfg, server_id, files[0])
        if first is not None and first >= seconds:
            log.warning(
                "the oldest binlog file %s starts after the startup timestamp; reading from its start",
                files[0],
            )
            return BinlogOffset(files[0], 4)
    found = _first_transaction_at_or_after(cfg, server_id, files[index], seconds)
    return found if found is not None and found < now else now


# -- GTID ----------------------------------------------------------------------------------------


def _file_state(conn: Any, file: str) -> dict[int, int]:
    for row in binlog_events(conn, file, 4, 3):
        if row.type == "Gtid_list":
            return parse_gtid_list_info(row.info)
    return {}


def mariadb_gtid_offset(conn: Any, gtid_set: str, now: BinlogOffset) -> BinlogOffset:
    """The position right after every transaction of a MariaDB GTID position (``0-1-42,...``)."""
    wanted = parse_mariadb_gtid_set(gtid_set)
    files = [name for name, _size in binlog_files(conn)]
    if not files:
        raise SourceError("the source lists no binary logs (SHOW BINARY LOGS is empty); is log_bin on?")
    states = [_file_state(conn, f) for f in files]
    index = pick_start_file(states, wanted)
    if index is None:
        raise SourceError(
            f"spec.startup.gtidSet {gtid_set}: the transactions right after it were purged from the "
            f"source; its oldest binlog file {files[0]} starts at GTID state "
            f"{','.join(f'{d}-?-{s}' for d, s in sorted(states[0].items()))}. Start with mode: initial "
            "(a new snapshot) or a later GTID"
        )
    scan = GtidScan(wanted, states[index])
    scan.feed(_iter_events(conn, files[index:]))
    with conn.cursor(pymysql.cursors.Cursor) as cur:
        cur.execute("SELECT @@GLOBAL.gtid_binlog_pos")
        row = cur.fetchone()
    server_state = parse_gtid_list_info(_text(row[0] if row and row[0] else ""))
    return scan.finish(now, server_state)


def mysql_gtid_offset(cfg: SourceConfig, server_id: int, gtid_set: str, now: BinlogOffset) -> BinlogOffset:
    """The position of the first transaction a MySQL source sends for auto-position ``gtid_set``
    (the end of the binlog when the set holds everything)."""
    stream = _replication_reader(cfg, server_id, [GtidEvent, RotateEvent], auto_position=gtid_set)
    try:
        for event in stream:
            if isinstance(event, GtidEvent):
                packet = event.packet
                return BinlogOffset(str(stream.log_file), int(packet.log_pos) - int(packet.event_size))
        return now
    except pymysql.err.MySQLError as exc:
        message = str(exc.args[1]) if len(exc.args) > 1 else str(exc)
        raise SourceError(
            f"the source cannot start from spec.startup.gtidSet ({message}); the transactions after "
            "it may have been purged, or the set is not from this server"
        ) from None
    finally:
        stream.close()
