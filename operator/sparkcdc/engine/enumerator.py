"""The driver's orchestration of one pipeline: discover, plan, snapshot in waves, checkpoint.

This is Flink's split enumerator: it owns the assigner, hands waves of splits to Spark tasks
(or to the driver's own threads while Spark is not worth starting or not up: wave_runner.py)
and records their high watermarks in the checkpoint only after the sink committed them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from sparkcdc.core.assigner import SnapshotSplitAssigner
from sparkcdc.core.checkpoint import Checkpoint, Phase, TableState
from sparkcdc.core.event_filter import start_offset
from sparkcdc.core.fence import Fence
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.source_identity import SourceIdentity
from sparkcdc.core.splits import SnapshotSplit
from sparkcdc.core.tables import TableId
from sparkcdc.core.waves import WaveSizer
from sparkcdc.engine.binlog_lost import ExpiryWatch, binlog_expiry_seconds, binlog_reset
from sparkcdc.engine.capture_changes import CaptureChanges
from sparkcdc.engine.catchup import catchup_settings
from sparkcdc.engine.discovery import discover_tables, follows_vanished, server_id_range
from sparkcdc.engine.listener import PipelineListener
from sparkcdc.engine.native_live import logs_every_change, native_decoder
from sparkcdc.engine.planning import key_order, plan_table, tail_splits
from sparkcdc.engine.runtime import PipelineRuntime
from sparkcdc.engine.schema_changes import fail_vanished_tables
from sparkcdc.engine.source_change import check_source
from sparkcdc.engine.startup import SearchContext, startup_offset
from sparkcdc.engine.streaming import BinlogStreamer, StreamSettings, live_reader_server_id
from sparkcdc.engine.table_failures import record_wave, without_failed_tables
from sparkcdc.engine.wave_runner import WaveRunner
from sparkcdc.mysql.connection import SourceError, connect
from sparkcdc.mysql.failover import with_gtid
from sparkcdc.mysql.flavor import detect_flavor
from sparkcdc.mysql.queries import check_binlog_settings, current_offset, list_tables
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks.base import start_fenced
from sparkcdc.sinks.targets import sink_schemas
from sparkcdc.spark.snapshot import WaveContext, plan_tasks
from sparkcdc.state.base import CheckpointStore

_MAX_RESNAPSHOTS = 3


def _streaming(checkpoint: Checkpoint | None, mode: str) -> bool:
    """Whether a snapshotting pipeline's checkpoint is past its snapshot, into the stream."""
    return (
        mode == "initial"
        and checkpoint is not None
        and checkpoint.snapshot_done
        and (checkpoint.binlog_offset is not None)
    )


def _split_counts(checkpoint: Checkpoint) -> tuple[dict[TableId, int], dict[TableId, int]]:
    """Each planned table's splits in all and finished, as the snapshot phase reports them."""
    totals = {t: plan.split_count() for t, plan in checkpoint.plans.items()}
    return totals, {t: len(checkpoint.finished.get(t, ())) for t in totals}


