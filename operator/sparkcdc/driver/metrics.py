"""The driver's Prometheus series, named after what Debezium and Flink CDC expose for the same thing.

Operators who run Debezium or Flink CDC already know which figures answer "is it keeping up?",
"is it connected?", "where is it in the binlog?" and "how far is the snapshot?"; naming ours after
theirs (docs/operations.md, "Metrics", has the mapping) lets them reuse their alerts and habits.
Every series has the ``sparkcdc_driver_`` prefix; the PodMonitor adds ``namespace`` and
``pipeline``. The values are fed by :class:`sparkcdc.driver.reporting.DriverProgress` from the
engine's listener calls; nothing here knows about the engine.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

__all__ = ["BINLOG_READERS", "COMMIT_BUCKETS", "DriverMetrics"]

log = logging.getLogger("sparkcdc.driver")
COMMIT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
# Who reads the binlog (engine/listener.py binlog_reader): every value is always exported, so that a
# dashboard shows the switches as steps instead of series that appear and vanish.
BINLOG_READERS = ("native", "python", "catchup")


class DriverMetrics:
    """The driver's Prometheus series (docs/operations.md, "Metrics")."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.epoch = Gauge("sparkcdc_driver_epoch", "The fencing epoch of this driver.", registry=r)
        # -- snapshot ----------------------------------------------------------------------------
        self.snapshot_rows = Counter(
            "sparkcdc_driver_snapshot_rows",
            "Rows the snapshot committed to the sink, by this driver (Debezium RowsScanned).",
            ["table"],
            registry=r,
        )
        self.snapshot_splits = Gauge(
            "sparkcdc_driver_snapshot_splits",
            "Snapshot splits by state, pending or finished (Flink CDC numSnapshotSplitsRemaining/Finished).",
            ["table", "state"],
            registry=r,
        )
        self.snapshot_running = Gauge(
            "sparkcdc_driver_snapshot_running",
            "1 while this driver snapshots (Debezium SnapshotRunning, Flink CDC isSnapshotting).",
            registry=r,
        )
        self.snapshot_duration = Gauge(
            "sparkcdc_driver_snapshot_duration_seconds",
            "How long this driver's snapshot has run, or ran once done (Debezium SnapshotDurationInSeconds).",
            registry=r,
        )
        self.snapshot_table_duration = Gauge(
            "sparkcdc_driver_snapshot_table_duration_seconds",
            "How long this driver's snapshot of a table has run, or ran once its last split committed.",
            ["table"],
            registry=r,
        )
        # -- binlog ------------------------------------------------------------------------------
        self.binlog_events = Counter(
            "sparkcdc_driver_binlog_events",
            "Binlog row events of captured tables applied to the sink (Debezium TotalNumberOfEventsSeen).",
            registry=r,
        )
        self.table_changes = Counter(
            "sparkcdc_driver_table_changes",
            "Changes applied per table: op create/update/delete per row event (Python reader), "
            "upsert/delete per key net of whole transactions (Go decoder, parallel catch-up).",
            ["table", "op"],
            registry=r,
        )
        self.emit_lag = Gauge(
            "sparkcdc_driver_emit_event_time_lag_seconds",
            "When the last batch committed to the sink, minus the source time of its newest event "
            "(Flink CDC currentEmitEventTimeLag, Debezium MilliSecondsBehindSource).",
            registry=r,
        )
        self.fetch_lag = Gauge(
            "sparkcdc_driver_fetch_event_time_lag_seconds",
            "When the reader handed the last batch over, minus the source time of its newest event "
            "(Flink CDC currentFetchEventTimeLag).",
            registry=r,
        )
        self.since_last_event = Gauge(
            "sparkcdc_driver_seconds_since_last_event",
            "Seconds since the last committed batch with row events; -1 before the first "
            "(Debezium MilliSecondsSinceLastEvent, Flink CDC sourceIdleTime).",
            registry=r,
        )
        self.bytes_behind = Gauge(
            "sparkcdc_driver_binlog_bytes_behind",
            "Binlog bytes between the committed offset and the source's current position, as of the "
            "last look (every few seconds while parallel catch-up is on).",
            registry=r,
        )
        self.connected = Gauge(
            "sparkcdc_driver_connected",
            "1 while the binlog reader commits batches (heartbeats close empty ones) at least once per "
            "three heartbeat intervals (Debezium Connected).",
            registry=r,
        )
        self.binlog_reader = Gauge(
            "sparkcdc_driver_binlog_reader",
            "1 for who reads the binlog now: native (Go decoder), python (python-mysql-replication) "
            "or catchup (parallel catch-up).",
            ["reader"],
            registry=r,
        )
        self.binlog_file = Gauge(
            "sparkcdc_driver_binlog_file_number",
            "Number of the committed binlog file: 42 for mysql-bin.000042 (Debezium BinlogFilename).",
            registry=r,
        )
        self.binlog_position = Gauge(
            "sparkcdc_driver_binlog_position",
            "Committed position within that binlog file, in bytes (Debezium BinlogPosition).",
            registry=r,
        )
        self.sink_commit = Histogram(
            "sparkcdc_driver_sink_commit_seconds",
            "Time the sink took to apply one binlog micro-batch.",
            buckets=COMMIT_BUCKETS,
            registry=r,
        )
        for reader in BINLOG_READERS:
            self.binlog_reader.labels(reader).set(0)

    def watch(
        self,
        since_last_event: Callable[[], float],
        connected: Callable[[], float],
        snapshot_seconds: Callable[[], float],
    ) -> None:
        """Series computed when scraped: they move while nothing is reported."""
        self.since_last_event.set_function(since_last_event)
        self.connected.set_function(connected)
        self.snapshot_duration.set_function(snapshot_seconds)

    def serve(self, port: int) -> bool:
        """Serve ``/metrics`` on ``port``; a port in use is logged, not fatal (metrics are optional)."""
        try:
            start_http_server(port, registry=self.registry)
        except OSError as err:
            log.warning("driver metrics not served: port %d: %s", port, err)
            return False
        log.info("driver metrics on :%d/metrics", port)
        return True
