"""A judged schema change (schema_changes.py) applied at its place in the stream.

The consumer calls this after committing every row before the statement and before any row
after it, then checkpoints past the statement (engine/streaming.py). A crash in between repeats
the statement on resume: every sink step is skipped when the target already shows it
(``ColumnChanges``), and a truncation repeated is exact because the rows around it are
re-applied from the binlog too (sinks/jdbc/evolution.py, sinks/delta/follow.py).

The refusals below happen here rather than in the tracker, because only the consumer knows them:

* the sink cannot follow the change for one table (``TableSchemaError``, raised before the
  target was changed): that table stops;
* a rename met with the table's later definition (``Evolution.decoded_late``) after rows of the
  table were decoded in this stream: those rows lacked the renamed columns, so the table stops;
* a TRUNCATE of a table whose snapshot splits the stream has not all passed: splits read after
  the statement already hold the rows written after it, while the binlog events before their
  high watermarks are filtered out, so emptying the whole target would lose rows. The table
  stops (resnapshot it). So does a TRUNCATE into a target that keeps deleted rows
  (``deleteMode: soft``): no row images come to mark them with.
* a table rename (engine/table_moves.py) inside the snapshot handoff, for the same reason: the
  rows of its splits were read under the old name before the rename, but the events after it up
  to their high watermarks would be filtered out under the new name. And a rename whose target the
  sink cannot rename (the new name's target holds rows already): the table stops under its new
  name.

A rename onto a name the stream already captures on its own (discovered at a restart before the
stream met the rename) takes that table over when it was never snapshotted (a restart that streams
without snapshots: its target is the empty one prepared at the start), and is followed as a drop
of the old name when it was (its own snapshot already holds the rows).
"""

from __future__ import annotations

from collections.abc import Collection, MutableMapping
from dataclasses import replace

from sparkcdc.core.event_filter import BinlogSplitFilter
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.tables import TableId
from sparkcdc.engine.column_changes import Evolution
from sparkcdc.engine.listener import PipelineListener
from sparkcdc.engine.schema_changes import SchemaChange, TableMove, failure_message
from sparkcdc.engine.table_failures import StreamFailures
from sparkcdc.mysql.columns import Column
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks.base import ColumnChanges, EvolvingSink, Sink, TableFollowingSink, TableSchemaError
from sparkcdc.sinks.targets import sink_added, sink_schema

__all__ = ["apply_schema_change"]


def _target_altered(evolution: Evolution, target: TableSchema) -> tuple[Column, ...]:
    """The widened columns as the target stores them: none it leaves out or masks."""
    rules = evolution.schema.target.columns if evolution.schema.target is not None else None
    stored = {c.name: c for c in target.columns}
    kept = []
    for column in evolution.altered:
        if column.name in stored and (rules is None or rules.mask_of(column.name) is None):
            kept.append(stored[column.name])
    return tuple(kept)


def apply_schema_change(
    change: SchemaChange,
    sink: Sink,
    schemas: MutableMapping[TableId, TableSchema],
    failures: StreamFailures,
    listener: PipelineListener,
    decoded: Collection[TableId],
    split_filter: BinlogSplitFilter,
) -> list[TableMove]:
    """Follow ``change`` in ``sink``; ``decoded``: tables with rows decoded in this stream;
    ``split_filter`` knows which tables' snapshot splits still filter the stream. Returns the
    table renames and drops followed, whose checkpoint entries the caller moves or removes."""
    at, statement = change.offset, change.statement

    def in_handoff(table: TableId) -> bool:
        watermark = split_filter.max_watermark(table)
        return watermark is not None and watermark > at

    def stop(table: TableId, reason: str) -> None:
        failures.fail(table, failure_message(table, statement, at, reason))

    for evolution in change.evolutions:
        table = evolution.table
        if table in failures:
            continue
        if evolution.decoded_late and table in decoded:
            stop(
                table,
                "the stream resumed from before this rename with the table's later definition, and its "
                "rows decoded since then lack the renamed columns",
            )
            continue
        if isinstance(sink, EvolvingSink):
            target = sink_schema(evolution.schema)
            changes = ColumnChanges(
                sink_added(evolution.schema, evolution.added),
                evolution.dropped,
                evolution.renamed,
                _target_altered(evolution, target),
                statement,
                at,
            )
            try:
                done = sink.evolve_table(target, changes)
            except TableSchemaError as err:
                stop(table, str(err))
                continue
            for step in done:
                listener.message(f"{table}: target altered: {step}")
        schemas[table] = evolution.schema
        listener.message(f"{table}: schema change at {at} followed ({evolution.column_summary()})")
    for table in change.truncated:
        if table in failures or table not in schemas:
            continue
        if in_handoff(table):
            stop(
                table, "snapshot splits of it were read after it: the stream cannot empty the target in order"
            )
            continue
        kept = schemas[table].target
        if kept is not None and kept.soft_delete:
            stop(
                table, "its target keeps deleted rows (deleteMode: soft), and TRUNCATE writes no rows to mark"
            )
            continue
        if isinstance(sink, EvolvingSink):
            for step in sink.truncate_table(sink_schema(schemas[table]), at, statement):
                listener.message(f"{table}: {step}")
        listener.message(f"{table}: TRUNCATE at {at} followed: the target holds the rows written after it")
    for table, error in change.failures.items():
        failures.fail(table, error)
    follow = change, sink, schemas, failures, listener, split_filter
    return [move for move in change.moves if _follow_move(move, *follow)]


