"""The first pass: chunk checksums on source and sink, computed in parallel tasks (on Spark, or
on threads of the driver while no Spark session runs).

Like a snapshot wave (``spark.snapshot.run_wave``) the work is an RDD job whose closure carries
the connection settings, so passwords never appear in plan options or logs. Each task opens one
source and one sink connection and checksums its chunks one after another, the sink query of a
chunk running in a thread while the source computes its own, so both databases work at once.
Every query is a plain ``SELECT``: nothing is locked on either side.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.splits import SnapshotSplit
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.connection import SourceConfig, connect, source_error
from sparkcdc.mysql.flavor import detect_flavor
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks.base import SinkConfig, writes_in_driver
from sparkcdc.spark.lazy_session import LazySession
from sparkcdc.verify.checksum import ChunkChecksum, open_sink_checker, source_checksum

__all__ = ["ChunkCheck", "VerifyContext", "check_chunks", "check_on_threads", "group_chunks", "run_checks"]


@dataclass(frozen=True)
class ChunkCheck:
    """One chunk's checksums on both sides, and the binlog position of the source's read."""

    split: SnapshotSplit
    source: ChunkChecksum
    sink: ChunkChecksum
    position: BinlogOffset

    @property
    def matches(self) -> bool:
        return self.source == self.sink


@dataclass(frozen=True)
class VerifyContext:
    """What a task needs, shipped once per job inside the task closure."""

    source: SourceConfig
    sink: SinkConfig
    schemas: Mapping[TableId, TableSchema]


def check_chunks(context: VerifyContext, splits: Sequence[SnapshotSplit]) -> Iterator[ChunkCheck]:
    """Checksum ``splits`` on the source and the sink (one connection to each)."""
    import pymysql

    conn = connect(context.source)
    sink = None
    try:
        flavor = detect_flavor(conn)
        sink = open_sink_checker(context.sink)
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="sparkcdc-verify-sink") as pool:
            for split in splits:
                schema = context.schemas[split.table]
                in_sink = pool.submit(sink.checksum, schema, split)
                try:
                    in_source, position = source_checksum(conn, flavor, schema, split)
                except pymysql.err.MySQLError as exc:
                    in_sink.exception()  # let the sink query finish before the connection closes
                    raise source_error(exc, context.source, f"checksumming {split.split_id}") from None
                yield ChunkCheck(split, in_source, in_sink.result(), position)
    finally:
        if sink is not None:
            sink.close()
        conn.close()


def check_on_threads(context: VerifyContext, groups: Sequence[Sequence[SnapshotSplit]]) -> list[ChunkCheck]:
    """The tasks of :func:`run_checks` on one thread each (a task's connections are its own)."""
    with ThreadPoolExecutor(max_workers=len(groups), thread_name_prefix="sparkcdc-verify") as pool:
        done = pool.map(lambda group: list(check_chunks(context, group)), groups)
        return [check for checks in done for check in checks]


def group_chunks(splits: Sequence[SnapshotSplit], groups: int) -> list[list[SnapshotSplit]]:
    """Deal ``splits`` round-robin into at most ``groups`` non-empty task lists."""
    count = max(1, min(groups, len(splits)))
    buckets: list[list[SnapshotSplit]] = [[] for _ in range(count)]
    for i, split in enumerate(splits):
        buckets[i % count].append(split)
    return [b for b in buckets if b]


def run_checks(
    spark: Any, context: VerifyContext, splits: Sequence[SnapshotSplit], tasks: int
) -> list[ChunkCheck]:
    """Checksum ``splits`` in at most ``tasks`` tasks, results in any order: as one Spark job when
    a session runs, else on threads of this process (a :class:`LazySession` not started yet stays
    so: the checksums are computed by the databases, and a JVM start would cost more than they)."""
    if not splits:
        return []
    if writes_in_driver(context.sink):  # Delta: the sink side runs in the driver (delta_checker.py)
        from sparkcdc.verify.delta_checker import run_delta_checks

        return run_delta_checks(spark, context, splits, tasks)
    groups = group_chunks(splits, tasks)
    if isinstance(spark, LazySession) and not spark.started:
        return check_on_threads(context, groups)

    def partition(items: Iterator[list[SnapshotSplit]]) -> Iterator[ChunkCheck]:
        for group in items:
            yield from check_chunks(context, group)

    rdd = spark.sparkContext.parallelize(groups, len(groups))
    checks: list[ChunkCheck] = rdd.mapPartitions(partition).collect()
    return checks
