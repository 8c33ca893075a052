"""Reading row changes from the binlog with python-mysql-replication.

``BinlogChangeReader`` reads the binlog from an offset for a set of tables and yields
``ChangeEvent``s whose row images are canonical (types.py), so they compare equal to snapshot
rows. A bounded read (``stop`` given) is what the snapshot's watermark merge uses; the same
class serves the streaming reader with ``blocking=True`` and no stop.

Every concurrent reader needs its own server id: the source treats the connection as a replica
and drops an older connection when another registers with the same id.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import pymysql
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.constants import FIELD_TYPE
from pymysqlreplication.event import (
    FormatDescriptionEvent,
    HeartbeatLogEvent,
    MariadbBinLogCheckPointEvent,
    MariadbGtidEvent,
    MariadbGtidListEvent,
    PreviousGtidsEvent,
    QueryEvent,
    RotateEvent,
    StopEvent,
    XidEvent,
)
from pymysqlreplication.row_event import (
    DeleteRowsEvent,
    RowsEvent,
    TableMapEvent,
    UpdateRowsEvent,
    WriteRowsEvent,
)

from sparkcdc.compat.mysql_replication import patch_rows_event
from sparkcdc.core.charsets import decode_mysql_latin1
from sparkcdc.core.events import ChangeEvent, Op
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.binlog.connection import (
    ServerIdClashError,
    SourceChangedError,
    StoppedError,
    StreamConnection,
    is_clash,
)
from sparkcdc.mysql.columns import Column, Family
from sparkcdc.mysql.connection import SourceConfig, connection_kwargs, source_error
from sparkcdc.mysql.errors import BinlogLostError, SourceError
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.mysql.types import binlog_row_to_canonical

__all__ = ["OUTSIDE_TRANSACTIONS", "BinlogChangeReader", "DdlStatement", "read_changes"]

log = logging.getLogger(__name__)

# Events only ever written between transactions (at the head of a binlog file, or MariaDB's
# binlog checkpoints): the position after one is a transaction boundary. A rotated binlog ends
# in them, so without them a reader that has read up to the end would not know it until the
# next transaction or heartbeat.
OUTSIDE_TRANSACTIONS = (
    FormatDescriptionEvent,
    StopEvent,
    MariadbGtidListEvent,
    MariadbBinLogCheckPointEvent,
    PreviousGtidsEvent,
)
# Rows events carry the data; TableMap lets us fill in metadata the server did not log; Xid,
# Query, Rotate and the events above are cheap to decode and tell us where we are between our
# tables' events, so a bounded read stops at its end instead of running on to the end of the
# binlog.
_EVENTS = [
    WriteRowsEvent,
    UpdateRowsEvent,
    DeleteRowsEvent,
    TableMapEvent,
    RotateEvent,
    XidEvent,
    QueryEvent,
    HeartbeatLogEvent,
    # Each transaction's GTID: the live stream keeps the GTID position of every boundary it
    # reports, so a checkpoint can be resumed on a promoted replica (stream_reader.py).
    MariadbGtidEvent,
    *OUTSIDE_TRANSACTIONS,
]
# How often a reader may lose its stream before we call it a server-id clash: when a replica
# registers with an id in use, the source ends the older connection, with error 4052 (MariaDB) or
# 1236 (MySQL) when it was idle, but by just closing it when it was busy sending.
_MAX_LOSSES = 2


# Zero dates as MySQL's text, exact negative TIME2 values and latin1 as the server reads it, in
# every process that reads the binlog with the library (executor tasks import this module too):
# compat/mysql_replication.py.
patch_rows_event(latin1=decode_mysql_latin1)


def complete_column(lib_col: Any, col: Column) -> None:
    """Fill in what a table map leaves out of a library column (signedness, ENUM/SET labels,
    charset) from the column's definition read from ``information_schema``."""
    lib_col.unsigned = col.unsigned
    if lib_col.type == FIELD_TYPE.ENUM and not lib_col.enum_values:
        lib_col.enum_values = ["", *col.members]
    elif lib_col.type == FIELD_TYPE.SET and not lib_col.set_values:
        lib_col.set_values = list(col.members)
    if getattr(lib_col, "character_set_name", None) is None:
        if col.family in (Family.BINARY, Family.GEOMETRY):
            lib_col.character_set_name = "binary"  # an unknown codec: bytes stay bytes
        elif col.charset:
            lib_col.character_set_name = col.charset