def _follow_move(
    move: TableMove,
    change: SchemaChange,
    sink: Sink,
    schemas: MutableMapping[TableId, TableSchema],
    failures: StreamFailures,
    listener: PipelineListener,
    split_filter: BinlogSplitFilter,
) -> bool:
    """Rename or drop one table's target and state; False when the table stops instead (keeping
    its entries, failed) or was not streamed here."""
    at, statement, table = change.offset, change.statement, move.table
    if table in failures:
        _move_failure(failures, move)  # a stopped table stays stopped under its new name
        return True
    old = schemas.get(table)
    if old is None:
        return False
    if move.new is not None:
        watermark = split_filter.max_watermark(table)
        if watermark is not None and watermark > at:
            reason = "snapshot splits of it were read after it: the stream cannot rename it in order"
            failures.fail(table, failure_message(table, statement, at, reason))
            return False
        if move.new in schemas and split_filter.max_watermark(move.new) is not None:
            move = replace(move, new=None, schema=None, reason=f"{move.new} is captured on its own")
    if move.new is None or move.schema is None:
        if isinstance(sink, TableFollowingSink):
            for step in sink.drop_table(sink_schema(old), move.drop_target, at, statement):
                listener.message(f"{table}: {step}")
        listener.message(f"{table}: {statement!r} at {at} followed: {move.describe()}")
        rules = old.target.follow if old.target is not None else None
        if rules is not None and rules.names(table):
            # Named exactly, a start would refuse it as missing unless it is marked failed, which
            # also keeps its entries (a table of that name created later waits for a resnapshot).
            failures.fail(table, _gone_message(table, move, statement, at))
            return False
        del schemas[table]
        return True
    new = move.schema
    renames = old.sink_name != new.sink_name
    if renames and isinstance(sink, EvolvingSink) and not isinstance(sink, TableFollowingSink):
        # Its rows would go to a new, empty target.
        reason = f"this sink cannot rename the target {old.sink_name} to {new.sink_name}"
        failures.fail(table, failure_message(table, statement, at, reason))
        return False
    if isinstance(sink, TableFollowingSink):
        try:
            for step in sink.rename_table(sink_schema(old), sink_schema(new), at, statement):
                listener.message(f"{table}: {step}")
        except TableSchemaError as err:
            way_out = f"Resnapshot {new.table} (resnapshotTables) once the sink holds no table in its way"
            del schemas[table]
            schemas[new.table] = new
            failures.fail(new.table, failure_message(table, statement, at, str(err), way_out))
            return True  # its entries move to the new name, failed there
    del schemas[table]
    schemas[new.table] = new
    listener.message(f"{table}: {statement!r} at {at} followed: {move.describe()}")
    return True


def _gone_message(table: TableId, move: TableMove, statement: str, at: BinlogOffset) -> str:
    text = " ".join(statement.split())[:300]
    target = "dropped" if move.drop_target else "kept"
    return (
        f"table {table} stopped streaming at binlog {at}: the statement {text!r} removed it ({move.reason}); "
        f"its target was {target}. spec.source.tables names it exactly: remove it there, or resnapshot it "
        f"(resnapshotTables: [{table}]) once a table of that name exists again"
    )


def _move_failure(failures: StreamFailures, move: TableMove) -> None:
    state = failures.states.pop(move.table, None)
    if state is not None and move.new is not None:
        failures.states[move.new] = state
