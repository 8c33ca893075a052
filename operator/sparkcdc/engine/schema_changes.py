"""Schema changes of captured tables during the binlog phase.

A DDL statement is judged where it is read — in the reader thread, before the next event is
decoded — because rows after it must be decoded with the table's new definition:

* ADD COLUMN / DROP COLUMN: the table's schema is reloaded from the source and handed to the
  reader; the consumer, at the same place in the stream, commits what came before, alters the
  JDBC target (sinks/jdbc/evolution.py) and writes later rows with the new columns. The changelog
  sink needs nothing: new keys simply appear in ``data``.
* anything else that changes rows' shape or identity (rename, type change, key change, drop,
  truncate, partition drop): only that table stops. Its state becomes ``FAILED`` with an error
  naming the table and the statement, its events are dropped from then on, the other tables
  keep streaming.
* statements that do not touch captured tables, or touch them harmlessly (indexes, options,
  defaults), are ignored.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

from sparkcdc.core.checkpoint import Checkpoint, Phase, TableState
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.binlog.reader import DdlStatement
from sparkcdc.mysql.binlog.stream import StreamingChangeReader
from sparkcdc.mysql.connection import SourceConfig, connect
from sparkcdc.mysql.ddl import DdlKind, TableDdl, column_defaults, parse_ddl
from sparkcdc.mysql.errors import SourceError
from sparkcdc.mysql.flavor import detect_flavor
from sparkcdc.mysql.schema import TableSchema, load_table_schema
from sparkcdc.mysql.zero_dates import keep_zero_dates
from sparkcdc.sinks.base import AddedColumn

__all__ = [
    "Evolution",
    "SchemaChange",
    "SchemaTracker",
    "affected",
    "fail_vanished_tables",
    "failure_message",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Evolution:
    """A table whose columns changed: its new schema, what to add to and drop from the target."""

    table: TableId
    schema: TableSchema
    added: tuple[AddedColumn, ...] = ()
    dropped: tuple[str, ...] = ()


@dataclass(frozen=True)
class SchemaChange:
    """A DDL statement that concerns captured tables, judged; a transaction boundary."""

    offset: BinlogOffset
    statement: str
    evolutions: tuple[Evolution, ...] = ()
    failures: Mapping[TableId, str] = field(default_factory=dict)


@runtime_checkable
class EvolvingSink(Protocol):
    """A sink whose tables follow added and dropped columns (the JDBC sink)."""

    def evolve_table(
        self, schema: TableSchema, added: tuple[AddedColumn, ...], dropped: tuple[str, ...]
    ) -> list[str]: ...


def failure_message(table: TableId, statement: str, offset: BinlogOffset, reason: str) -> str:
    text = " ".join(statement.split())
    text = text if len(text) <= 300 else text[:297] + "..."
    return (
        f"table {table} stopped streaming at binlog {offset}: the statement {text!r} is not supported "
        f"({reason}); the other tables keep streaming. Resnapshot {table} (spec.resnapshotNonce with "
        "resnapshotTables) after adapting the target, or remove it from spec.source.tables"
    )


def fail_vanished_tables(checkpoint: Checkpoint, available: Iterable[TableId]) -> Checkpoint:
    """Mark captured tables that are gone from the source FAILED (the same checkpoint object when
    none is). Their events between the checkpoint and the DDL that removed them cannot be decoded
    any more: the table's definition is gone with it."""
    present = set(available)
    known = set(checkpoint.tables) | set(checkpoint.plans)
    failed = {t for t, s in checkpoint.tables.items() if s.phase is Phase.FAILED}
    gone = sorted(known - failed - present)
    if not gone:
        return checkpoint
    where = checkpoint.binlog_offset or "the start of the binlog phase"
    states = {
        t: TableState(
            Phase.FAILED,
            f"table {t} stopped streaming: it no longer exists on the source (dropped or renamed while the "
            f"pipeline was not running, after binlog {where}). Resnapshot it under its new name, or remove "
            "it from spec.source.tables",
        )
        for t in gone
    }
    return replace(checkpoint, tables={**checkpoint.tables, **states})