class BinlogChangeReader:
    """Row changes of ``schemas``' tables, read from the binlog as replica ``server_id``."""

    def __init__(
        self,
        cfg: SourceConfig,
        server_id: int,
        schemas: Mapping[TableId, TableSchema],
        *,
        blocking: bool = False,
        heartbeat_seconds: float | None = None,
        expect_server_id: int | None = None,
    ) -> None:
        # expect_server_id: the source's @@server_id when the stream started; every connection
        # (also the library's silent reconnects) is checked against it, because a position read
        # on another server behind the same address would mean nothing.
        self._expect_server_id = expect_server_id
        self._cfg = cfg
        self._server_id = int(server_id)
        self._schemas = dict(schemas)
        self._watched: set[TableId] = set()  # see watch()
        self._only_schemas: list[str] = []
        self._only_tables: list[str] = []
        self._blocking = blocking
        self._heartbeat = heartbeat_seconds
        self._stream: BinLogStreamReader | None = None
        self._stop_requested = threading.Event()
        self._connections: list[StreamConnection] = []
        self._losses = 0
        self.position: BinlogOffset | None = None

    def __enter__(self) -> BinlogChangeReader:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        if self._stream is not None:
            try:
                self._stream.close()
            except Exception:  # closing a connection the server already dropped
                log.debug("closing the binlog stream failed", exc_info=True)
            self._stream = None

    def request_stop(self) -> None:
        """Make a running ``read``/``stream`` return promptly; safe from any thread.

        A read blocked waiting for the next event is woken (its connections are shut down), so
        the call does not wait for a heartbeat. Events not yet returned are dropped. Do not
        ``close()`` the reader from another thread instead: that races the blocked socket read.
        """
        self._stop_requested.set()
        for conn in list(self._connections):
            conn.interrupt()

    def _begin(self) -> None:
        """Reset the per-read state (``close()`` first)."""
        self._losses = 0
        self._stop_requested.clear()
        self._connections = []

    def _on_lost(self, exc: BaseException) -> None:
        self._losses += 1
        if self._losses >= _MAX_LOSSES:
            raise ServerIdClashError(str(exc))

    def _clash_error(self) -> SourceError:
        return SourceError(
            f"server id {self._server_id} is already used by another replica (the source dropped this "
            "binlog connection when another one registered with the same id); set spec.source.serverId to "
            "a range no other replica uses"
        )

    def _open(self, start: BinlogOffset) -> BinLogStreamReader:
        settings = connection_kwargs(self._cfg)
        tables = {*self._schemas, *self._watched}
        # Kept: ``watch`` extends them while the stream runs (the library reads these very lists
        # for every event; tests/integration/mysql/test_binlog_watch.py fails if it copies them).
        self._only_schemas = sorted({t.database for t in tables})
        self._only_tables = sorted({t.table for t in tables})
        return BinLogStreamReader(
            connection_settings=settings,
            ctl_connection_settings=dict(settings),
            server_id=self._server_id,
            log_file=start.file,
            log_pos=start.pos,
            resume_stream=True,
            blocking=self._blocking,
            only_events=_EVENTS,
            only_schemas=self._only_schemas,
            only_tables=self._only_tables,
            slave_heartbeat=self._heartbeat,
            enable_logging=False,
            pymysql_wrapper=lambda **kw: StreamConnection(
                on_lost=self._on_lost, stopping=self._stop_requested, opened=self._opened, **kw
            ),
        )

    def watch(self, table: TableId) -> None:
        """Receive ``table``'s row events from the next one on, also in a running stream."""
        self._watched.add(table)
        if table.database not in self._only_schemas:
            self._only_schemas.append(table.database)
        if table.table not in self._only_tables:
            self._only_tables.append(table.table)

    def _opened(self, conn: StreamConnection) -> None:
        self._connections.append(conn)
        if self._expect_server_id is None:
            return
        with conn.cursor(pymysql.cursors.Cursor) as cur:  # the library's default is a DictCursor
            cur.execute("SELECT @@GLOBAL.server_id")
            row = cur.fetchone()
        found = int(row[0]) if row else None
        if found != self._expect_server_id:
            raise SourceChangedError(
                f"the source at {self._cfg.address} is now server_id {found}, not server_id "
                f"{self._expect_server_id} the stream was reading (a failover, or another server behind "
                "the address); the binlog position means nothing there. Restart the pipeline: it "
                "resumes on the new server by GTID, or refuses (spec.startup.onSourceChange)"
            )

    def read(self, start: BinlogOffset, stop: BinlogOffset | None = None) -> Iterator[ChangeEvent]:
        """Changes after ``start`` up to and including ``stop`` (``None``: to the end, or forever
        when blocking). ``start`` must be an event boundary (a watermark or an event's offset)."""
        self.close()
        self._begin()
        self.position = start
        if stop is not None and not stop > start:
            return
        self._stream = stream = self._open(start)
        try:
            for event in stream:
                position = BinlogOffset(str(stream.log_file), int(stream.log_pos))
                self.position = position
                if isinstance(event, TableMapEvent):
                    self._complete_table_map(event)
                elif isinstance(event, RowsEvent) and (stop is None or position <= stop):
                    yield from self._changes(event, position)
                if (stop is not None and position >= stop) or self._stop_requested.is_set():
                    return
        except StoppedError:
            return
        except ServerIdClashError:
            raise self._clash_error() from None
        except SourceChangedError as exc:
            raise SourceError(str(exc)) from None
        except pymysql.err.MySQLError as exc:
            raise self._stream_error(exc, start) from None
        finally:
            self.close()
        if stop is not None and not self._stop_requested.is_set():
            raise SourceError(
                f"the binlog ended at {self.position} before the requested position {stop}; the source's "
                "binlog was reset or rotated away while it was being read"
            )

    def _stream_error(self, exc: pymysql.err.MySQLError, start: BinlogOffset) -> SourceError:
        code = exc.args[0] if exc.args else None
        message = str(exc.args[1]) if len(exc.args) > 1 else str(exc)
        if is_clash(code, message):
            return self._clash_error()
        if code == 1236:
            return BinlogLostError(
                f"the source cannot send its binlog from {start} ({message}); the file was probably purged. "
                "Keep binlogs longer (binlog_expire_logs_seconds / expire_logs_days) or set "
                "spec.startup.onBinlogLost: resnapshot"
            )
        if code in (1227, 1045) or (code == 1236 and "privilege" in message.lower()):
            return SourceError(
                f"user {self._cfg.user!r} may not read the binlog ({message}); grant REPLICATION SLAVE to it"
            )
        return source_error(exc, self._cfg, "reading the binlog")

    def _complete_table_map(self, event: TableMapEvent) -> None:
        """Fill in column names, signedness, charsets and ENUM/SET labels from our schema when
        the server did not log them (``binlog_row_metadata`` other than FULL)."""
        schema = self._schemas.get(TableId(event.schema, event.table))
        if schema is None:
            return
        if len(event.columns) != len(schema.columns):
            raise SourceError(
                f"table {schema.table} has {len(event.columns)} columns in the binlog but "
                f"{len(schema.columns)} in the schema read at start; its definition changed during capture, "
                "which is not supported yet: restart the pipeline with a new snapshot of this table"
            )
        for lib_col, col in zip(event.columns, schema.columns, strict=True):
            if not lib_col.name:
                lib_col.name = col.name
            complete_column(lib_col, col)

    def _image(
        self, schema: TableSchema, values: dict[str, Any], none_sources: Mapping[str, str]
    ) -> dict[str, Any]:
        if len(values) == len(schema.columns) and any(name not in values for name in schema.column_names):
            # Names the library could not resolve: the image is in ordinal order.
            values = dict(zip(schema.column_names, values.values(), strict=True))
        for col in schema.columns:
            # The library reports the empty SET as None; tell it apart from NULL.
            empty_set = none_sources.get(col.name) == "empty set"
            if col.family is Family.SET and values.get(col.name) is None and empty_set:
                values[col.name] = set()
        return binlog_row_to_canonical(schema, values)

    def _changes(self, event: RowsEvent, offset: BinlogOffset) -> Iterator[ChangeEvent]:
        table = TableId(event.schema, event.table)
        schema = self._schemas.get(table)
        if schema is None:
            return
        ts_ms = int(event.timestamp) * 1000
        for index, row in enumerate(event.rows):
            if isinstance(event, WriteRowsEvent):
                after = self._image(schema, row["values"], row.get("none_sources", {}))
                yield ChangeEvent(table, Op.INSERT, None, after, offset, index, ts_ms)
            elif isinstance(event, DeleteRowsEvent):
                before = self._image(schema, row["values"], row.get("none_sources", {}))
                yield ChangeEvent(table, Op.DELETE, before, None, offset, index, ts_ms)
            else:
                before = self._image(schema, row["before_values"], row.get("before_none_sources", {}))
                after = self._image(schema, row["after_values"], row.get("after_none_sources", {}))
                yield ChangeEvent(table, Op.UPDATE, before, after, offset, index, ts_ms)


