"""The binlog phase: one reader from the minimum high watermark, micro-batches into the sink.

A reader thread decodes the binlog into a bounded queue while the driver applies the previous
batch, so reading the next batch overlaps writing the current one. A batch ends only at a
transaction boundary; its offset is checkpointed after the sink committed it (architecture §3
rules 4–6), so a crash replays at most the uncommitted batch, which converges because every
batch is applied as last images per key.

Transaction boundaries include the commits of tables that are not captured and the source's
heartbeats, so the checkpointed offset keeps moving while the captured tables are idle and a
restart does not rescan unrelated binlog. DDL is judged in the reader thread (schema_changes.py)
and applied here at its place in the stream.
"""

from __future__ import annotations

import queue
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from sparkcdc.api.spec import BinlogSpec
from sparkcdc.core.catchup import table_changes
from sparkcdc.core.checkpoint import Checkpoint, collapse_pure_tables
from sparkcdc.core.event_filter import BinlogSplitFilter
from sparkcdc.core.events import ChangeEvent
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.tables import TableId
from sparkcdc.engine.backlog import LAG_CHECK_SECONDS, BacklogProbe
from sparkcdc.engine.batch_sizing import gathering
from sparkcdc.engine.cascading import CascadeFollower
from sparkcdc.engine.catchup import CatchupRunner, CatchupSettings
from sparkcdc.engine.listener import BatchCommit, PipelineListener, event_counts, net_counts
from sparkcdc.engine.live_reader import END, Batch, ReaderThread
from sparkcdc.engine.native_live import NativeLive, native_tables
from sparkcdc.engine.planning import key_order
from sparkcdc.engine.schema_apply import apply_schema_change
from sparkcdc.engine.schema_changes import SchemaChange, SchemaTracker, affected
from sparkcdc.engine.schema_history import SchemaHistory
from sparkcdc.engine.table_failures import StreamFailures, decode_failure_message
from sparkcdc.mysql.binlog.follow import FollowSettings, NativeBatch, NativeFollower
from sparkcdc.mysql.binlog.reader import DdlStatement
from sparkcdc.mysql.binlog.stream import SchemaInUse, StreamingChangeReader, UndecodableRows
from sparkcdc.mysql.connection import SourceConfig, connect
from sparkcdc.mysql.failover import with_gtid
from sparkcdc.mysql.flavor import detect_flavor
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks.base import Sink

__all__ = ["Batch", "BinlogStreamer", "StreamSettings", "live_reader_server_id"]

# After the Go decoder stopped, the Python reader reads at least this long before handing back, so
# that a stream the Go decoder keeps stopping at does not restart it again and again.
NATIVE_RETRY_SECONDS = 5.0


def live_reader_server_id(ids: tuple[int, int]) -> int:
    """The live reader's replica id: the last of the pipeline's range. Snapshot tasks take ids
    from the start of the range (one per task, ``snapshot.parallelism`` of them; the default
    range has one more), so the reader never shares an id with a snapshot task — not even one
    still running from a previous driver — unless the range is narrower than the task count; then
    they share, but one pipeline never runs both at once."""
    return ids[1]


@dataclass(frozen=True)
class StreamSettings:
    server_id: int
    binlog: BinlogSpec
    # Stop once everything up to this offset is committed (``--exit-when-caught-up``).
    stop_at: BinlogOffset | None = None
    chunk_key_overrides: Mapping[str, list[str]] = field(default_factory=dict)
    # Parallel catch-up of a large backlog before the live reader starts (engine/catchup.py).
    catchup: CatchupSettings | None = None
    # The source's @@server_id at start: the live reader refuses a (re)connection to another.
    source_server_id: int | None = None
    # How often the live reader asks whether it fell behind far enough for catch-up (backlog.py).
    lag_check_seconds: float = LAG_CHECK_SECONDS
    # The Go decoder for the live path where it is exact (native_live.py); None: Python only.
    native_decoder: Path | None = None


