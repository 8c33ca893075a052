"""The binlog phase: one reader from the minimum high watermark, micro-batches into the sink.

A reader thread decodes the binlog into a bounded queue while the driver applies the previous
batch, so reading the next batch overlaps writing the current one. A batch ends only at a
transaction boundary; its offset is checkpointed after the sink committed it (DESIGN §3
rules 4–6), so a crash replays at most the uncommitted batch, which converges because every
batch is applied as last images per key.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace

from sparkcdc.api.spec import BinlogSpec
from sparkcdc.core.checkpoint import Checkpoint, collapse_pure_tables
from sparkcdc.core.event_filter import BinlogSplitFilter
from sparkcdc.core.events import ChangeEvent
from sparkcdc.core.microbatch import build_batch
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.binlog_reader import BinlogChangeReader, DdlStatement
from sparkcdc.mysql.connection import SourceConfig
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks.base import Sink
from sparkcdc.spark.listener import PipelineListener
from sparkcdc.spark.planning import key_order

_END = object()


@dataclass
class Batch:
    """Events of whole transactions up to ``end``, plus those of the transaction still open."""

    events: list[ChangeEvent] = field(default_factory=list)
    open_events: list[ChangeEvent] = field(default_factory=list)
    end: BinlogOffset | None = None
    started: float = field(default_factory=time.monotonic)

    def close_transaction(self, end: BinlogOffset) -> None:
        self.events.extend(self.open_events)
        self.open_events = []
        self.end = end

    def next(self) -> Batch:
        return Batch(open_events=self.open_events)


@dataclass(frozen=True)
class StreamSettings:
    server_id: int
    binlog: BinlogSpec
    # Stop once everything up to this offset is committed (``--exit-when-caught-up``).
    stop_at: BinlogOffset | None = None


class _ReaderThread(threading.Thread):
    """Decodes the binlog into a bounded queue; errors are handed to the consumer."""

    def __init__(self, items: Iterator[ChangeEvent | BinlogOffset | DdlStatement], capacity: int) -> None:
        super().__init__(name="sparkcdc-binlog-reader", daemon=True)
        self.queue: queue.Queue[object] = queue.Queue(maxsize=capacity)
        self._items = items
        self.error: BaseException | None = None
        self._stop = threading.Event()

    def run(self) -> None:
        try:
            for item in self._items:
                while not self._stop.is_set():
                    try:
                        self.queue.put(item, timeout=0.2)
                        break
                    except queue.Full:
                        continue
                if self._stop.is_set():
                    return
        except BaseException as err:
            self.error = err
        finally:
            self.queue.put(_END)

    def stop(self) -> None:
        self._stop.set()


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
        self._schemas = dict(schemas)
        self._settings = settings
        self._listener = listener
        self._save = save
        self._row_keys = {t: s.row_key for t, s in schemas.items()}

    def build_filter(self, checkpoint: Checkpoint) -> BinlogSplitFilter:
        snapshotted = {t: checkpoint.finished.get(t, ()) for t in self._schemas if checkpoint.finished.get(t)}
        return BinlogSplitFilter(
            snapshotted,
            {t: self._schemas[t].chunk_key for t in snapshotted},
            {t: key_order(self._schemas[t]) for t in snapshotted},
            streaming=[t for t in self._schemas if t not in snapshotted],
        )

    def run(self, checkpoint: Checkpoint, start: BinlogOffset, should_stop: Callable[[], bool]) -> Checkpoint:
        """Stream from ``start`` until caught up (when ``stop_at`` is set) or ``should_stop``."""
        event_filter = self.build_filter(checkpoint)
        stop_at = self._settings.stop_at
        if stop_at is not None and not stop_at > start:
            return replace(checkpoint, binlog_offset=checkpoint.binlog_offset or start)
        reader = BinlogChangeReader(
            self._source,
            self._settings.server_id,
            self._schemas,
            blocking=True,
            heartbeat_seconds=float(self._settings.binlog.heartbeat_interval_seconds),
        )
        thread = _ReaderThread(reader.stream(start), capacity=self._settings.binlog.batch_rows * 2)
        thread.start()
        try:
            return self._consume(thread, checkpoint, event_filter, should_stop)
        finally:
            thread.stop()
            reader.close()

    def _consume(
        self,
        thread: _ReaderThread,
        checkpoint: Checkpoint,
        event_filter: BinlogSplitFilter,
        should_stop: Callable[[], bool],
    ) -> Checkpoint:
        spec = self._settings.binlog
        stop_at = self._settings.stop_at
        interval = spec.batch_interval_ms / 1000
        batch = Batch()
        while True:
            try:
                item = thread.queue.get(timeout=max(0.02, interval - (time.monotonic() - batch.started)))
            except queue.Empty:
                item = None
            if item is _END:
                if thread.error is not None:
                    raise thread.error
                return self._commit(batch, checkpoint)
            if isinstance(item, ChangeEvent):
                batch.open_events.extend(event_filter.filter_event(item))
            elif isinstance(item, BinlogOffset):
                batch.close_transaction(item)
                event_filter.advance_to(item)
            elif isinstance(item, DdlStatement):
                batch.close_transaction(item.offset)
                where = item.schema or "the binlog"
                self._listener.message(f"DDL in {where} at {item.offset}: {item.query[:200]}")
            caught_up = stop_at is not None and batch.end is not None and batch.end >= stop_at
            due = len(batch.events) >= spec.batch_rows or time.monotonic() - batch.started >= interval
            if batch.end is not None and (due or caught_up or should_stop()):
                checkpoint = self._commit(batch, checkpoint)
                batch = batch.next()
                if caught_up or should_stop():
                    return checkpoint
            elif should_stop() and not batch.open_events:
                return checkpoint

    def _commit(self, batch: Batch, checkpoint: Checkpoint) -> Checkpoint:
        if batch.end is None:
            return checkpoint
        for changes in build_batch(batch.events, self._row_keys):
            self._sink.apply_changes(self._schemas[changes.table], changes)
        checkpoint = collapse_pure_tables(replace(checkpoint, binlog_offset=batch.end))
        self._save(checkpoint)
        self._listener.batch_committed(len(batch.events), batch.end)
        return checkpoint
