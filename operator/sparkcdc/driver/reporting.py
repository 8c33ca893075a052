"""What the driver pod reports while it runs: ``status.progress`` and Prometheus metrics.

:class:`DriverProgress` is the engine's :class:`PipelineListener` in the driver pod. It keeps the
progress counters, writes them to ``status.progress`` through the fenced status store (coalesced
with the checkpoint writes, at most one write a second) and feeds the driver's metrics
(driver/metrics.py; docs/operations.md, "Metrics", maps them to Debezium's and Flink CDC's names).

**Lag.** Each committed batch (``BatchCommit``) says how long the sink took to apply it, when the
reader handed it over and the newest source timestamp (``ts_ms``) of its row events. The emit lag
(``status.progress.lagSeconds``, Flink CDC's ``currentEmitEventTimeLag``, Debezium's
``MilliSecondsBehindSource``) is the time the batch was committed minus that timestamp; the fetch
lag (``currentFetchEventTimeLag``) is the time it was read minus that timestamp, so the difference
is what the sink and the checkpoint took. The binlog's timestamps have one-second resolution, so
both can be up to a second high. A batch without captured row events — the reader passed only
heartbeats, which the source sends when it has nothing more to send, or other tables'
transactions — sets both to 0: the pipeline has applied everything of its tables it has read. A
driver that stops committing keeps its last value; ``seconds_since_last_event`` and ``connected``
move on their own (computed when scraped), and the operator's ``Stalled`` condition covers that
case. During the snapshot, lag is not reported; parallel catch-up's reduced ranges carry no event
times, so its rounds report 0 and ``binlog_bytes_behind`` says how far behind it is.

The counters in ``status.progress`` continue across driver restarts: rows come from the finished
splits in the checkpoint (exact), events applied from the previous ``status.progress`` (a batch
replayed after a crash is counted again). ``warnings`` are the engine's warnings of this run (the
last ten) after the errors of the tables the checkpoint marks failed. ``splitsTotal`` counts the
splits the checkpoint holds: once streaming is past a table's watermarks its splits collapse into
one (rule 4), so the count shrinks then.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from sparkcdc.api.status import BinlogRetention, FailedTable, Progress
from sparkcdc.core.checkpoint import Checkpoint, Phase
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.source_identity import SourceIdentity
from sparkcdc.core.tables import TableId
from sparkcdc.driver.metrics import BINLOG_READERS, DriverMetrics
from sparkcdc.engine.listener import BatchCommit, PipelineListener

if TYPE_CHECKING:
    from sparkcdc.spark.snapshot import SplitSummary

log = logging.getLogger("sparkcdc.driver")
MAX_WARNINGS = 10
# The binlog reader counts as connected while its batches (the source's heartbeats close empty
# ones) come at least this many heartbeat intervals apart.
CONNECTED_HEARTBEATS = 3
__all__ = ["DriverMetrics", "DriverProgress", "StoredCheckpoint"]  # DriverMetrics: main.py imports it here


@dataclass(frozen=True)
class StoredCheckpoint:
    """The checkpoint the store holds (None: the pipeline has none yet). It never claims more
    than the sink committed (architecture §3 rule 6), so it says how far the sink holds the source."""

    checkpoint: Checkpoint | None


class DriverProgress(PipelineListener):
    """Progress counters → ``status.progress`` (via ``push``) and :class:`DriverMetrics`."""

    def __init__(
        self,
        push: Callable[[dict[str, Any]], None],
        metrics: DriverMetrics,
        *,
        checkpoint: Checkpoint | None = None,
        events_applied: int = 0,
        clock: Callable[[], float] = time.time,
        heartbeat_seconds: float = 30.0,
    ) -> None:
        """``heartbeat_seconds``: the source's heartbeat period (spec.binlog), which says how long
        the binlog reader may go without a commit and still count as connected."""
        self._push_to, self.metrics, self._clock = push, metrics, clock
        self._connected_window = CONNECTED_HEARTBEATS * heartbeat_seconds
        self._totals: dict[TableId, int] = {}
        self._finished: dict[TableId, int] = {}
        self._rows: dict[TableId, int] = {}
        self._tables: set[TableId] = set()
        # Conditions worth a look, newest last: failed tables stay failed across restarts.
        self._warnings: list[str] = []
        self._failed: dict[TableId, str] = {}  # status.progress.failedTables
        self._offset: BinlogOffset | None = None
        if checkpoint is not None:
            # A resumed driver reports where it resumes from the first push on (the source check
            # pushes before anything is planned or read): a status showing no splits and no offset
            # would read as a fresh snapshot to the operator until the next report.
            for table, infos in checkpoint.finished.items():
                self._rows[table] = sum(i.rows for i in infos)
                self._finished[table] = len(infos)
            self._totals = {t: plan.split_count() for t, plan in checkpoint.plans.items()}
            self._offset = checkpoint.binlog_offset
            self._tables.update(checkpoint.plans)
            self._warnings = [
                s.error for s in checkpoint.tables.values() if s.phase is Phase.FAILED and s.error
            ]
            self._failed = {t: s.error for t, s in checkpoint.tables.items() if s.phase is Phase.FAILED}
        self._events = events_applied
        self._lag: float | None = None
        self._source: str | None = None  # the source server, once checked at start
        self._retention: BinlogRetention | None = None  # driver/retention.py's last look
        self._last_commit_at: str | None = None  # the binlog phase's heartbeat (status.progress)
        self._lock = threading.Lock()
        self._stored: StoredCheckpoint | None = None  # None until the engine loaded it
        # This driver's snapshot: when it began each table and the whole, and when they ended.
        self._snapshot_began: float | None = None
        self._snapshot_ended: float | None = None
        self._table_began: dict[TableId, float] = {}
        self._table_ended: dict[TableId, float] = {}
        self._last_event_at: float | None = None  # when the last batch with row events was read
        self._last_commit: float | None = None  # when the binlog phase last committed (clock)
        if self._offset is not None:
            self._set_position(self._offset)
        metrics.watch(self._since_last_event, self._connected, self._snapshot_seconds)

    # -- PipelineListener ------------------------------------------------------------------------
    def message(self, text: str) -> None:
        log.info("%s", text)

    def warning(self, text: str) -> None:
        log.warning("%s", text)
        kept = [w for w in self._warnings if w != text][-(MAX_WARNINGS - 1) :]
        self._warnings = [*kept, text]
        self._push()

    def table_failed(self, table: TableId, message: str) -> None:
        self._failed[table] = message
        self.warning(message)  # pushes

    def snapshot_planned(self, totals: Mapping[TableId, int], finished: Mapping[TableId, int]) -> None:
        self._totals, self._finished = dict(totals), dict(finished)
        self._tables.update(totals)
        now = self._clock()
        for table in totals:
            self._set_split_gauges(table)
            if self._pending(table) and table not in self._table_began:
                self._table_began[table] = now
                self._snapshot_began = self._snapshot_began or now
                self._snapshot_ended = None
        self._snapshot_progressed(now)
        self._push()

    def splits_finished(self, summaries: Sequence[SplitSummary]) -> None:
        for summary in summaries:
            table = summary.split.table
            self._finished[table] = self._finished.get(table, 0) + 1
            # A tail split re-cut during the snapshot adds splits the plan's totals did not know.
            self._totals[table] = max(self._totals.get(table, 0), self._finished[table])
            self._rows[table] = self._rows.get(table, 0) + summary.rows
            self.metrics.snapshot_rows.labels(str(table)).inc(summary.rows)
            self._set_split_gauges(table)
        self._snapshot_progressed(self._clock())
        progress = self.progress()
        log.info(
            "%d/%d snapshot splits committed, %d rows",
            progress.splits_finished, progress.splits_total, progress.rows_snapshotted,
        )  # fmt: skip
        self._push_to(progress.to_k8s())

    def batch_committed(self, commit: BatchCommit) -> None:
        events, offset, now = commit.events, commit.offset, self._clock()
        if self._offset is None:  # the binlog phase runs: every planned split is committed
            for table in self._totals:
                self._finished[table] = max(self._finished.get(table, 0), self._totals[table])
                self._set_split_gauges(table)
        self._snapshot_progressed(now)
        self._offset = offset
        self._set_position(offset)
        self._events += events
        m = self.metrics
        m.binlog_events.inc(events)
        for (table, op), count in commit.changes.items():
            m.table_changes.labels(str(table), op).inc(count)
        newest = commit.newest_ms / 1000
        read_at = commit.read_at or now
        if events and commit.newest_ms:
            self._lag = max(0.0, now - newest)
            m.fetch_lag.set(max(0.0, read_at - newest))
        else:
            self._lag = 0.0
            m.fetch_lag.set(0.0)
        m.emit_lag.set(self._lag)
        if events:
            self._last_event_at = read_at
        if commit.sink_seconds:
            m.sink_commit.observe(commit.sink_seconds)
        self._last_commit = now
        self._last_commit_at = _rfc3339(now)
        self._push()

    def retention_observed(self, report: BinlogRetention) -> None:
        """What the source retains of the binlog this pipeline needs (driver/retention.py). Sent
        with the next progress report, not on its own: a status write of its own could be the
        first thing a driver replaced meanwhile does, fencing it before its sink transaction does."""
        self._retention = report

    def source_identified(self, identity: SourceIdentity) -> None:
        self._source = identity.describe()
        self._push()

    def tables_prepared(self, tables: Sequence[TableId]) -> None:
        self._tables.update(tables)

    def binlog_reader(self, reader: str) -> None:
        for name in BINLOG_READERS:
            self.metrics.binlog_reader.labels(name).set(1 if name == reader else 0)

    def backlog_measured(self, bytes_behind: int) -> None:
        self.metrics.bytes_behind.set(bytes_behind)

    def checkpoint_stored(self, checkpoint: Checkpoint | None) -> None:
        with self._lock:  # read by the verification thread
            self._stored = StoredCheckpoint(checkpoint)

    def stored_checkpoint(self) -> StoredCheckpoint | None:
        """The checkpoint the store holds as of the engine's last load or save; None before the
        engine loaded it (nothing is known yet)."""
        with self._lock:
            return self._stored

    # -- output ----------------------------------------------------------------------------------
    def progress(self) -> Progress:
        return Progress(
            splits_total=sum(self._totals.values()),
            splits_finished=sum(self._finished.values()),
            rows_snapshotted=sum(self._rows.values()),
            events_applied=self._events,
            lag_seconds=None if self._lag is None else round(self._lag, 3),
            last_commit_at=self._last_commit_at,
            binlog_offset=None if self._offset is None else str(self._offset),
            gtid_position=(self._offset.gtid_set or None) if self._offset is not None else None,
            source=self._source,
            binlog_retention=self._retention,
            tables=len(self._tables),
            warnings=list(self._warnings),
            failed_tables=[FailedTable(table=str(t), error=e) for t, e in sorted(self._failed.items())],
        )

    def _pending(self, table: TableId) -> bool:
        return self._finished.get(table, 0) < self._totals.get(table, 0)

    def _snapshot_progressed(self, now: float) -> None:
        """Closes the snapshot durations of the tables (and the whole) this driver finished."""
        for table, began in self._table_began.items():
            if table not in self._table_ended and not self._pending(table):
                self._table_ended[table] = now
            ended = self._table_ended.get(table, now)
            self.metrics.snapshot_table_duration.labels(str(table)).set(ended - began)
        running = any(t not in self._table_ended for t in self._table_began)
        if self._snapshot_began is not None and not running and self._snapshot_ended is None:
            self._snapshot_ended = now
        self.metrics.snapshot_running.set(1 if running else 0)

    def _snapshot_seconds(self) -> float:
        if self._snapshot_began is None:
            return 0.0
        return (self._snapshot_ended or self._clock()) - self._snapshot_began

    def _since_last_event(self) -> float:
        return -1.0 if self._last_event_at is None else max(0.0, self._clock() - self._last_event_at)

    def _connected(self) -> float:
        last = self._last_commit
        return 1.0 if last is not None and self._clock() - last <= self._connected_window else 0.0

    def _set_position(self, offset: BinlogOffset) -> None:
        number = offset.file.rpartition(".")[2]
        if number.isdigit():
            self.metrics.binlog_file.set(int(number))
        self.metrics.binlog_position.set(offset.pos)

    def _set_split_gauges(self, table: TableId) -> None:
        finished = self._finished.get(table, 0)
        pending = max(0, self._totals.get(table, 0) - finished)
        self.metrics.snapshot_splits.labels(str(table), "finished").set(finished)
        self.metrics.snapshot_splits.labels(str(table), "pending").set(pending)

    def _push(self) -> None:
        self._push_to(self.progress().to_k8s())


def _rfc3339(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
