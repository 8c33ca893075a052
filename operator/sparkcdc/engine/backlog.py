"""Is the live reader falling behind the source? The question that hands the stream back to
parallel catch-up (engine/catchup.py) while the pipeline runs, not only at its start.

One python-mysql-replication reader decodes far fewer events a second than a busy source can
write; without a way back to catch-up, a pipeline that falls behind stays behind for good. So the
live loop asks :class:`BacklogProbe` at every batch commit how many binlog bytes lie between the
committed offset and the source's current position; past ``binlog.parallelCatchupThresholdBytes``
the loop stops its reader at the committed transaction boundary and catch-up takes the backlog in
parallel ranges, after which the live reader starts again where catch-up ended. The probe asks the
source at most once per ``interval`` seconds (two cheap statements), and not before the live
reader has run that long, so the two never alternate faster than that. Each look is reported
(``report``): the driver shows it as its bytes behind the source.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from sparkcdc.core.catchup import backlog_bytes
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.mysql.connection import SourceConfig, connect
from sparkcdc.mysql.flavor import detect_flavor
from sparkcdc.mysql.queries import binlog_files, current_offset

__all__ = ["LAG_CHECK_SECONDS", "BacklogProbe"]

LAG_CHECK_SECONDS = 5.0


class BacklogProbe:
    """Measures the bytes between a committed offset and the source's position, now and then."""

    def __init__(
        self,
        source: SourceConfig,
        threshold_bytes: int,
        interval: float = LAG_CHECK_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        report: Callable[[int], None] | None = None,
    ) -> None:
        self._source = source
        self._report = report
        self._threshold = threshold_bytes
        self._interval = interval
        self._clock = clock
        self._next = clock() + interval  # the live reader gets one interval before the first look
        self.last_backlog = 0  # bytes, as of the last look

    def behind(self, committed: BinlogOffset) -> bool:
        """Whether the source is ``threshold_bytes`` or more ahead of ``committed``; False between
        looks."""
        now = self._clock()
        if now < self._next:
            return False
        self._next = now + self._interval
        self.last_backlog = self.measure(committed)
        if self._report is not None:
            self._report(self.last_backlog)
        return self.last_backlog >= self._threshold

    def measure(self, committed: BinlogOffset) -> int:
        conn = connect(self._source)
        try:
            position = current_offset(conn, detect_flavor(conn))
            files = binlog_files(conn)
        finally:
            conn.close()
        return backlog_bytes(committed, position, files) if position > committed else 0