def affected(ddl: DdlStatement, captured: Iterable[TableId]) -> list[TableDdl]:
    """The statement's effect on each captured table it touches (``DROP DATABASE`` expands)."""
    captured = set(captured)
    out: list[TableDdl] = []
    for entry in parse_ddl(ddl.query, ddl.schema):
        if entry.table.table == "*":
            out.extend(
                TableDdl(t, entry.kind, reason=entry.reason)
                for t in sorted(captured)
                if t.database == entry.table.database
            )
        elif entry.table in captured:
            out.append(entry)
    return [e for e in out if e.kind is not DdlKind.IGNORE]


class SchemaTracker:
    """Judges DDL in the reader thread and keeps the reader's table definitions current."""

    def __init__(
        self,
        source: SourceConfig,
        schemas: Mapping[TableId, TableSchema],
        chunk_key_overrides: Mapping[str, list[str]] | None = None,
    ) -> None:
        self._source = source
        self._schemas = dict(schemas)
        self._overrides = dict(chunk_key_overrides or {})

    def judge(self, ddl: DdlStatement, reader: StreamingChangeReader) -> SchemaChange | None:
        entries = affected(ddl, self._schemas)
        if not entries:
            return None
        evolutions: list[Evolution] = []
        failures: dict[TableId, str] = {}
        conn: Any = None
        try:
            for entry in entries:
                if entry.kind is DdlKind.FAIL:
                    failures[entry.table] = failure_message(entry.table, ddl.query, ddl.offset, entry.reason)
                    continue
                if conn is None:
                    conn = connect(self._source)
                try:
                    evolutions.append(self._evolve(conn, entry))
                except SourceError as err:
                    failures[entry.table] = failure_message(entry.table, ddl.query, ddl.offset, str(err))
        finally:
            if conn is not None:
                conn.close()
        for evolution in evolutions:
            self._schemas[evolution.table] = evolution.schema
            reader.set_schema(evolution.table, evolution.schema)
        for table in failures:
            self._schemas.pop(table, None)
            reader.set_schema(table, None)
        return SchemaChange(ddl.offset, ddl.query, tuple(evolutions), failures)

    def _evolve(self, conn: Any, entry: TableDdl) -> Evolution:
        old = self._schemas[entry.table]
        override = self._overrides.get(str(entry.table))
        # A row key that is not a source key (sinkKeyColumns, or all columns) stays what it was.
        sink_key = None if old.row_key_unique else old.row_key
        new = replace(load_table_schema(conn, entry.table, override, sink_key), target=old.target)
        if any(c.zero_dates for c in old.columns):
            new = keep_zero_dates(new)  # the sink stores zero dates (zero_dates.py)
        if new.row_key != old.row_key or new.chunk_key != old.chunk_key:
            raise SourceError(f"its key changed from {list(old.row_key)} to {list(new.row_key)}")
        for name in entry.dropped:
            if name in old.row_key:
                raise SourceError(f"key column {name!r} was dropped")
        defaults = column_defaults(conn, entry.table, detect_flavor(conn).is_mariadb)
        names = [c.name for c in new.columns]
        lower = {n.lower(): n for n in names}
        added: list[AddedColumn] = []
        for wanted in entry.added:
            found = lower.get(wanted.lower())
            if found is None:
                continue  # dropped again since: nothing to add
            name = found
            index = names.index(name)
            column = new.columns[index]
            after = names[index - 1] if index > 0 else None
            added.append(AddedColumn(column, defaults.get(name), after))
        log.info(
            "%s: columns added %s, dropped %s", entry.table, [a.column.name for a in added], entry.dropped
        )
        return Evolution(entry.table, new, tuple(added), tuple(entry.dropped))
