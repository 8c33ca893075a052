"""The live path on python-mysql-replication: the reader thread, micro-batches, the sink commits.

A reader thread decodes the binlog into a bounded queue while this consumer applies the previous
batch, so reading the next batch overlaps writing the current one. A batch ends only at a
transaction boundary; its offset is checkpointed after the sink committed it (architecture §3
rules 4–6), so a crash replays at most the uncommitted batch, which converges because every
batch is applied as last images per key.

Transaction boundaries include the commits of tables that are not captured and the source's
heartbeats, so the checkpointed offset keeps moving while the captured tables are idle and a
restart does not rescan unrelated binlog. DDL is judged in the reader thread (schema_changes.py)
and applied here at its place in the stream. Tables join and leave here too (table_capture.py),
and a table's snapshot beside the stream is written between two batches (interleaved.py): this
is the one reader that sees every event in order.
"""

from __future__ import annotations

import queue
import time
from collections.abc import Callable
from dataclasses import replace

from sparkcdc.core.checkpoint import Checkpoint, collapse_pure_tables
from sparkcdc.core.event_filter import BinlogSplitFilter
from sparkcdc.core.events import ChangeEvent
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.tables import TableId
from sparkcdc.engine.backlog import BacklogProbe
from sparkcdc.engine.listener import BatchCommit, event_counts
from sparkcdc.engine.live_reader import END, Batch, ReaderThread, TablesAdded
from sparkcdc.engine.schema_apply import apply_schema_change
from sparkcdc.engine.schema_changes import SchemaChange, SchemaTracker, TableMove
from sparkcdc.engine.stream_state import StreamState
from sparkcdc.engine.table_failures import decode_failure_message
from sparkcdc.mysql.binlog.reader import DdlStatement
from sparkcdc.mysql.binlog.stream import SchemaInUse, StreamingChangeReader, UndecodableRows

__all__ = ["NATIVE_RETRY_SECONDS", "PythonLive", "offset_of"]

# After the Go decoder stopped, the Python reader reads at least this long before handing back, so
# that a stream the Go decoder keeps stopping at does not restart it again and again. A schema
# change the decoder handed over is past once it is applied: the Go decoder's turn comes at the
# next commit (a live stream at tens of thousands of changes/s would otherwise lag behind the slow
# reader for these seconds at every statement).
NATIVE_RETRY_SECONDS = 5.0


