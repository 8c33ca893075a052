"""The Python live reader's pieces: the reader thread and the batch it fills.

A reader thread decodes the binlog with python-mysql-replication into a bounded queue while the
driver applies the previous batch (engine/streaming.py), so reading the next batch overlaps
writing the current one. A batch ends only at a transaction boundary.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from sparkcdc.core.cascades import Cascade
from sparkcdc.core.events import ChangeEvent
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.tables import TableId
from sparkcdc.engine.schema_changes import SchemaTracker
from sparkcdc.mysql.binlog.reader import DdlStatement
from sparkcdc.mysql.binlog.stream import StreamingChangeReader
from sparkcdc.mysql.schema import TableSchema

__all__ = ["END", "Batch", "ReaderThread", "TablesAdded"]

END = object()  # the reader's last item: the stream ended (an error is on the thread)


@dataclass(frozen=True)
class TablesAdded:
    """The reader decodes these tables from this item on (``ReaderThread.add_tables``): events
    of theirs before it were skipped, so a snapshot asked for after it misses nothing."""

    tables: tuple[TableId, ...]


@dataclass
class Batch:
    """Events of whole transactions up to ``end``, plus those of the transaction still open."""

    events: list[ChangeEvent] = field(default_factory=list)
    open_events: list[ChangeEvent] = field(default_factory=list)
    end: BinlogOffset | None = None
    started: float = field(default_factory=time.monotonic)
    # Referential actions (engine/cascading.py), each after the first n of events + open_events.
    marks: list[tuple[int, Cascade]] = field(default_factory=list)

    def close_transaction(self, end: BinlogOffset) -> None:
        self.events.extend(self.open_events)
        self.open_events = []
        self.end = end

    def next(self) -> Batch:
        done = len(self.events)
        return Batch(open_events=self.open_events, marks=[(i - done, c) for i, c in self.marks if i > done])

    def closed_marks(self) -> list[tuple[int, Cascade]]:
        return [(i, c) for i, c in self.marks if i <= len(self.events)]

    def touches(self, table: TableId) -> bool:
        return any(e.table == table for e in self.events) or any(e.table == table for e in self.open_events)


class ReaderThread(threading.Thread):
    """Decodes the binlog into a bounded queue, judging DDL on the way; errors are handed to the
    consumer."""

    def __init__(
        self, reader: StreamingChangeReader, start: BinlogOffset, tracker: SchemaTracker, capacity: int
    ) -> None:
        super().__init__(name="sparkcdc-binlog-reader", daemon=True)
        self.queue: queue.Queue[object] = queue.Queue(maxsize=capacity)
        self._reader = reader
        self._start = start
        self._tracker = tracker
        self.error: BaseException | None = None
        self._halt = threading.Event()
        self._inbox: list[tuple[Mapping[TableId, TableSchema | None], BinlogOffset | None]] = []
        self._inbox_lock = threading.Lock()

    def add_tables(
        self, schemas: Mapping[TableId, TableSchema | None], loaded_at: BinlogOffset | None
    ) -> None:
        """Decode these tables too (None: no more) from the reader's next item on, which is
        preceded by ``TablesAdded`` for the added ones; safe from any thread. The reader takes
        them between two binlog events, at the latest with the next heartbeat."""
        with self._inbox_lock:
            self._inbox.append((dict(schemas), loaded_at))

    def _take_inbox(self) -> TablesAdded | None:
        with self._inbox_lock:
            inbox, self._inbox = self._inbox, []
        added: list[TableId] = []
        for schemas, loaded_at in inbox:
            for table, schema in schemas.items():
                self._reader.set_schema(table, schema)
                self._tracker.track(table, schema, loaded_at)
                if schema is not None:
                    added.append(table)
        return TablesAdded(tuple(added)) if added else None

    def run(self) -> None:
        try:
            for item in self._reader.stream(self._start):
                if self._inbox and (added := self._take_inbox()) is not None and not self._put(added):
                    return
                if isinstance(item, DdlStatement):
                    # Judged before the next event is decoded: later rows need the new definition.
                    change = self._tracker.judge(item, self._reader)
                    out: object = change if change is not None else item
                else:
                    out = item
                if not self._put(out):
                    return
        except BaseException as err:
            self.error = err
        finally:
            if not self._halt.is_set():
                self.queue.put(END)
            # Halted: the consumer is gone, and a full queue would block this thread for good.

    def _put(self, item: object) -> bool:
        """Queue ``item``; False once halted."""
        while not self._halt.is_set():
            try:
                self.queue.put(item, timeout=0.2)
                return True
            except queue.Full:
                continue
        return False

    def stop(self) -> None:
        self._halt.set()
