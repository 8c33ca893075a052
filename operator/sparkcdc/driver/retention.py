"""The driver's half of the ``BinlogExpiry`` warning: what the source retains of the binlog the
pipeline needs, reported in ``status.progress.binlogRetention`` for the operator to judge
(core/binlog_retention.py) — also after this driver is gone, which is when it matters most.

The needed file is the one the checkpoint resumes from: the committed binlog offset, or during
the snapshot the lowest high watermark of the finished splits (where the binlog phase will
start). How early the source may purge it by age has only a lower bound (the module docstring of
core/binlog_retention.py says why): files are written in order, so a file last written at T or
later bounds every later file too; the bound only grows, across drivers through the previous
report.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from sparkcdc.api.status import BinlogRetention
from sparkcdc.core.binlog_retention import purge_not_before
from sparkcdc.core.checkpoint import Checkpoint
from sparkcdc.core.event_filter import start_offset
from sparkcdc.core.offsets import binlog_file_index
from sparkcdc.core.reconcile_types import format_time, parse_time
from sparkcdc.driver.reporting import DriverProgress
from sparkcdc.engine.binlog_lost import binlog_expiry_seconds
from sparkcdc.mysql.connection import SourceConfig, connect
from sparkcdc.mysql.flavor import detect_flavor
from sparkcdc.mysql.queries import binlog_files, current_offset

__all__ = [
    "REPUBLISH_AFTER",
    "RETENTION_CHECK_SECONDS",
    "RetentionTracker",
    "RetentionWatch",
    "needed_file",
    "start_retention_watch",
    "worth_publishing",
]

log = logging.getLogger(__name__)

RETENTION_CHECK_SECONDS = 60.0
# A bound that only moves is published again this far on, not at every look: each publication is
# a status write, and the operator's margins are hours.
REPUBLISH_AFTER = timedelta(minutes=10)


def worth_publishing(previous: BinlogRetention | None, report: BinlogRetention) -> bool:
    """Whether ``report`` says something ``previous`` (the last one published) did not."""
    if previous is None:
        return True
    shape = ("needed_file", "current_file", "files_before", "expire_seconds")
    if any(getattr(previous, f) != getattr(report, f) for f in shape):
        return True
    before, now = parse_time(previous.purge_not_before), parse_time(report.purge_not_before)
    if before is None or now is None:
        return before != now
    return now - before >= REPUBLISH_AFTER


def needed_file(checkpoint: Checkpoint | None) -> str | None:
    """The binlog file a resume from ``checkpoint`` reads first; None while nothing needs one."""
    if checkpoint is None:
        return None
    if checkpoint.binlog_offset is not None:
        return checkpoint.binlog_offset.file
    infos = checkpoint.all_finished_infos()
    return start_offset(infos).file if infos else None


@dataclass(frozen=True)
class SourceRetention:
    """One look at the source: its binlog files (oldest first), its current one, its age limit."""

    files: tuple[str, ...]
    current_file: str
    expire_seconds: float | None


@dataclass
class RetentionTracker:
    """The lower bound of when files were last written, from looks at the source over time."""

    # file index -> a moment the file was the source's current one: it and every later file
    # were last written at that moment or later
    seen: dict[int, datetime] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def carry(self, previous: BinlogRetention | None) -> None:
        """Continue from a previous driver's report."""
        if previous is None or previous.expire_seconds is None:
            return
        moment = parse_time(previous.purge_not_before)
        if moment is not None:
            self._raise(
                binlog_file_index(previous.needed_file), moment - timedelta(seconds=previous.expire_seconds)
            )

    def report(self, needed: str, source: SourceRetention, now: datetime) -> BinlogRetention:
        self._raise(binlog_file_index(source.current_file), now)
        index = binlog_file_index(needed)
        with self._lock:
            written = max((m for i, m in self.seen.items() if i <= index), default=None)
        purge = purge_not_before(source.expire_seconds, written)
        return BinlogRetention(
            needed_file=needed,
            current_file=source.current_file,
            files_before=sum(1 for f in source.files if binlog_file_index(f) < index),
            expire_seconds=source.expire_seconds,
            purge_not_before=None if purge is None else format_time(purge),
            observed_at=format_time(now),
        )

    def _raise(self, index: int, moment: datetime) -> None:
        with self._lock:
            if index not in self.seen or moment > self.seen[index]:
                self.seen[index] = moment


def look_at_source(source: SourceConfig) -> SourceRetention:
    conn = connect(source)
    try:
        position = current_offset(conn, detect_flavor(conn))
        files = tuple(name for name, _size in binlog_files(conn))
        expire = binlog_expiry_seconds(conn)
    finally:
        conn.close()
    return SourceRetention(files, position.file, expire)


class RetentionWatch(threading.Thread):
    """Looks at the source every ``interval`` seconds and hands the report to ``publish``."""

    def __init__(
        self,
        look: Callable[[], SourceRetention],
        checkpoint: Callable[[], Checkpoint | None],
        publish: Callable[[BinlogRetention], None],
        tracker: RetentionTracker,
        interval: float = RETENTION_CHECK_SECONDS,
        clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
    ) -> None:
        super().__init__(name="binlog-retention", daemon=True)
        self._look, self._checkpoint, self._publish = look, checkpoint, publish
        self._tracker, self._interval, self._clock = tracker, interval, clock
        self._stopped = threading.Event()
        self._published: BinlogRetention | None = None

    def run(self) -> None:
        while not self._stopped.is_set():
            self.check()
            self._stopped.wait(self._interval)

    def check(self) -> BinlogRetention | None:
        """One look; a source that cannot be reached now is skipped (the engine reports that)."""
        try:
            source = self._look()
        except Exception as err:  # a warning's probe must never stop the pipeline
            log.debug("binlog retention not checked: %s", type(err).__name__)
            return None
        needed = needed_file(self._checkpoint())
        if needed is None:
            self._tracker.report(source.current_file, source, self._clock())  # remember the moment
            return None
        report = self._tracker.report(needed, source, self._clock())
        if worth_publishing(self._published, report):
            self._publish(report)
            self._published = report
        return report

    def stop(self) -> None:
        self._stopped.set()


def start_retention_watch(
    source: SourceConfig, progress: DriverProgress, last_status: dict[str, Any]
) -> RetentionWatch:
    """The watch of a driver pod, continuing from the previous driver's report in ``last_status``."""
    tracker = RetentionTracker()
    tracker.carry(previous_report(last_status))

    def checkpoint() -> Checkpoint | None:
        stored = progress.stored_checkpoint()
        return None if stored is None else stored.checkpoint

    watch = RetentionWatch(lambda: look_at_source(source), checkpoint, progress.retention_observed, tracker)
    watch.start()
    return watch


def previous_report(status: dict[str, Any]) -> BinlogRetention | None:
    document = (status.get("progress") or {}).get("binlogRetention")
    try:
        return None if not document else BinlogRetention.model_validate(document)
    except ValueError:
        return None
