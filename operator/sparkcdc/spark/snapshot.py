"""Snapshot waves on Spark: each task reads its splits between watermarks and commits them.

A task is Flink's split reader and the sink writer in one: for every split it records the low
watermark, reads the chunk, records the high watermark, merges the binlog in between, and
writes the split to the sink atomically. It returns one small summary per split; the driver
turns the summaries into finished-split infos and checkpoints them only after the sink holds
the rows (architecture §3 rules 2, 3, 6).

Tasks run as an RDD job rather than a DataFrame source so that connection settings (which
hold passwords) travel inside the pickled task closure, never in plan options or logs.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.splits import FinishedSplitInfo, SnapshotSplit
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.connection import SourceConfig
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.mysql.split_reader import SplitReader, SplitReadResult
from sparkcdc.sinks.base import SinkConfig, TableDataError, writes_in_driver
from sparkcdc.sinks.targets import sink_rows, sink_schema
from sparkcdc.spark.frame_wave import run_wave_in_driver


@dataclass(frozen=True)
class SnapshotTask:
    """Splits read one after another by one Spark task, with its own binlog server id."""

    server_id: int
    splits: tuple[SnapshotSplit, ...]


@dataclass(frozen=True)
class SplitSummary:
    split: SnapshotSplit
    low: BinlogOffset
    high: BinlogOffset
    rows: int
    backfill_events: int
    # Set when the sink refused the split's rows (sinks.base.TableDataError): the split is not
    # committed and its table stops (engine/table_failures.py).
    failure: str = ""

    def finished_info(self) -> FinishedSplitInfo:
        return FinishedSplitInfo(self.split, self.high, self.rows)


@dataclass(frozen=True)
class WaveContext:
    """Everything a task needs, shipped once per job inside the task closure."""

    source: SourceConfig
    sink: SinkConfig
    schemas: Mapping[TableId, TableSchema]
    fetch_size: int


def run_task(context: WaveContext, task: SnapshotTask) -> Iterator[SplitSummary]:
    """Read and commit the task's splits in order, reading the next split while the current one
    is written (one read ahead: at most two splits in memory). Both the ConnectorX read and the
    Arrow kernels of the sinks release the GIL, so the two overlap on a multi-core executor.
    The reads share one source connection (``SplitReader``), used by the read-ahead thread only."""
    sink = context.sink.open()
    reader = SplitReader(context.source, task.server_id, context.fetch_size)
    read_ahead = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sparkcdc-read-ahead")

    def read(split: SnapshotSplit) -> SplitReadResult:
        return reader.read(context.schemas[split.table], split)

    pending: Future[SplitReadResult] | None = None
    failed: set[TableId] = set()  # tables whose rows the sink refused: their later splits are not read
    try:
        ahead = task.splits[0] if task.splits else None
        pending = read_ahead.submit(read, ahead) if ahead is not None else None
        for i, split in enumerate(task.splits):
            if split.table in failed:
                continue
            if split is not ahead:  # the split read ahead was of a table that failed since
                pending = read_ahead.submit(read, split)
            assert pending is not None
            result = pending.result()
            ahead = next((s for s in task.splits[i + 1 :] if s.table not in failed), None)
            pending = read_ahead.submit(read, ahead) if ahead is not None else None
            schema = context.schemas[split.table]
            rows = sink_rows(schema, result.data, result.high)
            try:
                sink.write_split(sink_schema(schema), split, rows, result.high)
            except TableDataError as err:
                failed.add(split.table)
                yield SplitSummary(split, result.low, result.high, 0, 0, failure=str(err))
                continue
            yield SplitSummary(split, result.low, result.high, result.data.num_rows, result.backfill_events)
    finally:
        # A read still running finishes on its own (its result is dropped; the split is read
        # again by whichever task gets it next); the connection closes after it, on its thread.
        if pending is not None:
            pending.cancel()
        read_ahead.submit(reader.close)
        read_ahead.shutdown(wait=False)
        sink.close()


def plan_tasks(
    splits: Sequence[SnapshotSplit], server_ids: Sequence[int], splits_per_task: int
) -> list[SnapshotTask]:
    """Cut a wave's splits into at most ``len(server_ids)`` contiguous runs, one per task.

    Contiguous runs keep concurrent tasks away from each other's key ranges: two tasks writing
    neighbouring splits at once lock each other's boundary gaps in the sink and deadlock. Each
    task gets a distinct server id because the source drops a replica connection when another
    one registers with the same id.
    """
    task_count = max(1, min(len(server_ids), -(-len(splits) // max(1, splits_per_task))))
    size, extra = divmod(len(splits), task_count)
    tasks, start = [], 0
    for i in range(task_count):
        end = start + size + (1 if i < extra else 0)
        if end > start:
            tasks.append(SnapshotTask(server_ids[i], tuple(splits[start:end])))
        start = end
    return tasks


def run_wave_in_threads(
    context: WaveContext, tasks: Sequence[SnapshotTask], threads: int
) -> list[SplitSummary]:
    """Run one wave in this process, each task exactly as a Spark task runs it (its own sink,
    source connection and server id), at most ``threads`` at once: the driver's waves before
    Spark is up."""

    def run(task: SnapshotTask) -> list[SplitSummary]:
        return list(run_task(context, task))

    workers = max(1, min(threads, len(tasks)))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="sparkcdc-task") as pool:
        return [summary for summaries in pool.map(run, tasks) for summary in summaries]


def run_wave(spark: Any, context: WaveContext, tasks: Sequence[SnapshotTask]) -> list[SplitSummary]:
    """Run one wave as a Spark job: one partition per task, summaries collected to the driver."""
    if writes_in_driver(context.sink):  # Delta: tasks read, the driver's Spark writes (frame_wave.py)
        return run_wave_in_driver(spark, context, tasks)

    def partition(items: Iterator[SnapshotTask]) -> Iterator[SplitSummary]:
        for task in items:
            yield from run_task(context, task)

    rdd = spark.sparkContext.parallelize(list(tasks), len(tasks))
    summaries: list[SplitSummary] = rdd.mapPartitions(partition).collect()
    return summaries