class PythonLive:
    """One stretch of the live path on python-mysql-replication (see the module docstring)."""

    def __init__(self, state: StreamState) -> None:
        self._state = state

    def run(
        self,
        checkpoint: Checkpoint,
        start: BinlogOffset,
        event_filter: BinlogSplitFilter,
        should_stop: Callable[[], bool],
        probe: BacklogProbe | None,
        until: BinlogOffset | None = None,
        retry_seconds: float = NATIVE_RETRY_SECONDS,
    ) -> tuple[Checkpoint, str | None]:
        """The live reader from ``start``; returns the checkpoint (everything up to it committed)
        and why it stopped: None (stopped or caught up), "behind" (the source ran ``probe``'s
        threshold ahead) or "native" (it committed past ``until``, and read for at least
        ``retry_seconds``: the Go decoder's turn again)."""
        reader = StreamingChangeReader(
            self._state.source,
            self._state.settings.server_id,
            self._state.schemas,
            heartbeat_seconds=float(self._state.settings.binlog.heartbeat_interval_seconds),
            expect_server_id=self._state.settings.source_server_id,
        )
        overrides = self._state.settings.chunk_key_overrides
        tracker = SchemaTracker(self._state.source, self._state.schemas, overrides, self._state.loaded_at)
        thread = ReaderThread(reader, start, tracker, capacity=self._state.settings.binlog.batch_rows * 2)
        thread.start()
        try:
            return self._consume(thread, checkpoint, event_filter, should_stop, probe, until, retry_seconds)
        finally:
            self._state.interleaved.abandon()  # what it held back is incomplete without this reader
            if self._state.capture is not None:
                self._state.capture.abandon()
            # Not reader.close() from this thread: it would race the reader's blocked socket read.
            # request_stop wakes that read, so the reader closes its own connection right away
            # instead of at the next heartbeat (--exit-when-caught-up on an idle source).
            thread.stop()
            reader.request_stop()
            thread.join(timeout=2 * self._state.settings.binlog.heartbeat_interval_seconds + 1)

    def _consume(
        self,
        thread: ReaderThread,
        checkpoint: Checkpoint,
        event_filter: BinlogSplitFilter,
        should_stop: Callable[[], bool],
        probe: BacklogProbe | None,
        until: BinlogOffset | None = None,
        retry_seconds: float = NATIVE_RETRY_SECONDS,
    ) -> tuple[Checkpoint, str | None]:
        spec = self._state.settings.binlog
        began = time.monotonic()
        stop_at = self._state.settings.stop_at
        interval = spec.batch_interval_ms / 1000
        batch = Batch()
        decoded: set[TableId] = set()  # tables with rows decoded in this stream (schema_apply.py)
        cut_early = False  # the batch ends at its next boundary (_cuts_early)
        while True:
            try:
                item = thread.queue.get(timeout=max(0.02, interval - (time.monotonic() - batch.started)))
            except queue.Empty:
                item = None
                if not batch.open_events and batch.end is None:
                    checkpoint = self._commit_beside(checkpoint)  # a quiet source: splits go on
            if item is END:
                if thread.error is not None:
                    raise thread.error
                return self._commit(batch, checkpoint), None
            if isinstance(item, ChangeEvent):
                decoded.add(item.table)
                if item.table not in self._state.failures:
                    routed = self._state.interleaved.route(item)  # snapshotted beside the stream
                    batch.open_events.extend(event_filter.filter_event(item) if routed is None else routed)
                    self._mark_cascades(batch, item, event_filter)
            elif isinstance(item, BinlogOffset):
                batch.close_transaction(item)
                event_filter.advance_to(item)
                cut_early = cut_early or self._cuts_early(item)
            elif isinstance(item, SchemaInUse):
                captured = item.table in self._state.schemas  # not a table no longer captured
                if (
                    captured
                    and item.schema != self._state.schemas[item.table]
                    and item.table not in self._state.failures
                ):
                    if batch.touches(item.table):
                        checkpoint = self._commit(batch, checkpoint)
                        batch = batch.next()
                    self._state.schemas[item.table] = item.schema
            elif isinstance(item, SchemaChange):
                checkpoint = self._commit(batch, checkpoint)
                checkpoint, event_filter = self._apply_schema_change(item, checkpoint, decoded, event_filter)
                batch = Batch()
                self._state.interleaved.schema_changed(checkpoint, _tables_of(item))
                event_filter = self._state.build_filter(checkpoint)  # tables renamed, dropped, restarted
                event_filter.advance_to(item.offset)
            elif isinstance(item, DdlStatement):
                batch.close_transaction(item.offset)  # DDL of other tables: only a boundary
                if self._state.capture is not None:
                    self._state.capture.saw(item)
                cut_early = cut_early or self._cuts_early(item.offset)
            elif isinstance(item, TablesAdded) and self._state.capture is not None:
                checkpoint = self._state.capture.added(checkpoint, item.tables)
                event_filter = self._refresh_filter(checkpoint, event_filter)
            elif isinstance(item, UndecodableRows):
                self._state.failures.fail(
                    item.table, decode_failure_message(item.table, item.offset, item.detail)
                )
                self._state.interleaved.forget([item.table])
            caught_up = stop_at is not None and batch.end is not None and batch.end >= stop_at
            caught_up = caught_up or (stop_at is not None and offset_of(checkpoint) >= stop_at)
            caught_up = caught_up and not self._state.busy()  # tables snapshotted beside count too
            due = len(batch.events) >= spec.batch_rows or time.monotonic() - batch.started >= interval
            if batch.end is not None and (due or cut_early or caught_up or should_stop()):
                checkpoint = self._commit(batch, checkpoint)
                batch, cut_early = batch.next(), False
                if self._state.capture is not None:
                    self._state.capture.passed(offset_of(checkpoint))
                if self._state.capture is not None and self._state.capture.pending():
                    checkpoint = self._state.capture.follow(checkpoint, thread.add_tables)
                    # The open transaction's events of tables no longer captured go too.
                    batch.open_events[:] = [e for e in batch.open_events if e.table in self._state.schemas]
                event_filter = self._refresh_filter(checkpoint, event_filter)
                # The open transaction's events are dropped: catch-up reads it again from the
                # committed boundary.
                if probe is not None and not caught_up and probe.behind(offset_of(checkpoint)):
                    return checkpoint, "behind"
                past = until is not None and offset_of(checkpoint) > until and not self._state.busy()
                if past and not caught_up and time.monotonic() - began >= retry_seconds:
                    return checkpoint, "native"
            if (caught_up or should_stop()) and batch.end is None and not batch.open_events:
                return checkpoint, None

    def _cuts_early(self, end: BinlogOffset) -> bool:
        """Whether the batch should end at ``end`` before its interval is up: a split read beside
        the stream that ``end`` lets through is then written (as DBLog emits a chunk at its high
        watermark), and a table to capture is followed. A new table's snapshot so moves at the
        pace of its reads, not one split per batch interval."""
        capture = self._state.capture
        return self._state.interleaved.ready(end) or (capture is not None and capture.pending())

    def _refresh_filter(self, checkpoint: Checkpoint, event_filter: BinlogSplitFilter) -> BinlogSplitFilter:
        """A new split filter when the captured tables changed or a snapshot beside the stream
        finished (until then interleaved.py routes its table, by the same watermarks)."""
        done = self._state.interleaved.done()
        if not done and not (self._state.capture is not None and self._state.capture.changed):
            return event_filter
        self._state.interleaved.release(done)
        if self._state.capture is not None:
            self._state.capture.changed = False
        return self._state.build_filter(checkpoint)

    def _commit_beside(self, checkpoint: Checkpoint) -> Checkpoint:
        """With nothing read since the last commit, splits read as of it are written now
        instead of at the next heartbeat."""
        end = checkpoint.binlog_offset
        if end is None or not self._state.interleaved.ready(end):
            return checkpoint
        due: list[ChangeEvent] = []
        opened: list[ChangeEvent] = []
        checkpoint = self._state.interleaved.commit(checkpoint, end, due, opened, self._state.failures.fail)
        assert not opened, "nothing was read after the last commit"
        self._state.apply_events(due, end)
        checkpoint = self._state.with_failures(checkpoint)
        self._state.save(checkpoint)
        return checkpoint

    def _mark_cascades(self, batch: Batch, event: ChangeEvent, event_filter: BinlogSplitFilter) -> None:
        if self._state.cascades:
            at = len(batch.events) + len(batch.open_events)
            batch.marks.extend(
                (at, c) for c in self._state.cascades.cascades(event, event_filter, self._state.schemas)
            )

    def _apply_schema_change(
        self, change: SchemaChange, checkpoint: Checkpoint, decoded: set[TableId], splits: BinlogSplitFilter
    ) -> tuple[Checkpoint, BinlogSplitFilter]:
        """At the DDL's place in the stream: follow it in the target (schema_apply.py); then
        checkpoint past the statement (a crash before that repeats it, idempotently). A table
        renamed or dropped changes the split filter, which is returned."""
        follow = self._state.sink, self._state.schemas, self._state.failures, self._state.listener
        moved = apply_schema_change(change, *follow, decoded, splits)
        self._state.history.followed(change, self._state.schemas)
        checkpoint = replace(checkpoint, binlog_offset=change.offset)
        if moved:
            checkpoint, splits = self._moved_tables(moved, checkpoint, decoded)
        checkpoint = self._state.with_failures(checkpoint)
        self._state.save(checkpoint)
        return checkpoint, splits

    def _moved_tables(
        self, moved: list[TableMove], checkpoint: Checkpoint, decoded: set[TableId]
    ) -> tuple[Checkpoint, BinlogSplitFilter]:
        """Renamed tables' checkpoint entries under their new names, dropped ones' removed
        (engine/table_moves.py), and the split filter of the tables streamed now."""
        from sparkcdc.core.checkpoint import move_table, without_table

        self._state.history.moved(moved)
        for move in moved:
            if move.new is None:
                checkpoint = without_table(checkpoint, move.table)
                continue
            checkpoint = move_table(checkpoint, move.table, move.new)
            if move.table in decoded:
                decoded.add(move.new)
        return checkpoint, self._state.build_filter(checkpoint)

    def _commit(self, batch: Batch, checkpoint: Checkpoint) -> Checkpoint:
        if batch.end is None:
            return checkpoint
        marks = batch.closed_marks()
        end, follower = batch.end, self._state.cascades
        read_at, started = time.time(), time.perf_counter()
        # Splits read beside the stream as of a watermark up to here are written first; what
        # they held back after it goes with the batch (one changelog file, in stream order).
        due: list[ChangeEvent] = []
        checkpoint = self._state.interleaved.commit(
            checkpoint, end, due, batch.open_events, self._state.failures.fail
        )
        if follower and batch.events:  # every batch: a replayed one is cut to what the sink lacks
            source = checkpoint.source
            self._state.failures.apply_cascading(
                lambda events, kept: follower.apply(events, kept, self._state.schemas, end, source),
                batch.events,
                marks,
                end,
            )
            self._state.apply_events(due, end)
        else:
            self._state.apply_events(_in_stream_order(batch.events, due), end)
        checkpoint = collapse_pure_tables(replace(checkpoint, binlog_offset=batch.end))
        checkpoint = self._state.with_failures(checkpoint)
        seconds = time.perf_counter() - started
        self._state.save(checkpoint)
        newest = max((e.ts_ms for e in batch.events), default=0)
        counts = event_counts(self._state.failures.live_events(batch.events))
        commit = BatchCommit(len(batch.events), batch.end, seconds, newest, counts, read_at)
        self._state.listener.batch_committed(commit)
        return checkpoint


def _in_stream_order(events: list[ChangeEvent], due: list[ChangeEvent]) -> list[ChangeEvent]:
    if not due:
        return events
    return sorted([*events, *due], key=lambda e: (e.offset.sort_key(), e.index))


def _tables_of(change: SchemaChange) -> list[TableId]:
    return [*(e.table for e in change.evolutions), *change.failures, *change.truncated]


def offset_of(checkpoint: Checkpoint) -> BinlogOffset:
    return checkpoint.binlog_offset or BinlogOffset("x.0", 0)
