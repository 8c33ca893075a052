"""Schema history: each streamed table's definition in force at the checkpoint's offset.

The stream decodes a table's events with the definition of their time. Started from the
source's current definition, a stream resumed from before several DDL statements would decode
the early events with a later one — wrong without ``binlog_row_metadata=FULL`` (no names,
signedness, charsets), and even with it a redefinition could no longer be judged. So every
checkpoint of the binlog phase carries, per streamed table, the definition the stream decodes
with at its offset and the position it is known to be in force from (schema_changes.py's
``loaded_at``); a resume starts from them and each statement met again moves them forward as
live. Bounded: only the definition at the checkpoint, since a resume never goes before it.

A record is used only for the snapshot it was written under (a resnapshot makes it stale) and
only for a table the source still has; a checkpoint without records (version 1, or written
before the binlog phase) starts from the source's definitions, as before.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping
from dataclasses import replace

from sparkcdc.core.checkpoint import Checkpoint, Phase
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.routing import CaptureRules
from sparkcdc.core.tables import TableId
from sparkcdc.engine.schema_changes import SchemaChange, TableMove, loaded_positions
from sparkcdc.mysql.connection import SourceConfig
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.mysql.schema_codec import RecordedDefinition, decode_definition, encode_definition

__all__ = ["SchemaHistory"]


def _same_position(a: BinlogOffset | None, b: BinlogOffset | None) -> bool:
    return (a is None) == (b is None) and (a is None or b is None or a.sort_key() == b.sort_key())


def _vanished(schemas: Mapping[TableId, TableSchema], checkpoint: Checkpoint) -> dict[TableId, CaptureRules]:
    """Recorded tables not among ``schemas`` that the stream still has to follow: gone from the
    source but kept by ``fail_vanished_tables`` (captured by a pattern, not failed), with the
    capture rules their target comes from (engine/discovery.py sets them)."""
    rules = next((s.target.follow for s in schemas.values() if s.target and s.target.follow), None)
    if rules is None or checkpoint.binlog_offset is None:
        return {}
    return {
        t: rules
        for t in checkpoint.definitions
        if t not in schemas
        and t in checkpoint.tables
        and checkpoint.tables[t].phase is Phase.BINLOG
        and rules.captures(t)
        and not rules.names(t)
    }


class SchemaHistory:
    """The streamer's definitions and their ``loaded_at`` as of what it committed."""

    def __init__(self) -> None:
        self._schemas: dict[TableId, TableSchema] = {}
        self._at: dict[TableId, BinlogOffset] = {}
        self._encoded: dict[TableId, tuple[object, ...]] = {}

    def resume(
        self, source: SourceConfig, schemas: MutableMapping[TableId, TableSchema], checkpoint: Checkpoint
    ) -> dict[TableId, BinlogOffset]:
        """Put the recorded definitions into ``schemas`` (the source's current ones, targets kept)
        and return the tracker's ``loaded_at`` for all of them. A recorded table the source no
        longer has (renamed or dropped after the checkpoint) is streamed with its recorded
        definition up to the statement, which is followed then (engine/table_moves.py)."""
        recorded: dict[TableId, RecordedDefinition] = {}
        vanished = _vanished(schemas, checkpoint)
        for table, doc in checkpoint.definitions.items():
            if table not in schemas and table not in vanished:
                continue
            record = decode_definition(table, doc)
            if _same_position(record.snapshot, checkpoint.max_watermark(table)):
                recorded[table] = record
        for table, record in recorded.items():
            target = schemas[table].target if table in schemas else vanished[table].target(table)
            schemas[table] = replace(record.schema, target=target)
        loaded_at = loaded_positions(source, [t for t in schemas if t not in recorded])
        loaded_at.update({t: r.loaded_at for t, r in recorded.items()})
        self._schemas = dict(schemas)
        self._at = dict(loaded_at)
        return loaded_at

    def followed(self, change: SchemaChange, schemas: MutableMapping[TableId, TableSchema]) -> None:
        """After ``change`` was applied: the definitions the sink took (schema_apply.py sets them)."""
        for evolution in change.evolutions:
            at = change.loaded_at.get(evolution.table, self._at.get(evolution.table))
            # Not recorded without a position it is known from: a resume reloads it instead.
            if schemas.get(evolution.table) is evolution.schema and at is not None:
                self._schemas[evolution.table] = evolution.schema
                self._at[evolution.table] = at
        for table in change.failures:
            self._schemas.pop(table, None)

    def moved(self, moves: Iterable[TableMove]) -> None:
        """Renamed tables keep their definition and position under the new name; dropped ones are
        forgotten (engine/table_moves.py)."""
        for move in moves:
            schema = self._schemas.pop(move.table, None)
            at = self._at.pop(move.table, None)
            self._encoded.pop(move.table, None)
            if move.new is None or move.schema is None or schema is None or at is None:
                continue
            self._schemas[move.new] = replace(schema, table=move.new, target=move.schema.target)
            self._at[move.new] = at

    def onto(self, checkpoint: Checkpoint) -> Checkpoint:
        """``checkpoint`` with the definitions of its live tables (failed ones left out)."""
        definitions = {}
        for table, schema in self._schemas.items():
            state = checkpoint.tables.get(table)
            if state is not None and state.phase is Phase.FAILED:
                continue
            snapshot = checkpoint.max_watermark(table)
            key = (schema, self._at[table], snapshot)
            cached = self._encoded.get(table)
            if cached is None or cached[:3] != key:
                doc = encode_definition(RecordedDefinition(replace(schema, target=None), *key[1:]))
                cached = (*key, doc)
                self._encoded[table] = cached
            definitions[table] = cached[3]
        return replace(checkpoint, definitions=definitions)
