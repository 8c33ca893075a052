"""The live binlog reader: ``BinlogChangeReader.stream`` plus table definitions that change.

The schemas the pipeline loads at start describe the tables *now*, but a resumed stream reads
events written before later DDL. With ``binlog_row_metadata=FULL`` every table map names its
columns, so each event is decoded against the columns it really has: the table's current
schema projected onto the table map's names (columns added later are absent from the image,
columns dropped since are skipped). When the projection a table is decoded with changes, the
stream says so with a ``SchemaInUse`` item before that table's next rows, so the consumer writes
those rows with the matching column list.

``set_schema`` swaps a table's definition between two events (after a DDL the consumer
reloaded), or stops decoding a table (``None``).

Started at an offset whose GTID position is known (MariaDB), the stream keeps that position up
to date from each transaction's GTID event, and every boundary it reports carries it: the
checkpoint of any batch can then be moved to a promoted replica (core/source_identity.py).
Started without one, it reports none rather than a partial position.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace

import pymysql
from pymysqlreplication.event import HeartbeatLogEvent, MariadbGtidEvent, QueryEvent, RotateEvent, XidEvent
from pymysqlreplication.row_event import RowsEvent, TableMapEvent

from sparkcdc.core.events import ChangeEvent
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.table_errors import redact
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.binlog.connection import ServerIdClashError, SourceChangedError, StoppedError
from sparkcdc.mysql.binlog.reader import (
    OUTSIDE_TRANSACTIONS,
    BinlogChangeReader,
    DdlStatement,
    _query_items,
    complete_column,
)
from sparkcdc.mysql.connection import SourceConfig
from sparkcdc.mysql.errors import SourceError
from sparkcdc.mysql.schema import TableSchema

__all__ = ["SchemaInUse", "StreamItem", "StreamingChangeReader", "UndecodableRows", "project_schema"]

# What decoding one row event's values raises (the event's bytes are already read, so the stream
# goes on after it); connection and server errors are not among these.
_DECODE_ERRORS = (ArithmeticError, LookupError, NotImplementedError, TypeError, ValueError, struct.error)


@dataclass(frozen=True)
class SchemaInUse:
    """From here on, ``table``'s rows are decoded with ``schema`` (until the next notice)."""

    table: TableId
    schema: TableSchema


@dataclass(frozen=True)
class UndecodableRows:
    """A row event of ``table`` at ``offset`` could not be decoded; the table's rows are not
    decoded any more (engine/table_failures.py fails it). ``detail`` holds no values."""

    table: TableId
    offset: BinlogOffset
    detail: str


StreamItem = ChangeEvent | BinlogOffset | DdlStatement | SchemaInUse | UndecodableRows


def project_schema(schema: TableSchema, names: list[str]) -> TableSchema:
    """``schema`` restricted to the columns named by a table map, in the table map's order.

    Raises ``SourceError`` when a key column is missing: rows could not be identified.
    """
    by_name = {c.name.lower(): c for c in schema.columns}
    columns = tuple(by_name[n.lower()] for n in names if n.lower() in by_name)
    present = {c.name for c in columns}
    missing = [k for k in schema.row_key if k not in present]
    if missing:
        raise SourceError(
            f"table {schema.table}: binlog events carry columns {names}, without key column "
            f"{missing[0]!r} of its current definition; its key changed since these events were "
            "written — resnapshot the table"
        )
    return replace(schema, columns=columns)


