"""Schema changes of captured tables during the binlog phase.

A DDL statement is judged where it is read — in the reader thread, before the next event is
decoded — because rows after it must be decoded with the table's new definition:

* ADD, DROP and RENAME COLUMN, and MODIFY/CHANGE that widen: the table's schema is reloaded
  from the source and handed to the reader; the consumer, at the same place in the stream,
  commits what came before, changes the target (schema_apply.py: JDBC sinks/jdbc/evolution.py,
  Delta sinks/delta/tables.py and follow.py, a ``schema`` record in the changelog) and writes
  later rows with the new columns. What is followed, and when a redefinition stops the table
  instead, is column_changes.py's to judge.
* TRUNCATE (no row events): the consumer commits what came before and empties the target in
  the same order (``EvolvingSink.truncate_table``); the schema stays.
* the atomic swap of an online schema-change tool (gh-ost, pt-online-schema-change): followed as
  the ALTER it amounts to (online_schema_change.py).
* a table renamed or dropped (table_moves.py): the reader decodes it under its new name with the
  same definition, or not any more; the consumer renames or drops the target and moves or
  removes the table's checkpoint entries.
* anything else that changes rows' shape or identity (narrowing or other type change, key
  change, partition drop, a rename table_moves.py refuses): only that table stops. Its state becomes
  ``FAILED`` with an error naming the table and the statement, its events are dropped from then
  on, the other tables keep streaming.
* statements that do not touch captured tables, or touch them harmlessly (indexes, options,
  defaults), are ignored.

Where the definition was loaded matters (column_changes.py): the tracker keeps, per table, a
binlog position the definition is known to have been loaded at or before (``loaded_at``: for the
schemas the stream starts with, the source's position when the binlog phase starts; after a
statement followed from a definition known to precede it, the statement's own offset, since the
definition kept is the one as of it); a statement past it is known to come after the definition.
A resumed stream starts from the definitions and positions its checkpoint recorded
(schema_history.py), so a replay across several statements judges each against the definition
right before it, and decodes the rows between them with the definition of their time.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from dataclasses import dataclass, field, replace
from typing import Any

from sparkcdc.core.checkpoint import Checkpoint, Phase, TableState
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.tables import TableId
from sparkcdc.engine.column_changes import Evolution, evolve
from sparkcdc.engine.column_order import in_statement_order
from sparkcdc.engine.online_schema_change import follow_swap, swaps
from sparkcdc.engine.table_moves import TableMove, judge_moves
from sparkcdc.mysql.binlog.reader import DdlStatement
from sparkcdc.mysql.binlog.stream import StreamingChangeReader
from sparkcdc.mysql.connection import SourceConfig, connect
from sparkcdc.mysql.ddl import DdlKind, TableDdl, parse_ddl
from sparkcdc.mysql.errors import SourceError
from sparkcdc.mysql.queries import current_offset
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks.base import EvolvingSink

__all__ = [
    "Evolution",
    "EvolvingSink",
    "SchemaChange",
    "SchemaTracker",
    "TableMove",
    "affected",
    "fail_vanished_tables",
    "failure_message",
    "loaded_positions",
]

log = logging.getLogger(__name__)

_RENAMED_WAY_OUT = (
    "Capture it under its new name: snapshot it again there (spec.resnapshotNonce with resnapshotTables "
    "naming the new name, which spec.source.tables must capture), or remove it from spec.source.tables"
)


@dataclass(frozen=True)
class SchemaChange:
    """A DDL statement that concerns captured tables, judged; a transaction boundary."""

    offset: BinlogOffset
    statement: str
    evolutions: tuple[Evolution, ...] = ()
    failures: Mapping[TableId, str] = field(default_factory=dict)
    truncated: tuple[TableId, ...] = ()
    # The tracker's ``loaded_at`` of the evolved tables once judged: what the checkpoint past
    # the statement records with their definitions (schema_history.py).
    loaded_at: Mapping[TableId, BinlogOffset] = field(default_factory=dict)
    # Tables renamed or dropped, in the statement's order (table_moves.py).
    moves: tuple[TableMove, ...] = ()


def failure_message(
    table: TableId, statement: str, offset: BinlogOffset, reason: str, way_out: str | None = None
) -> str:
    """``way_out``: what to do, when not the usual (adapt the target, resnapshot the table)."""
    text = " ".join(statement.split())
    text = text if len(text) <= 300 else text[:297] + "..."
    way_out = way_out or (
        f"Resnapshot {table} (spec.resnapshotNonce with resnapshotTables) after adapting the target, or "
        "remove it from spec.source.tables"
    )
    return (
        f"table {table} stopped streaming at binlog {offset}: the statement {text!r} is not supported "
        f"({reason}); the other tables keep streaming. {way_out}"
    )


def fail_vanished_tables(
    checkpoint: Checkpoint, available: Iterable[TableId], followable: Callable[[TableId], bool] | None = None
) -> Checkpoint:
    """Mark captured tables that are gone from the source FAILED (the same checkpoint object when
    none is). Their events between the checkpoint and the DDL that removed them cannot be decoded
    any more: the table's definition is gone with it — unless the checkpoint recorded it (a table
    streamed past its snapshot, schema_history.py) and ``followable`` says the stream may follow
    the statement (captured by a pattern: a name given exactly would stop discovery, which wants
    it to exist). Such a table is kept: the stream decodes it with its recorded definition up to
    the statement that renamed or dropped it, and follows that (table_moves.py) — a pipeline
    killed between the statement and the checkpoint past it, or stopped while it ran."""
    present = set(available)
    known = set(checkpoint.tables) | set(checkpoint.plans)
    failed = {t for t, s in checkpoint.tables.items() if s.phase is Phase.FAILED}
    recorded = set(checkpoint.definitions) if checkpoint.binlog_offset is not None else set()
    kept = {t for t in recorded if followable is not None and followable(t)}
    gone = sorted(known - failed - present - kept)
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
        loaded_at: MutableMapping[TableId, BinlogOffset] | None = None,
    ) -> None:
        """``loaded_at``: per table, a position its definition was loaded at or before; kept up
        to date here (the caller's mapping, so it outlives this tracker)."""
        self._source = source
        self._schemas = dict(schemas)
        self._overrides = dict(chunk_key_overrides or {})
        self._loaded_at: MutableMapping[TableId, BinlogOffset] = {} if loaded_at is None else loaded_at

    def judge(self, ddl: DdlStatement, reader: StreamingChangeReader) -> SchemaChange | None:
        entries = affected(ddl, self._schemas)
        if not entries:
            return None
        evolutions: list[Evolution] = []
        failures: dict[TableId, str] = {}
        truncated = tuple(e.table for e in entries if e.kind is DdlKind.TRUNCATE)
        # An online schema-change tool's swap renames the table but is an ALTER of it.
        swapped = swaps(ddl.query, ddl.schema, self._schemas)
        conn: Any = None
        try:
            for entry in entries:
                if entry.table in swapped:
                    conn = conn or connect(self._source)
                    try:
                        evolutions.append(self._swap(conn, entry.table, swapped[entry.table], ddl.offset))
                    except SourceError as err:
                        failures[entry.table] = failure_message(entry.table, ddl.query, ddl.offset, str(err))
                    continue
                if entry.kind is DdlKind.FAIL:
                    failures[entry.table] = failure_message(entry.table, ddl.query, ddl.offset, entry.reason)
                    continue
                if entry.kind is not DdlKind.EVOLVE:
                    continue
                if conn is None:
                    conn = connect(self._source)
                try:
                    evolutions.append(self._evolve(conn, entry, ddl.offset))
                except SourceError as err:
                    failures[entry.table] = failure_message(entry.table, ddl.query, ddl.offset, str(err))
            moves, refused = judge_moves(entries, self._schemas, ddl.query, ddl.schema, swapped)
        finally:
            if conn is not None:
                conn.close()
        for table, reason in refused.items():
            failures[table] = failure_message(table, ddl.query, ddl.offset, reason, _RENAMED_WAY_OUT)
        for move in moves:
            self._move(move, reader)
        for evolution in evolutions:
            self._schemas[evolution.table] = evolution.schema
            reader.set_schema(evolution.table, evolution.schema)
        for table in failures:
            self._schemas.pop(table, None)
            reader.set_schema(table, None)
        truncated = tuple(t for t in truncated if t not in failures)
        at = {e.table: self._loaded_at[e.table] for e in evolutions if e.table in self._loaded_at}
        return SchemaChange(ddl.offset, ddl.query, tuple(evolutions), failures, truncated, at, tuple(moves))

    def _move(self, move: TableMove, reader: StreamingChangeReader) -> None:
        """Decode a renamed table under its new name with the same definition (known from the
        same position on); a dropped one not any more."""
        self._schemas.pop(move.table, None)
        reader.set_schema(move.table, None)
        loaded = self._loaded_at.pop(move.table, None)
        if move.new is None or move.schema is None:
            log.info("%s: %s", move.table, move.describe())
            return
        self._schemas[move.new] = move.schema
        reader.set_schema(move.new, move.schema)
        if loaded is not None:
            self._loaded_at[move.new] = loaded
        log.info("%s: %s", move.table, move.describe())

    def track(
        self, table: TableId, schema: TableSchema | None, loaded_at: BinlogOffset | None = None
    ) -> None:
        """Judge ``table``'s DDL from now on with ``schema`` (loaded at ``loaded_at`` or later);
        None: forget it (no longer captured)."""
        if schema is None:
            self._schemas.pop(table, None)
            self._loaded_at.pop(table, None)
            return
        self._schemas[table] = schema
        if loaded_at is not None:
            self._loaded_at[table] = loaded_at

    def _swap(self, conn: Any, table: TableId, old: TableId, at: BinlogOffset) -> Evolution:
        """An online schema change's swap (online_schema_change.py); the definition kept is the
        one as of it, built on the one before it, so later statements come after it."""
        loaded = self._loaded_at.get(table)
        known = loaded is not None and at > loaded
        override = self._overrides.get(str(table))
        evolution = follow_swap(conn, table, old, self._schemas[table], override, known)
        self._loaded_at[table] = at
        log.info("%s: online schema change swapped in: %s", table, evolution.column_summary())
        return evolution

    def _evolve(self, conn: Any, entry: TableDdl, at: BinlogOffset) -> Evolution:
        loaded = self._loaded_at.get(entry.table)
        known = loaded is not None and at > loaded
        old = self._schemas[entry.table]
        evolution = evolve(conn, entry, old, self._overrides.get(str(entry.table)), loaded_before=known)
        # Row images after it are decoded by position where the binlog names no columns.
        evolution = in_statement_order(entry, old, evolution)
        if known:
            # The definition kept is the one as of the statement (column_changes.py), built on one
            # known to precede it: any later statement of the table comes after it.
            self._loaded_at[entry.table] = at
        log.info("%s: %s", entry.table, evolution.column_summary())
        return evolution


def loaded_positions(source: SourceConfig, tables: Iterable[TableId]) -> dict[TableId, BinlogOffset]:
    """``SchemaTracker``'s ``loaded_at`` for definitions loaded before now: the source's position."""
    tables = list(tables)
    if not tables:
        return {}
    conn = connect(source)
    try:
        now = current_offset(conn)
    finally:
        conn.close()
    return dict.fromkeys(tables, now)
