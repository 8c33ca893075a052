"""Snapshot waves for sinks that write with Spark from the driver (``FrameSink``: Delta Lake).

Such a sink cannot be opened in a task, so the split readers and the writer are split apart
without leaving the JVM: for each table of a wave, one Spark job whose input has one row per
task (``spark.range`` with one partition per task) runs ``mapInArrow`` — every task reads its
splits between watermarks exactly as ``run_task`` does and yields the merged rows as Arrow
record batches in the sink's Spark types — and the sink's write of that DataFrame (a Delta
``replaceWhere`` or append) consumes it and commits once. The rows never pass through the
driver's Python process.

Each task reports its split summaries (watermarks, row counts) through an accumulator. Spark
merges the accumulator updates of successful task attempts only, and the write evaluates the
DataFrame once, so the summaries describe exactly the rows the commit holds. A wave's splits
are recorded as finished only after ``write_frame`` returned, i.e. after the commit (architecture §3
rule 6).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from sparkcdc.core.splits import SnapshotSplit
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.split_reader import read_split
from sparkcdc.sinks.base import FrameSink, SinkError
from sparkcdc.sinks.spark_types import spark_struct, to_spark_arrow
from sparkcdc.sinks.targets import sink_rows, sink_schema

__all__ = ["run_wave_in_driver"]


def _list_param() -> Any:
    from pyspark.accumulators import AccumulatorParam

    class ListParam(AccumulatorParam):  # type: ignore[type-arg]
        def zero(self, value: list[Any]) -> list[Any]:
            return []

        def addInPlace(self, value1: list[Any], value2: list[Any]) -> list[Any]:  # noqa: N802
            value1.extend(value2)
            return value1

    return ListParam()


def _table_tasks(tasks: Sequence[Any]) -> dict[TableId, list[Any]]:
    """Each table's part of the wave's tasks, keeping each task's server id."""
    from sparkcdc.spark.snapshot import SnapshotTask

    out: dict[TableId, list[SnapshotTask]] = {}
    for task in tasks:
        tables = dict.fromkeys(s.table for s in task.splits)
        for table in tables:
            splits = tuple(s for s in task.splits if s.table == table)
            out.setdefault(table, []).append(SnapshotTask(task.server_id, splits))
    return out


def run_wave_in_driver(spark: Any, context: Any, tasks: Sequence[Any]) -> list[Any]:
    """Run one wave for a ``FrameSink``: per table, one read-and-write job and one commit."""
    from sparkcdc.spark.snapshot import SplitSummary

    sink: FrameSink = context.sink.open()
    summaries: list[SplitSummary] = []
    try:
        for table, table_tasks in _table_tasks(tasks).items():
            schema = context.schemas[table]
            splits = [s for t in table_tasks for s in t.splits]
            found = _write_table(spark, sink, context, schema, table_tasks, splits)
            summaries.extend(found)
    finally:
        sink.close()
    return summaries


def _write_table(
    spark: Any, sink: FrameSink, context: Any, schema: Any, tasks: list[Any], splits: list[SnapshotSplit]
) -> list[Any]:
    from sparkcdc.spark.snapshot import SplitSummary

    session = sink.session
    accumulator = spark.sparkContext.accumulator([], _list_param())
    source, fetch_size = context.source, context.fetch_size
    target = sink_schema(schema)
    struct = spark_struct(target)

    def read(batches: Iterator[Any]) -> Iterator[Any]:
        for batch in batches:
            for index in batch.column(0).to_pylist():
                task = tasks[index]
                for split in task.splits:
                    result = read_split(source, schema, split, task.server_id, fetch_size)
                    rows = to_spark_arrow(target, sink_rows(schema, result.data, result.high))
                    summary = SplitSummary(
                        split, result.low, result.high, result.data.num_rows, result.backfill_events
                    )
                    accumulator.add([summary])
                    yield from rows.to_batches()

    frame = session.range(0, len(tasks), 1, len(tasks)).mapInArrow(read, struct)
    sink.write_frame(target, splits, frame)
    got: list[SplitSummary] = list(accumulator.value)
    by_id = {s.split.split_id: s for s in got}
    if len(by_id) != len(got) or set(by_id) != {s.split_id for s in splits}:
        seen = sorted(s.split.split_id for s in got)
        raise SinkError(
            f"the snapshot of {schema.table} reported splits {seen} for a wave of "
            f"{sorted(s.split_id for s in splits)}; the wave is not recorded and will be read again"
        )
    return [by_id[s.split_id] for s in splits]