class BinlogStreamer:
    def __init__(
        self,
        source: SourceConfig,
        sink: Sink,
        schemas: Mapping[TableId, TableSchema],
        settings: StreamSettings,
        listener: PipelineListener,
        save: Callable[[Checkpoint], None],
    ) -> None:
        self._source = source
        self._sink = sink
        self._schemas = dict(schemas)  # what rows are written with, per table
        self._settings = settings
        self._listener = listener
        self._save = save
        self._failures = StreamFailures(Checkpoint(), self._schemas, listener)
        self._cascades: CascadeFollower | None = None
        self._loaded_at: dict[TableId, BinlogOffset] = {}  # schema_changes.py ``loaded_at``
        self._history = SchemaHistory()  # the definitions each checkpoint records

    def build_filter(self, checkpoint: Checkpoint) -> BinlogSplitFilter:
        snapshotted = {t: checkpoint.finished.get(t, ()) for t in self._schemas if checkpoint.finished.get(t)}
        return BinlogSplitFilter(
            snapshotted,
            {t: self._schemas[t].chunk_key for t in snapshotted},
            {t: key_order(self._schemas[t]) for t in snapshotted},
            streaming=[t for t in self._schemas if t not in snapshotted],
        )

    def run(self, checkpoint: Checkpoint, start: BinlogOffset, should_stop: Callable[[], bool]) -> Checkpoint:
        """Stream from ``start`` until caught up (when ``stop_at`` is set) or ``should_stop``: parallel
        catch-up while the backlog is large, at the start and whenever the live path falls that far
        behind (engine/backlog.py); in between the live path, on the Go decoder where it is exact
        (engine/native_live.py), else on python-mysql-replication."""
        self._failures = StreamFailures(checkpoint, self._schemas, self._listener)
        # A resume decodes with the definitions of the checkpoint's time (schema_history.py).
        self._loaded_at = self._history.resume(self._source, self._schemas, checkpoint)
        self._cascades = CascadeFollower(self._source, self._sink, self._schemas, self._listener)
        if self._cascades:
            self._failures.link(self._cascades.plan.linked)
        event_filter = self.build_filter(checkpoint)
        runner = self._catchup_runner()
        reason: str | None = None
        python_until: BinlogOffset | None = None  # the Python reader's until it commits past this
        while True:
            if runner is not None:
                checkpoint, start = runner.run(checkpoint, start, event_filter, should_stop)
                start = self._with_gtid(start)
            if reason == "behind":
                self._listener.message(f"caught up with the source at {start}: the live reader follows again")
            stop_at = self._settings.stop_at
            if stop_at is not None and not stop_at > start:
                return replace(checkpoint, binlog_offset=checkpoint.binlog_offset or start)
            probe = None if runner is None else self._probe()
            native = None if python_until is not None else self._native(event_filter, start)
            if isinstance(native, BinlogOffset):
                native, python_until = None, native  # the Python reader's through the handoff
            detail = ""
            if native is not None:
                self._listener.binlog_reader("native")
                outcome = native.run(checkpoint, should_stop, stop_at, probe)
                checkpoint, reason, detail = outcome.checkpoint, outcome.reason, outcome.detail
            else:
                self._listener.binlog_reader("python")
                checkpoint, reason = self._stream_live(
                    checkpoint, start, event_filter, should_stop, probe, python_until
                )
            if reason is None:
                return checkpoint
            start = max(start, checkpoint.binlog_offset or start)
            python_until = start if reason == "unsupported" else None
            self._say_why(reason, start, probe, detail)

    def _say_why(self, reason: str, start: BinlogOffset, probe: BacklogProbe | None, detail: str) -> None:
        if reason == "behind" and probe is not None:
            self._listener.message(
                f"the live reader is {probe.last_backlog / 2**20:,.1f} MiB of binlog behind the source at "
                f"{start}: parallel catch-up takes over"
            )
        elif reason == "unsupported":
            self._listener.message(
                f"at {start} the Go decoder stops ({detail}): python-mysql-replication reads on"
            )

    def _native(
        self, event_filter: BinlogSplitFilter, start: BinlogOffset
    ) -> NativeLive | BinlogOffset | None:
        """The live path on the Go decoder from ``start``, where it is exact (native_live.py); an
        offset the Python reader must pass first (the snapshot handoff); None: Python only."""
        decoder = self._settings.native_decoder
        if decoder is None or self._cascades:
            return None
        live = {t: s for t, s in self._schemas.items() if t not in self._failures}
        tables = native_tables(self._source, live, event_filter, start)
        if not isinstance(tables, dict):
            return tables
        conn = connect(self._source)
        try:
            flavor = detect_flavor(conn).kind
        finally:
            conn.close()
        spec = self._settings.binlog
        gathered = gathering(self._sink, spec)  # batch_sizing.py: bigger batches when behind
        capacity = gathered.capacity(spec.batch_rows)
        heartbeat = spec.heartbeat_interval_seconds
        settings = FollowSettings(spec.batch_rows, spec.batch_interval_ms, heartbeat, capacity)
        ids = self._settings.server_id, self._settings.source_server_id
        follower = NativeFollower(decoder, self._source, ids[0], tables, start, flavor, settings, ids[1])
        self._listener.message(f"the live path reads from {start} with the Go decoder")
        return NativeLive(follower, self._apply_native, lambda d: bool(affected(d, tables)), 0.2, gathered)

    def _apply_native(self, batch: NativeBatch, checkpoint: Checkpoint) -> Checkpoint:
        """One batch of the Go decoder: applied per table as a catch-up round, then checkpointed."""
        live = {t: c for t, c in batch.changes.items() if c and t not in self._failures}
        changes = [table_changes(t, c, batch.end) for t, c in live.items()]
        read_at, started = time.time(), time.perf_counter()
        self._failures.apply(self._sink, changes, batch.end)
        seconds = time.perf_counter() - started
        checkpoint = self._save_done(replace(checkpoint, binlog_offset=batch.end))
        # The checkpoint's offset, not the batch's: it carries the GTID position (status.progress
        # gtidPosition, which a failover is followed by).
        end = checkpoint.binlog_offset or batch.end
        commit = BatchCommit(batch.events, end, seconds, batch.newest_ms, net_counts(live), read_at)
        self._listener.batch_committed(commit)
        return checkpoint

    def _catchup_runner(self) -> CatchupRunner | None:
        if self._settings.catchup is None:
            return None
        if self._cascades:
            # Catch-up ranges reduce to net effects per table, losing where cascades happened.
            self._listener.message("parallel catch-up is off: referential actions are followed in order")
            return None
        return CatchupRunner(
            self._settings.catchup,
            self._source,
            self._sink,
            self._schemas,
            self._listener,
            self._save_done,
            self._failures,
        )

    def _probe(self) -> BacklogProbe:
        assert self._settings.catchup is not None
        threshold = self._settings.catchup.threshold_bytes
        interval = self._settings.lag_check_seconds
        return BacklogProbe(self._source, threshold, interval, report=self._listener.backlog_measured)

    def _stream_live(
        self,
        checkpoint: Checkpoint,
        start: BinlogOffset,
        event_filter: BinlogSplitFilter,
        should_stop: Callable[[], bool],
        probe: BacklogProbe | None,
        until: BinlogOffset | None = None,
    ) -> tuple[Checkpoint, str | None]:
        """The live reader from ``start``; returns the checkpoint (everything up to it committed)
        and why it stopped: None (stopped or caught up), "behind" (the source ran ``probe``'s
        threshold ahead) or "native" (it committed past ``until``: the Go decoder's turn again)."""
        reader = StreamingChangeReader(
            self._source,
            self._settings.server_id,
            self._schemas,
            heartbeat_seconds=float(self._settings.binlog.heartbeat_interval_seconds),
            expect_server_id=self._settings.source_server_id,
        )
        overrides = self._settings.chunk_key_overrides
        tracker = SchemaTracker(self._source, self._schemas, overrides, self._loaded_at)
        thread = ReaderThread(reader, start, tracker, capacity=self._settings.binlog.batch_rows * 2)
        thread.start()
        try:
            return self._consume(thread, checkpoint, event_filter, should_stop, probe, until)
        finally:
            # Not reader.close() from this thread: it would race the reader's blocked socket read.
            # request_stop wakes that read, so the reader closes its own connection right away
            # instead of at the next heartbeat (--exit-when-caught-up on an idle source).
            thread.stop()
            reader.request_stop()
            thread.join(timeout=2 * self._settings.binlog.heartbeat_interval_seconds + 1)

    def _consume(
        self,
        thread: ReaderThread,
        checkpoint: Checkpoint,
        event_filter: BinlogSplitFilter,
        should_stop: Callable[[], bool],
        probe: BacklogProbe | None,
        until: BinlogOffset | None = None,
    ) -> tuple[Checkpoint, str | None]:
        spec = self._settings.binlog
        began = time.monotonic()
        stop_at = self._settings.stop_at
        interval = spec.batch_interval_ms / 1000
        batch = Batch()
        decoded: set[TableId] = set()  # tables with rows decoded in this stream (schema_apply.py)
        while True:
            try:
                item = thread.queue.get(timeout=max(0.02, interval - (time.monotonic() - batch.started)))
            except queue.Empty:
                item = None
            if item is END:
                if thread.error is not None:
                    raise thread.error
                return self._commit(batch, checkpoint), None
            if isinstance(item, ChangeEvent):
                decoded.add(item.table)
                if item.table not in self._failures:
                    batch.open_events.extend(event_filter.filter_event(item))
                    self._mark_cascades(batch, item, event_filter)
            elif isinstance(item, BinlogOffset):
                batch.close_transaction(item)
                event_filter.advance_to(item)
            elif isinstance(item, SchemaInUse):
                if item.schema != self._schemas.get(item.table) and item.table not in self._failures:
                    if batch.touches(item.table):
                        checkpoint = self._commit(batch, checkpoint)
                        batch = batch.next()
                    self._schemas[item.table] = item.schema
            elif isinstance(item, SchemaChange):
                checkpoint = self._commit(batch, checkpoint)
                checkpoint = self._apply_schema_change(item, checkpoint, decoded, event_filter)
                batch = Batch()
                event_filter.advance_to(item.offset)
            elif isinstance(item, DdlStatement):
                batch.close_transaction(item.offset)  # DDL of other tables: only a boundary
            elif isinstance(item, UndecodableRows):
                self._failures.fail(item.table, decode_failure_message(item.table, item.offset, item.detail))
            caught_up = stop_at is not None and batch.end is not None and batch.end >= stop_at
            caught_up = caught_up or (stop_at is not None and _offset(checkpoint) >= stop_at)
            due = len(batch.events) >= spec.batch_rows or time.monotonic() - batch.started >= interval
            if batch.end is not None and (due or caught_up or should_stop()):
                checkpoint = self._commit(batch, checkpoint)
                batch = batch.next()
                # The open transaction's events are dropped: catch-up reads it again from the
                # committed boundary.
                if probe is not None and not caught_up and probe.behind(_offset(checkpoint)):
                    return checkpoint, "behind"
                past = until is not None and _offset(checkpoint) > until
                if past and not caught_up and time.monotonic() - began >= NATIVE_RETRY_SECONDS:
                    return checkpoint, "native"
            if (caught_up or should_stop()) and batch.end is None and not batch.open_events:
                return checkpoint, None

    def _mark_cascades(self, batch: Batch, event: ChangeEvent, event_filter: BinlogSplitFilter) -> None:
        if self._cascades:
            at = len(batch.events) + len(batch.open_events)
            batch.marks.extend((at, c) for c in self._cascades.cascades(event, event_filter, self._schemas))

    def _apply_schema_change(
        self, change: SchemaChange, checkpoint: Checkpoint, decoded: set[TableId], splits: BinlogSplitFilter
    ) -> Checkpoint:
        """At the DDL's place in the stream: follow it in the target (schema_apply.py); then
        checkpoint past the statement (a crash before that repeats it, idempotently)."""
        follow = self._sink, self._schemas, self._failures, self._listener
        apply_schema_change(change, *follow, decoded, splits)
        self._history.followed(change, self._schemas)
        checkpoint = self._with_failures(replace(checkpoint, binlog_offset=change.offset))
        self._save(checkpoint)
        return checkpoint

    def _with_failures(self, checkpoint: Checkpoint) -> Checkpoint:
        return self._history.onto(self._failures.onto(checkpoint))

    def _with_gtid(self, offset: BinlogOffset) -> BinlogOffset:
        """``offset`` with its GTID position (catch-up rounds end at positions listed without
        one), so that its checkpoint can follow a failover."""
        if offset.gtid_set:
            return offset
        conn = connect(self._source)
        try:
            return with_gtid(conn, offset, detect_flavor(conn))
        finally:
            conn.close()

    def _save_done(self, checkpoint: Checkpoint) -> Checkpoint:
        """Checkpoint what the sink committed, with pure tables collapsed and failures kept."""
        if checkpoint.binlog_offset is not None:
            checkpoint = replace(checkpoint, binlog_offset=self._with_gtid(checkpoint.binlog_offset))
        checkpoint = self._with_failures(collapse_pure_tables(checkpoint))
        self._save(checkpoint)
        return checkpoint

    def _commit(self, batch: Batch, checkpoint: Checkpoint) -> Checkpoint:
        if batch.end is None:
            return checkpoint
        marks = batch.closed_marks()
        end, follower = batch.end, self._cascades
        read_at, started = time.time(), time.perf_counter()
        if marks and follower is not None:
            self._failures.apply_cascading(
                lambda events, kept: follower.apply(events, kept, self._schemas, end),
                batch.events,
                marks,
                end,
            )
        else:
            self._failures.apply(self._sink, self._failures.build(batch.events, end), end)
        checkpoint = collapse_pure_tables(replace(checkpoint, binlog_offset=batch.end))
        checkpoint = self._with_failures(checkpoint)
        seconds = time.perf_counter() - started
        self._save(checkpoint)
        newest = max((e.ts_ms for e in batch.events), default=0)
        counts = event_counts(self._failures.live_events(batch.events))
        commit = BatchCommit(len(batch.events), batch.end, seconds, newest, counts, read_at)
        self._listener.batch_committed(commit)
        return checkpoint


def _offset(checkpoint: Checkpoint) -> BinlogOffset:
    return checkpoint.binlog_offset or BinlogOffset("x.0", 0)
