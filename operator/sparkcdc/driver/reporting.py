"""What the driver pod reports while it runs: ``status.progress`` and Prometheus metrics.

:class:`DriverProgress` is the engine's :class:`PipelineListener` in the driver pod. It keeps the
progress counters, writes them to ``status.progress`` through the fenced status store (coalesced
with the checkpoint writes, at most one write a second) and feeds the driver's metrics:

============================================== ===========================================================
``sparkcdc_snapshot_rows_total{table}``        rows the snapshot committed to the sink (this process)
``sparkcdc_snapshot_splits{table,state}``      snapshot splits ``pending`` / ``finished`` (checkpointed)
``sparkcdc_binlog_events_applied_total``       binlog row events applied to the sink (this process)
``sparkcdc_binlog_lag_seconds``                lag of the last committed binlog batch (see below)
``sparkcdc_sink_commit_seconds``               time the sink took to apply a binlog micro-batch
``sparkcdc_driver_epoch``                      the fencing epoch this driver runs under
============================================== ===========================================================

**Lag.** Each committed batch (``BatchCommit``) says how long the sink took to apply it and the
newest source timestamp (``ts_ms``) of its row events. When a batch is committed, lag = now − that
timestamp (the binlog's timestamps have one-second resolution, so
the figure can be up to a second high). A batch without captured row events — the reader passed
only heartbeats, which the source sends when it has nothing more to send, or other tables'
transactions — sets lag to 0: the pipeline has applied everything of its tables it has read. Lag
is measured when batches commit (as Debezium's ``MilliSecondsBehindSource`` and Flink CDC's
``currentEmitEventTimeLag``); a driver that stops committing keeps its last value, and the
operator's ``Stalled`` condition covers that case. During the snapshot, lag is not reported.

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

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from sparkcdc.api.status import FailedTable, Progress
from sparkcdc.core.checkpoint import Checkpoint, Phase
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.source_identity import SourceIdentity
from sparkcdc.core.tables import TableId
from sparkcdc.engine.listener import BatchCommit, PipelineListener

if TYPE_CHECKING:
    from sparkcdc.spark.snapshot import SplitSummary

log = logging.getLogger("sparkcdc.driver")
MAX_WARNINGS = 10
COMMIT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class DriverMetrics:
    """The driver's Prometheus series (names in the style of Flink CDC's and Debezium's)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.snapshot_rows = Counter(
            "sparkcdc_snapshot_rows", "Rows the snapshot committed to the sink.", ["table"], registry=r
        )
        self.snapshot_splits = Gauge(
            "sparkcdc_snapshot_splits", "Snapshot splits by state.", ["table", "state"], registry=r
        )
        self.events_applied = Counter(
            "sparkcdc_binlog_events_applied", "Binlog row events applied to the sink.", registry=r
        )
        self.lag = Gauge(
            "sparkcdc_binlog_lag_seconds",
            "Now minus the source time of the newest event of the last committed batch.",
            registry=r,
        )
        self.sink_commit = Histogram(
            "sparkcdc_sink_commit_seconds",
            "Time the sink took to apply one binlog micro-batch.",
            buckets=COMMIT_BUCKETS,
            registry=r,
        )
        self.epoch = Gauge("sparkcdc_driver_epoch", "The fencing epoch of this driver.", registry=r)

    def serve(self, port: int) -> bool:
        """Serve ``/metrics`` on ``port``; a port in use is logged, not fatal (metrics are optional)."""
        try:
            start_http_server(port, registry=self.registry)
        except OSError as err:
            log.warning("driver metrics not served: port %d: %s", port, err)
            return False
        log.info("driver metrics on :%d/metrics", port)
        return True


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
    ) -> None:
        self._push_to, self.metrics, self._clock = push, metrics, clock
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
        self._last_commit_at: str | None = None  # the binlog phase's heartbeat (status.progress)
        self._lock = threading.Lock()
        self._stored: StoredCheckpoint | None = None  # None until the engine loaded it

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
        for table in totals:
            self._set_split_gauges(table)
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
        progress = self.progress()
        log.info(
            "%d/%d snapshot splits committed, %d rows",
            progress.splits_finished, progress.splits_total, progress.rows_snapshotted,
        )  # fmt: skip
        self._push_to(progress.to_k8s())

    def batch_committed(self, commit: BatchCommit) -> None:
        events, offset = commit.events, commit.offset
        if self._offset is None:  # the binlog phase runs: every planned split is committed
            for table in self._totals:
                self._finished[table] = max(self._finished.get(table, 0), self._totals[table])
                self._set_split_gauges(table)
        self._offset = offset
        self._events += events
        self.metrics.events_applied.inc(events)
        if events and commit.newest_ms:
            self._lag = max(0.0, self._clock() - commit.newest_ms / 1000)
        else:
            self._lag = 0.0
        self.metrics.lag.set(self._lag)
        if commit.sink_seconds:
            self.metrics.sink_commit.observe(commit.sink_seconds)
        self._last_commit_at = _rfc3339(self._clock())
        self._push()

    def source_identified(self, identity: SourceIdentity) -> None:
        self._source = identity.describe()
        self._push()

    def tables_prepared(self, tables: Sequence[TableId]) -> None:
        self._tables.update(tables)

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
            tables=len(self._tables),
            warnings=list(self._warnings),
            failed_tables=[FailedTable(table=str(t), error=e) for t, e in sorted(self._failed.items())],
        )

    def _set_split_gauges(self, table: TableId) -> None:
        finished = self._finished.get(table, 0)
        pending = max(0, self._totals.get(table, 0) - finished)
        self.metrics.snapshot_splits.labels(str(table), "finished").set(finished)
        self.metrics.snapshot_splits.labels(str(table), "pending").set(pending)

    def _push(self) -> None:
        self._push_to(self.progress().to_k8s())


def _rfc3339(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