class SplitEnumerator:
    """Runs one pipeline's snapshot phase on a Spark session; resumable from its checkpoint."""

    def __init__(
        self,
        runtime: PipelineRuntime,
        store: CheckpointStore,
        spark: Any,
        listener: PipelineListener,
        *,
        fence: Callable[[], Fence] | None = None,
        driver_threads: int | None = None,
        capture_changes: CaptureChanges | None = None,
    ) -> None:
        """``driver_threads``: tasks the driver runs at once while it reads waves itself
        (wave_runner.py); default the snapshot's parallelism, as a local Spark would use.
        ``capture_changes``: spec edits followed while streaming (capture_changes.py)."""
        self._capture_changes = capture_changes
        self._runtime = runtime
        self._driver_threads = driver_threads
        self._fence = fence
        self._store = store
        self._spark = spark
        self._listener = listener
        self._snapshot = runtime.pipeline.spec.snapshot
        self._identity: SourceIdentity | None = None  # the source's, once checked (source_change.py)

    def load_checkpoint(self) -> Checkpoint | None:
        checkpoint = self._store.load()
        self._listener.checkpoint_stored(checkpoint)
        return checkpoint

    def save(self, checkpoint: Checkpoint) -> None:
        # Everything saved was read from the source checked at start (a reader that reconnects
        # to another server fails instead), so the checkpoint names that server.
        if self._identity is not None and checkpoint.source != self._identity:
            checkpoint = replace(checkpoint, source=self._identity)
        self._store.save(checkpoint)
        self._listener.checkpoint_stored(checkpoint)

    def run(
        self, *, exit_when_caught_up: bool, should_stop: Callable[[], bool] = lambda: False
    ) -> Checkpoint:
        """Snapshot (per the startup mode), then stream the binlog until stopped or caught up.

        Before streaming, the binlog the pipeline resumes from must still be on the source
        (binlog_lost.py): if not, it fails, or with ``onBinlogLost: resnapshot`` the tables whose
        position was lost are snapshotted again and streaming resumes after that.
        """
        startup = self._runtime.pipeline.spec.startup
        self._listener = ExpiryWatch(self._listener, self._binlog_expiry()).as_listener()
        for _attempt in range(_MAX_RESNAPSHOTS + 1):
            self._check_source()
            stored = self._fail_vanished_tables(self.load_checkpoint())
            self._runtime = without_failed_tables(self._runtime, stored)
            resnapshot = stored is not None and bool(stored.plans) and not stored.snapshot_done
            if _streaming(stored, startup.mode):
                # Tables added since, or snapshotted beside the stream when it stopped, are read
                # beside it again (engine/interleaved.py): the others do not wait for them.
                assert stored is not None and stored.binlog_offset is not None
                checkpoint, start = stored, stored.binlog_offset
                self._listener.snapshot_planned(*_split_counts(checkpoint))  # progress, metrics
            elif startup.mode in ("initial", "snapshot-only") or resnapshot:
                checkpoint = self.run_snapshot()
                if startup.mode == "snapshot-only":
                    return checkpoint
                start = checkpoint.binlog_offset or start_offset(checkpoint.all_finished_infos())
            else:
                checkpoint, start = self._stream_only_start()
            reset = binlog_reset(self._runtime, checkpoint, start, self._listener)
            if reset is None:
                return self._stream(checkpoint, start, exit_when_caught_up, should_stop)
            self.save(reset)
        raise SourceError(
            f"the binlog was purged again while the lost tables were snapshotted ({_MAX_RESNAPSHOTS} times); "
            "keep binlogs longer on the source (binlog_expire_logs_seconds) than a snapshot takes"
        )

    def _check_source(self) -> None:
        """Compare the source with the server that wrote the checkpoint; follow it by GTID,
        start over, or refuse (source_change.py) before anything is read or written."""
        stored = self.load_checkpoint()
        policy = self._runtime.pipeline.spec.startup.on_source_change
        self._identity, followed = check_source(self._runtime.source, stored, policy, self._listener)
        self._listener.source_identified(self._identity)
        if followed is not None and followed != stored:
            self.save(followed)

    def _fail_vanished_tables(self, checkpoint: Checkpoint | None) -> Checkpoint | None:
        """Captured tables that no longer exist (dropped or renamed while the pipeline was not
        running) stop, instead of failing the start of the whole pipeline."""
        if checkpoint is None:
            return None
        conn = connect(self._runtime.source)
        try:
            available = list_tables(conn)
        finally:
            conn.close()
        # A table a pattern captures stays: the stream follows the statement that renamed or
        # dropped it (engine/table_moves.py), with the definition the checkpoint recorded.
        spec = self._runtime.pipeline.spec
        updated = fail_vanished_tables(checkpoint, available, lambda t: follows_vanished(spec, t))
        if updated is checkpoint:
            return checkpoint
        for table, state in updated.tables.items():
            if state != checkpoint.tables.get(table):
                self._listener.table_failed(table, state.error)
        self.save(updated)
        return updated

    def _binlog_expiry(self) -> float | None:
        conn = connect(self._runtime.source)
        try:
            return binlog_expiry_seconds(conn)
        finally:
            conn.close()

    def _stream_only_start(self) -> tuple[Checkpoint, BinlogOffset]:
        """The checkpoint and start offset of a pipeline that captures without a snapshot."""
        checkpoint = self.load_checkpoint()
        if checkpoint is not None and checkpoint.binlog_offset is not None:
            return checkpoint, checkpoint.binlog_offset
        ids = server_id_range(self._runtime, checkpoint)
        conn = connect(self._runtime.source)
        try:
            flavor = detect_flavor(conn)
            check_binlog_settings(conn)
            tables = discover_tables(self._runtime, conn)
            now = current_offset(conn, flavor)
            search = SearchContext(self._runtime.source, live_reader_server_id(ids), flavor)
            start = startup_offset(conn, self._runtime.pipeline.spec.startup, now, search)
        finally:
            conn.close()
        self._listener.message(f"{self._runtime.pipeline.spec.startup.mode} start: binlog position {start}")
        base = checkpoint or Checkpoint()
        checkpoint = replace(
            base,
            tables={**{t: TableState(Phase.BINLOG) for t in tables}, **base.tables},
            server_ids=ids,
            snapshot_done=True,
            snapshot_end_offset=now,
            binlog_offset=start,
        )
        self.save(checkpoint)
        return checkpoint, start

    def _stream(
        self,
        checkpoint: Checkpoint,
        start: BinlogOffset,
        exit_when_caught_up: bool,
        should_stop: Callable[[], bool],
    ) -> Checkpoint:
        self._claim_sink_fence()
        conn = connect(self._runtime.source)
        try:
            schemas = discover_tables(self._runtime, conn)
            flavor = detect_flavor(conn)
            start = with_gtid(conn, start, flavor)  # so the first batch's checkpoint can follow a failover
            # --exit-when-caught-up: the position observed now, once the snapshot is done (a resumed
            # run catches up with everything written while it was down). Only this server's
            # position: the checkpoint's were moved to it at start (source_change.py), and one
            # read on another server says nothing about this binlog.
            stop_at = current_offset(conn, flavor) if exit_when_caught_up else None
        finally:
            conn.close()
        failed = {t for t, s in checkpoint.tables.items() if s.phase is Phase.FAILED}
        schemas = {t: s for t, s in schemas.items() if t not in failed}
        ids = checkpoint.server_ids or server_id_range(self._runtime, checkpoint)
        binlog = self._runtime.pipeline.spec.binlog
        tune = getattr(self._runtime.sink, "tune_binlog", None)  # sinks wanting larger batches (Delta)
        settings = StreamSettings(
            live_reader_server_id(ids),
            binlog if tune is None else tune(binlog),
            stop_at,
            dict(self._snapshot.chunk_key_columns),
            catchup_settings(self._spark, ids, self._runtime.pipeline.spec, self._runtime.options),
            self._identity.server_id if self._identity is not None else None,
            native_decoder=native_decoder(self._runtime.pipeline.spec, self._runtime.options),
            native_changes=logs_every_change(self._runtime.pipeline.spec),
            split_server_id=ids[0],
        )
        sink = self._runtime.sink.open()
        try:
            sink.prepare(sink_schemas(schemas.values()))
            self._listener.tables_prepared(list(schemas))
            self._listener.message(f"streaming the binlog from {start}")
            streamer = BinlogStreamer(
                self._runtime.source,
                sink,
                schemas,
                settings,
                self._listener,
                self.save,
                runtime=self._runtime,
                changes=self._capture_changes,
            )
            return streamer.run(checkpoint, start, should_stop)
        finally:
            sink.close()

    def run_snapshot(self) -> Checkpoint:
        """Plan what is unplanned, then read waves until every split is committed."""
        conn = connect(self._runtime.source)
        try:
            flavor = detect_flavor(conn)
            check_binlog_settings(conn)
            schemas = discover_tables(self._runtime, conn)
            checkpoint = self.load_checkpoint()
            runner = WaveRunner(
                self._spark,
                self._runtime.sink,
                self._snapshot.parallelism,
                self._listener,
                threads=self._driver_threads or self._snapshot.parallelism,
                mode=self._runtime.options.snapshot_in_driver or self._snapshot.read_in_driver,
                worth_seconds=self._runtime.options.spark_worth_seconds,
            )
            if checkpoint is None or not checkpoint.snapshot_done:
                runner.begin()
            ids = server_id_range(self._runtime, checkpoint)
            checkpoint = replace(checkpoint or Checkpoint(), server_ids=ids)
            assigner = SnapshotSplitAssigner(checkpoint)
            self._plan_missing(conn, assigner, schemas)
            checkpoint = assigner.to_checkpoint(checkpoint)
            self.save(checkpoint)
            self._prepare_sink(schemas)
            self._listener.snapshot_planned(
                {t: assigner.table_progress(t)[1] for t in schemas},
                {t: assigner.table_progress(t)[0] for t in schemas},
            )
            checkpoint = self._run_waves(conn, assigner, schemas, checkpoint, runner)
            if not checkpoint.snapshot_done:
                end = current_offset(conn, flavor)
                checkpoint = replace(checkpoint, snapshot_done=True, snapshot_end_offset=end)
                self.save(checkpoint)
                self._listener.message(f"snapshot complete at binlog position {end}")
            return checkpoint
        finally:
            conn.close()

    def _plan_missing(
        self, conn: Any, assigner: SnapshotSplitAssigner, schemas: Mapping[TableId, TableSchema]
    ) -> None:
        planned = set(assigner.tables())
        for table, schema in schemas.items():
            if table in planned:
                continue
            self._listener.message(f"planning splits of {table}")
            assigner.add_table(table, plan_table(conn, schema, self._snapshot), key_columns=schema.chunk_key)

    def _claim_sink_fence(self) -> None:
        """Raise the sink's fence to this run's epoch before its first sink write — after the
        source checks, so bad input leaves neither a fence nor a sink database behind."""
        if self._fence is not None:
            fence, self._fence = self._fence(), None
            self._runtime = replace(self._runtime, sink=start_fenced(self._runtime.sink, fence))

    def _prepare_sink(self, schemas: Mapping[TableId, TableSchema]) -> None:
        self._claim_sink_fence()
        sink = self._runtime.sink.open()
        try:
            sink.prepare(sink_schemas(schemas.values()))
            self._listener.tables_prepared(list(schemas))
        finally:
            sink.close()

    def _run_waves(
        self,
        conn: Any,
        assigner: SnapshotSplitAssigner,
        schemas: Mapping[TableId, TableSchema],
        checkpoint: Checkpoint,
        runner: WaveRunner,
    ) -> Checkpoint:
        ids = checkpoint.server_ids or (1, 1)
        task_ids = list(range(ids[0], ids[1] + 1))[: self._snapshot.parallelism]
        context = WaveContext(
            self._runtime.source, self._runtime.sink, dict(schemas), self._snapshot.fetch_size
        )
        fixed = "splits_per_task" in self._snapshot.model_fields_set  # else waves grow (core/waves.py)
        sizer = WaveSizer(self._snapshot.splits_per_task, adaptive=not fixed)
        checked_tails: set[TableId] = set()
        while True:
            wave_size = len(task_ids) * sizer.splits_per_task
            wave = assigner.next_wave(wave_size)
            tails = [s for s in wave if s.end is None and s.table not in checked_tails]
            if tails:
                assigner.release(wave)
                for tail in tails:
                    checked_tails.add(tail.table)
                    self._resplit_grown_tail(conn, assigner, schemas[tail.table], tail)
                # The new pieces are durable before any is written: a rerun after a crash must
                # read the same pieces, or a sink keyed by split (changelog files) keeps pieces
                # of an earlier cut, with rows the source deleted meanwhile.
                checkpoint = assigner.to_checkpoint(checkpoint)
                self.save(checkpoint)
                wave = assigner.next_wave(wave_size)
            if not wave:
                return checkpoint
            began = time.monotonic()
            finished, total = assigner.progress()
            tasks = plan_tasks(wave, task_ids, sizer.splits_per_task)
            summaries = runner.run(context, tasks, total - finished - len(wave))
            sizer.observe(time.monotonic() - began)
            summaries = record_wave(assigner, summaries, self._listener)  # tables the sink refused fail
            checkpoint = assigner.to_checkpoint(checkpoint)
            self.save(checkpoint)
            self._listener.splits_finished(summaries)

    def _resplit_grown_tail(
        self, conn: Any, assigner: SnapshotSplitAssigner, schema: TableSchema, tail: SnapshotSplit
    ) -> None:
        """Cut an unbounded tail split that grew during the snapshot into chunk-sized splits
        right before it is read, instead of loading all the new rows in one task."""
        pieces = tail_splits(
            conn, schema, self._snapshot.chunk_size, start=tail.start, first_index=tail.index
        )
        if len(pieces) > 1:
            boundaries = [p.start for p in pieces[1:] if p.start is not None]
            assigner.resplit(tail, boundaries, order=key_order(schema))  # the key's collation order
            self._listener.message(
                f"{tail.table} grew during the snapshot: its last split is now {len(pieces)} splits"
            )
