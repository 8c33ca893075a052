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
"""

from __future__ import annotations

from collections.abc import Collection, MutableMapping

from sparkcdc.core.event_filter import BinlogSplitFilter
from sparkcdc.core.tables import TableId
from sparkcdc.engine.column_changes import Evolution
from sparkcdc.engine.listener import PipelineListener
from sparkcdc.engine.schema_changes import SchemaChange, failure_message
from sparkcdc.engine.table_failures import StreamFailures
from sparkcdc.mysql.columns import Column
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks.base import ColumnChanges, EvolvingSink, Sink, TableSchemaError
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
) -> None:
    """Follow ``change`` in ``sink``; ``decoded``: tables with rows decoded in this stream;
    ``split_filter`` knows which tables' snapshot splits still filter the stream."""
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
