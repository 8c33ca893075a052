"""Parallel catch-up: a large binlog backlog decoded by Spark tasks, then the live reader.

When the stream starts more than ``binlog.parallelCatchupThresholdBytes`` behind the source,
``SHOW BINLOG EVENTS`` lists the backlog's transaction boundaries (no row decoding), the
stretch up to the first DDL is cut into ranges at commits (core/catchup.py), and each range is
decoded by a Spark task under its own server id, filtered exactly as the single reader filters
(the split filter of the snapshot handoff travels with the task; per event it decides the same
thing whatever events came before it in the stream) and reduced to the last image per key.

Ranges run in rounds of one range per task id; while the driver absorbs a round in binlog order
and applies it to the sink, the next round decodes. The offset is checkpointed after each
round's sink commits, at the round's last commit boundary (architecture §3 rule 6): a crash replays
from the previous round's end, which converges because rounds apply net last images (rule 5).
Then the live reader takes over at the stretch's end; a DDL there is its to handle.

Catch-up serves the JDBC sinks, which apply net effects. The changelog and console sinks show every
change, so they keep the single reader; so does Delta for now (its MERGE of a whole round is not
tested against the single reader yet).
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, MutableMapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from sparkcdc.api.spec import CdcPipelineSpec
from sparkcdc.core.catchup import (
    CatchupRange,
    absorb,
    backlog_bytes,
    cut_ranges,
    stretch_end,
    table_changes,
)
from sparkcdc.core.checkpoint import Checkpoint
from sparkcdc.core.event_filter import BinlogSplitFilter
from sparkcdc.core.merge import BackfillChanges
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.tables import TableId
from sparkcdc.engine.listener import BatchCommit, PipelineListener, net_counts
from sparkcdc.engine.table_failures import StreamFailures, decode_failure_message
from sparkcdc.mysql.binlog.native import decoder_path, native_eligible
from sparkcdc.mysql.binlog.ranges import list_boundaries
from sparkcdc.mysql.connection import SourceConfig, connect
from sparkcdc.mysql.flavor import detect_flavor
from sparkcdc.mysql.queries import binlog_files, current_offset
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.options import EngineOptions, InDriver
from sparkcdc.sinks.base import Sink
from sparkcdc.spark.catchup_tasks import RangeContext, RangeResult, read_range
from sparkcdc.spark.session import takes_jobs, warm_up

__all__ = [
    "CatchupRunner",
    "CatchupSettings",
    "applies_net_effects",
    "catchup_settings",
    "net_images_suffice",
]

_MIN_RANGE_BYTES = 64 * 1024
_MAX_RANGE_BYTES = 64 * 1024 * 1024  # bounds what one task holds and the driver absorbs per range


@dataclass(frozen=True)
class CatchupSettings:
    spark: Any
    server_ids: tuple[int, ...]  # one per concurrent range reader
    threshold_bytes: int
    max_range_bytes: int = _MAX_RANGE_BYTES
    # "auto": the driver decodes rounds while Spark starts; "never": rounds wait for Spark;
    # "always": the driver decodes every round (EngineOptions.catchup_in_driver).
    in_driver: InDriver = "auto"
    decoder: Path | None = None  # the Go decoder (EngineOptions.binlog_decoder), None: Python only


def catchup_settings(
    spark: Any, ids: tuple[int, int], spec: CdcPipelineSpec, options: EngineOptions | None = None
) -> CatchupSettings | None:
    """Catch-up for a pipeline with server ids ``ids``, or None when it is off, its sink needs
    every change, or the range has no id besides the live reader's (its last)."""
    threshold = spec.binlog.parallel_catchup_threshold_bytes
    if threshold <= 0 or not applies_net_effects(spec):
        return None
    task_ids = tuple(range(ids[0], ids[1]))[: max(1, spec.snapshot.parallelism)]
    if not task_ids:
        return None
    options = options or EngineOptions()
    decoder = decoder_path(options.binlog_decoder, options.cache_dir)
    return CatchupSettings(spark, task_ids, threshold, in_driver=options.catchup_in_driver, decoder=decoder)