@dataclass(frozen=True)
class DdlStatement:
    """A DDL statement from the binlog, at the offset just after it."""

    offset: BinlogOffset
    schema: str
    query: str


def _within_transaction(text: str) -> bool:
    """Savepoints (``SAVEPOINT``, ``ROLLBACK [WORK] TO``, ``RELEASE SAVEPOINT``): logged inside a
    transaction between its rows — applications use them, and a JDBC sink on the source's server
    writes them (sinks/jdbc/bulk_load.py) — they change no table and end nothing."""
    words = [w for w in text.upper().split()[:3] if w != "WORK"]
    if not words:
        return False
    if words[0] == "SAVEPOINT":
        return True
    return words[0] in ("RELEASE", "ROLLBACK") and words[1:2] in (["SAVEPOINT"], ["TO"])


def _query_items(event: QueryEvent, position: BinlogOffset) -> Iterator[BinlogOffset | DdlStatement]:
    text = event.query.decode("utf-8", "replace") if isinstance(event.query, bytes) else str(event.query)
    head = text.lstrip().split(None, 1)[0].upper() if text.strip() else ""
    if head == "BEGIN" or _within_transaction(text):
        return
    if head in ("COMMIT", "XA"):
        yield position
        return
    schema = event.schema.decode() if isinstance(event.schema, bytes) else str(event.schema)
    yield DdlStatement(position, schema, text)


def read_changes(
    cfg: SourceConfig,
    server_id: int,
    start: BinlogOffset,
    stop: BinlogOffset,
    schemas: Mapping[TableId, TableSchema],
) -> Iterator[ChangeEvent]:
    """The row changes of ``schemas``' tables in ``(start, stop]``, in binlog order."""
    with BinlogChangeReader(cfg, server_id, schemas) as reader:
        yield from reader.read(start, stop)
