"""The binlog phase: from the minimum high watermark on, whichever reader is exact and fastest.

Parallel catch-up takes a large backlog (catchup.py), at the start and whenever the live path
falls that far behind (backlog.py); in between the live path reads on the Go decoder where it is
exact (native_live.py) and on python-mysql-replication elsewhere (python_live.py), which also
takes over wherever the Go decoder stops — a schema change, tables joining the pipeline, a
snapshot beside the stream — and hands back once past it. Every reader commits batches at
transaction boundaries and checkpoints after the sink (architecture §3 rules 4–6), so any of them
can take over from any committed batch; what they share is ``StreamState`` (stream_state.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import replace

from sparkcdc.api.spec import SnapshotSpec
from sparkcdc.core.catchup import table_changes
from sparkcdc.core.checkpoint import Checkpoint
from sparkcdc.core.event_filter import BinlogSplitFilter
from sparkcdc.core.microbatch import TableChanges
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.tables import TableId
from sparkcdc.engine.backlog import BacklogProbe
from sparkcdc.engine.batch_sizing import gathering
from sparkcdc.engine.capture_changes import CaptureChanges
from sparkcdc.engine.cascading import CascadeFollower
from sparkcdc.engine.catchup import CatchupRunner
from sparkcdc.engine.interleaved import InterleavedSnapshot
from sparkcdc.engine.listener import BatchCommit, PipelineListener, net_counts, record_counts
from sparkcdc.engine.live_reader import Batch
from sparkcdc.engine.native_live import NativeLive, native_tables
from sparkcdc.engine.python_live import NATIVE_RETRY_SECONDS, PythonLive
from sparkcdc.engine.runtime import PipelineRuntime
from sparkcdc.engine.schema_changes import affected
from sparkcdc.engine.stream_state import StreamSettings, StreamState
from sparkcdc.engine.table_capture import TableCapture
from sparkcdc.engine.table_failures import StreamFailures
from sparkcdc.mysql.binlog.follow import FollowSettings, NativeBatch, NativeFollower
from sparkcdc.mysql.binlog.reader import DdlStatement
from sparkcdc.mysql.connection import SourceConfig, connect
from sparkcdc.mysql.failover import with_gtid
from sparkcdc.mysql.flavor import detect_flavor
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks.base import Sink

__all__ = ["Batch", "BinlogStreamer", "StreamSettings", "live_reader_server_id"]


def live_reader_server_id(ids: tuple[int, int]) -> int:
    """The live reader's replica id: the last of the pipeline's range. Snapshot tasks take ids
    from the start of the range (one per task, ``snapshot.parallelism`` of them; the default
    range has one more), so the reader never shares an id with a snapshot task — not even one
    still running from a previous driver — unless the range is narrower than the task count; then
    they share, but one pipeline never runs both at once."""
    return ids[1]


class BinlogStreamer:
    """Runs one pipeline's binlog phase (see the module docstring)."""

    def __init__(
        self,
        source: SourceConfig,
        sink: Sink,
        schemas: Mapping[TableId, TableSchema],
        settings: StreamSettings,
        listener: PipelineListener,
        save: Callable[[Checkpoint], None],
        runtime: PipelineRuntime | None = None,
        changes: CaptureChanges | None = None,
    ) -> None:
        """With ``runtime``, tables are added and removed while streaming (table_capture.py), on
        ``changes`` of the spec and on the source's ``CREATE TABLE``; without, the set is fixed."""
        tables = dict(schemas)
        snapshot = runtime.pipeline.spec.snapshot if runtime is not None else SnapshotSpec()
        split_id = settings.split_server_id or settings.server_id
        beside = InterleavedSnapshot(source, sink, tables, snapshot, split_id, listener)
        capture = None if runtime is None else TableCapture(runtime, sink, tables, beside, listener, changes)
        self.state = StreamState(source, sink, tables, settings, listener, save, beside, capture)

    def build_filter(self, checkpoint: Checkpoint) -> BinlogSplitFilter:
        return self.state.build_filter(checkpoint)

    def run(self, checkpoint: Checkpoint, start: BinlogOffset, should_stop: Callable[[], bool]) -> Checkpoint:
        """Stream from ``start`` until caught up (when ``stop_at`` is set) or ``should_stop``: parallel
        catch-up while the backlog is large, at the start and whenever the live path falls that far
        behind (engine/backlog.py); in between the live path, on the Go decoder where it is exact
        (engine/native_live.py), else on python-mysql-replication."""
        self.state.failures = StreamFailures(checkpoint, self.state.schemas, self.state.listener)
        # A resume decodes with the definitions of the checkpoint's time (schema_history.py).
        self.state.loaded_at = self.state.history.resume(self.state.source, self.state.schemas, checkpoint)
        self.state.cascades = CascadeFollower(
            self.state.source, self.state.sink, self.state.schemas, self.state.listener
        )
        if self.state.cascades:
            self.state.failures.link(self.state.cascades.plan.linked)
        if self.state.capture is not None:
            checkpoint = self.state.capture.resume(checkpoint)
        runner = self._catchup_runner()
        try:
            return self._run(checkpoint, start, should_stop, runner)
        finally:
            self.state.interleaved.close()

    def _run(
        self,
        checkpoint: Checkpoint,
        start: BinlogOffset,
        should_stop: Callable[[], bool],
        runner: CatchupRunner | None,
    ) -> Checkpoint:
        reason: str | None = None
        python_until: BinlogOffset | None = None  # the Python reader's until it commits past this
        while True:
            event_filter = self.state.build_filter(checkpoint)
            if runner is not None:
                checkpoint, start = runner.run(checkpoint, start, event_filter, should_stop)
                start = self.state.with_gtid(start)
            if reason == "behind":
                self.state.listener.message(
                    f"caught up with the source at {start}: the live reader follows again"
                )
            stop_at = self.state.settings.stop_at
            if stop_at is not None and not stop_at > start and not self.state.busy():
                return replace(checkpoint, binlog_offset=checkpoint.binlog_offset or start)
            probe = None if runner is None else self._probe()
            beside = self.state.busy()  # tables added or read beside the stream need the Python reader
            native = None if python_until is not None or beside else self._native(event_filter, start)
            if isinstance(native, BinlogOffset):
                native, python_until = None, native  # the Python reader's through the handoff
            detail = ""
            if native is not None:
                self.state.listener.binlog_reader("native")
                outcome = native.run(checkpoint, self._stop_native(should_stop), stop_at, probe)
                checkpoint, reason, detail = outcome.checkpoint, outcome.reason, outcome.detail
                if (
                    reason is None
                    and not should_stop()
                    and self.state.capture
                    and self.state.capture.pending()
                ):
                    reason, detail = "unsupported", "the captured tables change"
            else:
                self.state.listener.binlog_reader("python")
                live = PythonLive(self.state)
                retry = 0.0 if reason == "ddl" else NATIVE_RETRY_SECONDS
                checkpoint, reason = live.run(
                    checkpoint, start, event_filter, should_stop, probe, python_until, retry
                )
            if reason is None:
                return checkpoint
            start = max(start, checkpoint.binlog_offset or start)
            python_until = start if reason in ("unsupported", "ddl") else None
            self._say_why(reason, start, probe, detail)

    def _say_why(self, reason: str, start: BinlogOffset, probe: BacklogProbe | None, detail: str) -> None:
        if reason == "behind" and probe is not None:
            self.state.listener.message(
                f"the live reader is {probe.last_backlog / 2**20:,.1f} MiB of binlog behind the source at "
                f"{start}: parallel catch-up takes over"
            )
        elif reason in ("unsupported", "ddl"):
            self.state.listener.message(
                f"at {start} the Go decoder stops ({detail}): python-mysql-replication reads on"
            )

    def _native(
        self, event_filter: BinlogSplitFilter, start: BinlogOffset
    ) -> NativeLive | BinlogOffset | None:
        """The live path on the Go decoder from ``start``, where it is exact (native_live.py); an
        offset the Python reader must pass first (the snapshot handoff); None: Python only."""
        decoder = self.state.settings.native_decoder
        if decoder is None or self.state.cascades:
            return None
        live = {t: s for t, s in self.state.schemas.items() if t not in self.state.failures}
        tables = native_tables(self.state.source, live, event_filter, start)
        if not isinstance(tables, dict):
            return tables
        conn = connect(self.state.source)
        try:
            server = detect_flavor(conn)
            # The start's GTID position, asked once: the decoder keeps it along the stream, so
            # no batch's checkpoint has to ask the server for its own (stream_state.with_gtid).
            start = with_gtid(conn, start, server)
        finally:
            conn.close()
        flavor = server.kind
        spec = self.state.settings.binlog
        gathered = gathering(self.state.sink, spec)  # batch_sizing.py: bigger batches when behind
        capacity = gathered.capacity(spec.batch_rows)
        heartbeat = spec.heartbeat_interval_seconds
        changes = self.state.settings.native_changes
        # The changelog sink (the one sink in log mode) writes the decoder's lines where it spells
        # them; a JDBC sink into MySQL/MariaDB loads the upserts' text it renders (loadtext.go).
        load = getattr(self.state.sink, "reads_load_text", False) is True
        settings = FollowSettings(
            spec.batch_rows, spec.batch_interval_ms, heartbeat, capacity, changes, lines=changes, load=load
        )
        ids = self.state.settings.server_id, self.state.settings.source_server_id
        follower = NativeFollower(decoder, self.state.source, ids[0], tables, start, flavor, settings, ids[1])
        self.state.listener.message(f"the live path reads from {start} with the Go decoder")
        return NativeLive(follower, self._apply_native, self._native_hands_over(tables), 0.2, gathered)

    def _native_hands_over(self, tables: Mapping[TableId, TableSchema]) -> Callable[[DdlStatement], bool]:
        """Which DDL the Python reader takes over at: a captured table's, and one that may create
        a table to capture (table_capture.py)."""
        capture = self.state.capture
        return lambda ddl: bool(affected(ddl, tables)) or (capture is not None and capture.may_capture(ddl))

    def _stop_native(self, should_stop: Callable[[], bool]) -> Callable[[], bool]:
        """The native path stops for a spec edit too: the Python reader follows it."""
        capture = self.state.capture
        return lambda: should_stop() or (capture is not None and capture.pending())

    def _apply_native(self, batch: NativeBatch, checkpoint: Checkpoint) -> Checkpoint:
        """One batch of the Go decoder: applied per table as a catch-up round, then checkpointed."""
        live = {t: c for t, c in batch.changes.items() if c and t not in self.state.failures}
        logged = {t: r for t, r in batch.changelog.items() if r and t not in self.state.failures}
        changes = [table_changes(t, c, batch.end) for t, c in live.items()]
        changes += [TableChanges(t, {}, (), records, batch.end) for t, records in logged.items()]
        read_at, started = time.time(), time.perf_counter()
        self.state.failures.apply(self.state.sink, changes, batch.end)
        seconds = time.perf_counter() - started
        checkpoint = self.state.save_done(replace(checkpoint, binlog_offset=batch.end))
        # The checkpoint's offset, not the batch's: it carries the GTID position (status.progress
        # gtidPosition, which a failover is followed by).
        end = checkpoint.binlog_offset or batch.end
        counts = {**net_counts(live), **record_counts(logged)}
        commit = BatchCommit(batch.events, end, seconds, batch.newest_ms, counts, read_at)
        self.state.listener.batch_committed(commit)
        return checkpoint

    def _catchup_runner(self) -> CatchupRunner | None:
        if self.state.settings.catchup is None:
            return None
        if self.state.cascades:
            # Catch-up ranges reduce to net effects per table, losing where cascades happened.
            self.state.listener.message("parallel catch-up is off: referential actions are followed in order")
            return None
        return CatchupRunner(
            self.state.settings.catchup,
            self.state.source,
            self.state.sink,
            self.state.schemas,
            self.state.listener,
            self.state.save_done,
            self.state.failures,
        )

    def _probe(self) -> BacklogProbe:
        assert self.state.settings.catchup is not None
        threshold = self.state.settings.catchup.threshold_bytes
        interval = self.state.settings.lag_check_seconds
        return BacklogProbe(
            self.state.source, threshold, interval, report=self.state.listener.backlog_measured
        )