def applies_net_effects(spec: CdcPipelineSpec) -> bool:
    """Whether the sink needs only each key's net change of a stretch (catch-up ranges and the
    native live path reduce to that): no per-row origin in metadata columns, no images of deleted
    rows kept, a target that holds rows rather than a log of changes."""
    return spec.sink.type == "jdbc" and net_images_suffice(spec)


def net_images_suffice(spec: CdcPipelineSpec) -> bool:
    """Whether a sink of rows (JDBC, Delta) needs no more than each key's last image: no per-row
    origin in metadata columns, no images of deleted rows kept."""
    sink = spec.sink
    return not getattr(sink, "metadata_columns", ()) and getattr(sink, "delete_mode", "hard") != "soft"


def _decode_in_driver(choice: InDriver, spark_ready: bool) -> bool:
    return choice == "always" or (choice != "never" and not spark_ready)


Decoded = tuple[list[RangeResult], str]  # a round's results in range order, and who decoded them


class CatchupRunner:
    """Catches the stream up from ``start`` in parallel while the backlog is over the threshold."""

    def __init__(
        self,
        settings: CatchupSettings,
        source: SourceConfig,
        sink: Sink,
        schemas: MutableMapping[TableId, TableSchema],
        listener: PipelineListener,
        commit: Callable[[Checkpoint], Checkpoint],
        failures: StreamFailures | None = None,
    ) -> None:
        self._settings = settings
        self._source = source
        self._sink = sink
        self._schemas = schemas  # the streamer's: updated when rows arrive with another definition
        self._listener = listener
        self._commit = commit  # adds what the streamer keeps (failed tables), saves, returns
        # The streamer's: tables whose rows the sink refuses or the reader cannot decode stop.
        self._failures = StreamFailures(Checkpoint(), schemas, listener) if failures is None else failures
        self._flavor = "mariadb"
        self._on_spark = threading.Event()  # a round was submitted to Spark
        self._warm = threading.Event()  # Spark and its Python workers are up (or failed to start)

    def run(
        self,
        checkpoint: Checkpoint,
        start: BinlogOffset,
        event_filter: BinlogSplitFilter,
        should_stop: Callable[[], bool],
    ) -> tuple[Checkpoint, BinlogOffset]:
        while not should_stop():
            ranges = self.plan(start)
            if not ranges:
                break
            self._listener.binlog_reader("catchup")
            width = len(self._settings.server_ids)
            # Rounds go to Spark once its workers are up too: the first job would wait for them.
            self._warm = warm_up(self._settings.spark, width, [__name__], lambda: not self._on_spark.is_set())
            schemas = dict(self._schemas)
            exact = native_eligible(self._source, schemas)
            decoder = self._settings.decoder if exact else None
            self._listener.message(
                f"parallel catch-up of {start} → {ranges[-1].stop}: {len(ranges)} ranges, "
                f"{len(self._settings.server_ids)} tasks, {'Go' if decoder else 'Python'} decoder"
            )
            context = RangeContext(self._source, schemas, event_filter, self._flavor, decoder)
            checkpoint, start = self._run_rounds(context, ranges, checkpoint, start, should_stop)
            event_filter.advance_to(start)
        return checkpoint, start

    def plan(self, start: BinlogOffset) -> list[CatchupRange]:
        """The ranges of the stretch from ``start``, or none when the backlog is small."""
        conn = connect(self._source)
        try:
            flavor = detect_flavor(conn)
            self._flavor = flavor.kind
            now = current_offset(conn, flavor)
            files = binlog_files(conn)
            backlog = backlog_bytes(start, now, files) if now > start else 0
            self._listener.backlog_measured(backlog)
            if backlog < self._settings.threshold_bytes:
                return []
            boundaries = list_boundaries(conn, start, now)
        finally:
            conn.close()
        # Four rounds at least, so that decoding overlaps applying for most of the stretch, which
        # ends at the first DDL (the sink's own DDL, when it shares the server).
        stretch = backlog_bytes(start, stretch_end(start, boundaries), files)
        share = stretch // (4 * len(self._settings.server_ids))
        size = min(self._settings.max_range_bytes, max(_MIN_RANGE_BYTES, share))
        return cut_ranges(start, boundaries, files, size)

    def _run_rounds(
        self,
        context: RangeContext,
        ranges: Sequence[CatchupRange],
        checkpoint: Checkpoint,
        start: BinlogOffset,
        should_stop: Callable[[], bool],
    ) -> tuple[Checkpoint, BinlogOffset]:
        width = len(self._settings.server_ids)
        rounds = [ranges[i : i + width] for i in range(0, len(ranges), width)]
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sparkcdc-catchup")
        try:
            pending: Future[Decoded] | None = pool.submit(self._decode, context, rounds[0])
            for i, windows in enumerate(rounds):
                assert pending is not None
                waited = time.monotonic()
                results, decoder = pending.result()
                more = i + 1 < len(rounds) and not should_stop()
                pending = pool.submit(self._decode, context, rounds[i + 1]) if more else None
                applying = time.monotonic()
                checkpoint = self._apply(results, windows[-1].stop, checkpoint)
                self._listener.message(
                    f"catch-up round {i + 1}/{len(rounds)} committed at {windows[-1].stop}: "
                    f"{sum(r.events for r in results):,} row events; decoded in "
                    f"{max(r.seconds for r in results):.1f}s by {decoder}, waited {applying - waited:.1f}s "
                    f"for that, applied in {time.monotonic() - applying:.1f}s"
                )
                start = windows[-1].stop
                if pending is None:
                    break
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        return checkpoint, start

    def _decode(self, context: RangeContext, windows: Sequence[CatchupRange]) -> Decoded:
        """One Spark job: one task per range, each under its own server id. While Spark is still
        starting (seconds for a local JVM, minutes for executor pods) the driver decodes the
        round itself instead of waiting: the same ``read_range`` under the same ids, one thread
        per range (the Go decoder runs in a process of its own; Python decoding shares the GIL)."""
        pairs = list(zip(windows, self._settings.server_ids, strict=False))

        def task(pair: tuple[CatchupRange, int]) -> RangeResult:
            return read_range(context, pair[0], pair[1])

        def task_in_driver(pair: tuple[CatchupRange, int]) -> RangeResult:
            # A range mutates its context (the event filter advances): a copy of its own, as a
            # Spark task gets by unpickling.
            return read_range(copy.deepcopy(context), pair[0], pair[1])

        decoder = "its tasks"
        if _decode_in_driver(self._settings.in_driver, takes_jobs(self._settings.spark, self._warm)):
            decoder = "the driver (Spark starting)"
            with ThreadPoolExecutor(len(pairs), thread_name_prefix="sparkcdc-catchup-driver") as threads:
                results = list(threads.map(task_in_driver, pairs))
        else:
            self._on_spark.set()
            rdd = self._settings.spark.sparkContext.parallelize(pairs, len(pairs))
            results = rdd.map(task).collect()
        return sorted(results, key=lambda r: r.index), decoder

    def _apply(self, results: Sequence[RangeResult], end: BinlogOffset, checkpoint: Checkpoint) -> Checkpoint:
        """Absorb a round's ranges in binlog order, apply per table, then checkpoint ``end``."""
        total: dict[TableId, BackfillChanges] = {}
        for result in results:
            for table, changes in result.changes.items():
                absorb(total.setdefault(table, BackfillChanges()), changes)
            for table, schema in result.schemas.items():
                if table not in self._failures:
                    self._schemas[table] = schema
            for table, rows in result.undecodable.items():
                self._failures.fail(table, decode_failure_message(table, rows.offset, rows.detail))
        live = {t: c for t, c in total.items() if c and t not in self._failures}
        batch = [table_changes(t, c, end) for t, c in live.items()]
        read_at, started = time.time(), time.perf_counter()
        self._failures.apply(self._sink, batch, end)
        seconds = time.perf_counter() - started
        checkpoint = self._commit(replace(checkpoint, binlog_offset=end))
        # Reduced ranges carry no event times (core/catchup.py): the round reports none.
        events = sum(r.events for r in results)
        self._listener.batch_committed(BatchCommit(events, end, seconds, 0, net_counts(live), read_at))
        return checkpoint
