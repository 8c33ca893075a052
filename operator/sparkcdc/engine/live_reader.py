"""The Python live reader's pieces: the reader thread and the batch it fills.

A reader thread decodes the binlog with python-mysql-replication into a bounded queue while the
driver applies the previous batch (engine/streaming.py), so reading the next batch overlaps
writing the current one. A batch ends only at a transaction boundary.
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass, field

from sparkcdc.core.cascades import Cascade
from sparkcdc.core.events import ChangeEvent
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.tables import TableId
from sparkcdc.engine.schema_changes import SchemaTracker
from sparkcdc.mysql.binlog.reader import DdlStatement
from sparkcdc.mysql.binlog.stream import StreamingChangeReader

__all__ = ["END", "Batch", "ReaderThread"]

END = object()  # the reader's last item: the stream ended (an error is on the thread)


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

    def run(self) -> None:
        try:
            for item in self._reader.stream(self._start):
                if isinstance(item, DdlStatement):
                    # Judged before the next event is decoded: later rows need the new definition.
                    change = self._tracker.judge(item, self._reader)
                    out: object = change if change is not None else item
                else:
                    out = item
                while not self._halt.is_set():
                    try:
                        self.queue.put(out, timeout=0.2)
                        break
                    except queue.Full:
                        continue
                if self._halt.is_set():
                    return
        except BaseException as err:
            self.error = err
        finally:
            if not self._halt.is_set():
                self.queue.put(END)
            # Halted: the consumer is gone, and a full queue would block this thread for good.

    def stop(self) -> None:
        self._halt.set()