class StreamingChangeReader(BinlogChangeReader):
    """A ``BinlogChangeReader`` for the binlog phase (see the module docstring)."""

    def __init__(
        self,
        cfg: SourceConfig,
        server_id: int,
        schemas: Mapping[TableId, TableSchema],
        *,
        heartbeat_seconds: float | None = None,
        blocking: bool = True,
        expect_server_id: int | None = None,
    ) -> None:
        # Non-blocking: a catch-up range reader (engine/catchup.py), which stops at its range's end.
        super().__init__(
            cfg,
            server_id,
            schemas,
            blocking=blocking,
            heartbeat_seconds=heartbeat_seconds,
            expect_server_id=expect_server_id,
        )
        self._latest: dict[TableId, TableSchema] = dict(self._schemas)
        self._in_use: dict[TableId, TableSchema] = {}
        self._notices: list[SchemaInUse] = []

    def set_schema(self, table: TableId, schema: TableSchema | None) -> None:
        """Decode ``table`` with ``schema`` from its next table map on; ``None`` drops its rows."""
        if schema is None:
            self._latest.pop(table, None)
            self._schemas.pop(table, None)
            self._in_use.pop(table, None)
        else:
            self._latest[table] = schema
            self.watch(table)

    def _complete_table_map(self, event: TableMapEvent) -> None:
        table = TableId(event.schema, event.table)
        latest = self._latest.get(table)
        if latest is None:
            self._schemas.pop(table, None)
            return
        names = [str(c.name) if c.name else "" for c in event.columns]
        if all(names) and [n.lower() for n in names] != [c.name.lower() for c in latest.columns]:
            effective = project_schema(latest, names)
            self._schemas[table] = effective
            self._fill_by_name(event, effective)
        else:
            if not all(names) and len(names) != len(latest.columns):
                raise SourceError(
                    f"table {table} has {len(names)} columns in the binlog but {len(latest.columns)} in its "
                    "current definition, and the binlog does not name them (binlog_row_metadata is not "
                    "FULL); set binlog_row_metadata=FULL on the source, or resnapshot the table"
                )
            effective = latest
            self._schemas[table] = latest
            super()._complete_table_map(event)
        if self._in_use.get(table) != effective:
            self._in_use[table] = effective
            self._notices.append(SchemaInUse(table, effective))

    @staticmethod
    def _fill_by_name(event: TableMapEvent, schema: TableSchema) -> None:
        by_name = {c.name.lower(): c for c in schema.columns}
        for lib_col in event.columns:
            col = by_name.get(str(lib_col.name).lower())
            if col is None:
                continue  # dropped since: decoded by the library from the table map, then skipped
            lib_col.name = col.name
            complete_column(lib_col, col)

    def stream(self, start: BinlogOffset) -> Iterator[StreamItem]:
        """Changes from ``start`` on, interleaved with transaction boundaries, DDL statements and
        ``SchemaInUse`` notices (see ``BinlogChangeReader.stream``)."""
        self.close()
        self._begin()
        self.position = start
        self._in_use.clear()
        gtids = _GtidPosition(start.gtid_set)
        self._stream = stream = self._open(start)
        try:
            for event in stream:
                position = BinlogOffset(str(stream.log_file), int(stream.log_pos))
                self.position = position
                if isinstance(event, MariadbGtidEvent):
                    gtids.add(event.domain_id, event.gtid)
                elif isinstance(event, TableMapEvent):
                    self._complete_table_map(event)
                    if self._notices:
                        yield from self._notices
                        self._notices.clear()
                elif isinstance(event, RowsEvent):
                    yield from self._decoded(event, position)
                elif isinstance(event, (XidEvent, RotateEvent, HeartbeatLogEvent, *OUTSIDE_TRANSACTIONS)):
                    yield gtids.at(position)
                elif isinstance(event, QueryEvent):
                    yield from _query_items(event, gtids.at(position))
                if self._stop_requested.is_set():
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

    def _decoded(self, event: RowsEvent, position: BinlogOffset) -> Iterator[ChangeEvent | UndecodableRows]:
        """The event's changes, all or none: a value that cannot be decoded stops its table only."""
        try:
            changes = list(self._changes(event, position))
        except _DECODE_ERRORS as exc:
            table = TableId(str(event.schema), str(event.table))
            self.set_schema(table, None)
            detail, _ = redact(f"{type(exc).__name__}: {exc}")
            yield UndecodableRows(table, position, detail)
            return
        yield from changes


class _GtidPosition:
    """A MariaDB GTID position (the last GTID per domain) kept up to date along the stream."""

    def __init__(self, start: str) -> None:
        self._known = bool(start.strip())
        self._domains: dict[int, str] = {}
        for part in start.replace(" ", ",").split(","):
            if part.strip():
                self._domains[int(part.split("-")[0])] = part.strip()
        self._text = ",".join(self._domains[d] for d in sorted(self._domains))

    def add(self, domain: int, gtid: str) -> None:
        if self._known:
            self._domains[domain] = gtid
            self._text = ",".join(self._domains[d] for d in sorted(self._domains))

    def at(self, position: BinlogOffset) -> BinlogOffset:
        """``position`` with the GTID position there (none when the start's was unknown)."""
        return BinlogOffset(position.file, position.pos, self._text) if self._known else position
