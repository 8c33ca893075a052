"""The driver's Prometheus series (driver/metrics.py), fed by the engine's listener calls as a run makes them.

Each test plays a sequence of listener calls a real run makes (snapshot planned, splits committed,
binlog batches, reader switches, backlog looks) against a clock the test moves, and reads the
series back from the registry as Prometheus would scrape them.
"""

from __future__ import annotations

from typing import Any

from sparkcdc.core.checkpoint import Checkpoint
from sparkcdc.core.events import ChangeEvent, Op
from sparkcdc.core.merge import BackfillChanges
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.splits import SnapshotSplit
from sparkcdc.core.tables import TableId
from sparkcdc.driver.metrics import DriverMetrics
from sparkcdc.driver.reporting import DriverProgress
from sparkcdc.engine.listener import BatchCommit, event_counts, net_counts
from sparkcdc.spark.snapshot import SplitSummary

ORDERS, ITEMS = TableId("shop", "orders"), TableId("shop", "order_items")
HW = BinlogOffset("mysql-bin.000007", 400)
T0 = 1_700_000_000.0


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


def run(**kwargs: Any) -> tuple[DriverProgress, DriverMetrics, Clock]:
    metrics, clock = DriverMetrics(), Clock()
    progress = DriverProgress(lambda _: None, metrics, clock=clock, **kwargs)
    return progress, metrics, clock


def value(metrics: DriverMetrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


def summary(table: TableId, index: int, rows: int) -> SplitSummary:
    return SplitSummary(SnapshotSplit(table, index, None, None), HW, HW, rows, 0)


def event(table: TableId, op: Op, key: int) -> ChangeEvent:
    row = {"id": key}
    before = None if op is Op.INSERT else row
    after = None if op is Op.DELETE else row
    return ChangeEvent(table, op, before, after, HW)


def test_snapshot_durations_per_table_and_in_all() -> None:
    progress, metrics, clock = run()
    assert value(metrics, "sparkcdc_driver_snapshot_running") == 0
    assert value(metrics, "sparkcdc_driver_snapshot_duration_seconds") == 0
    progress.snapshot_planned({ORDERS: 2, ITEMS: 1}, {ORDERS: 0, ITEMS: 0})
    assert value(metrics, "sparkcdc_driver_snapshot_running") == 1
    clock.now += 10
    progress.splits_finished([summary(ITEMS, 0, 40)])  # items done after 10 s
    clock.now += 5
    progress.splits_finished([summary(ORDERS, 0, 100)])
    assert value(metrics, "sparkcdc_driver_snapshot_table_duration_seconds", table="shop.order_items") == 10
    assert value(metrics, "sparkcdc_driver_snapshot_table_duration_seconds", table="shop.orders") == 15
    clock.now += 5  # still running: the whole snapshot's duration grows with the clock when scraped
    assert value(metrics, "sparkcdc_driver_snapshot_duration_seconds") == 20
    progress.splits_finished([summary(ORDERS, 1, 60)])
    clock.now += 100  # done: both durations stay where the last split left them
    assert value(metrics, "sparkcdc_driver_snapshot_running") == 0
    assert value(metrics, "sparkcdc_driver_snapshot_duration_seconds") == 20
    assert value(metrics, "sparkcdc_driver_snapshot_table_duration_seconds", table="shop.orders") == 20
    assert value(metrics, "sparkcdc_driver_snapshot_table_duration_seconds", table="shop.order_items") == 10
    assert value(metrics, "sparkcdc_driver_snapshot_rows_total", table="shop.orders") == 160


def test_the_binlog_phase_ends_the_snapshot_whatever_was_seen_of_it() -> None:
    progress, metrics, clock = run()
    progress.snapshot_planned({ORDERS: 3}, {ORDERS: 1})
    clock.now += 7
    progress.batch_committed(BatchCommit(0, HW))
    clock.now += 50
    assert value(metrics, "sparkcdc_driver_snapshot_running") == 0
    assert value(metrics, "sparkcdc_driver_snapshot_duration_seconds") == 7
    assert value(metrics, "sparkcdc_driver_snapshot_splits", table="shop.orders", state="pending") == 0


def test_a_resumed_driver_past_its_snapshot_reports_no_snapshot_time_and_its_position() -> None:
    offset = BinlogOffset("mysql-bin.000042", 1234)
    progress, metrics, _ = run(checkpoint=Checkpoint(binlog_offset=offset))
    progress.snapshot_planned({ORDERS: 2}, {ORDERS: 2})
    assert value(metrics, "sparkcdc_driver_snapshot_running") == 0
    assert value(metrics, "sparkcdc_driver_snapshot_duration_seconds") == 0
    assert value(metrics, "sparkcdc_driver_snapshot_table_duration_seconds", table="shop.orders") is None
    assert value(metrics, "sparkcdc_driver_binlog_file_number") == 42
    assert value(metrics, "sparkcdc_driver_binlog_position") == 1234


def test_fetch_lag_emit_lag_and_seconds_since_the_last_event() -> None:
    progress, metrics, clock = run()
    assert value(metrics, "sparkcdc_driver_seconds_since_last_event") == -1  # Debezium's "none yet"
    newest_ms = int((T0 - 4) * 1000)  # the newest event was written 4 s before the reader had the batch
    clock.now = T0 + 1.5  # the sink and the checkpoint took 1.5 s more
    counts = {(ORDERS, "create"): 2, (ORDERS, "update"): 1, (ITEMS, "delete"): 1}
    offset = BinlogOffset("mysql-bin.000008", 900)
    progress.batch_committed(BatchCommit(4, offset, 0.02, newest_ms, counts, read_at=T0))
    assert value(metrics, "sparkcdc_driver_fetch_event_time_lag_seconds") == 4.0
    assert value(metrics, "sparkcdc_driver_emit_event_time_lag_seconds") == 5.5
    assert progress.progress().lag_seconds == 5.5  # status.progress carries the emit lag
    assert value(metrics, "sparkcdc_driver_binlog_events_total") == 4
    assert value(metrics, "sparkcdc_driver_table_changes_total", table="shop.orders", op="create") == 2
    assert value(metrics, "sparkcdc_driver_table_changes_total", table="shop.orders", op="update") == 1
    assert value(metrics, "sparkcdc_driver_table_changes_total", table="shop.order_items", op="delete") == 1
    assert value(metrics, "sparkcdc_driver_binlog_file_number") == 8
    assert value(metrics, "sparkcdc_driver_binlog_position") == 900
    assert value(metrics, "sparkcdc_driver_seconds_since_last_event") == 1.5
    # Heartbeats only: caught up, both lags 0, and the last event ages.
    clock.now += 30
    progress.batch_committed(BatchCommit(0, BinlogOffset("mysql-bin.000008", 950), read_at=clock.now))
    assert value(metrics, "sparkcdc_driver_fetch_event_time_lag_seconds") == 0
    assert value(metrics, "sparkcdc_driver_emit_event_time_lag_seconds") == 0
    assert value(metrics, "sparkcdc_driver_seconds_since_last_event") == 31.5
    assert value(metrics, "sparkcdc_driver_binlog_events_total") == 4
    assert value(metrics, "sparkcdc_driver_sink_commit_seconds_count") == 1


def test_connected_while_batches_come_within_three_heartbeats() -> None:
    progress, metrics, clock = run(heartbeat_seconds=10)
    assert value(metrics, "sparkcdc_driver_connected") == 0  # the snapshot: no binlog reader yet
    progress.batch_committed(BatchCommit(0, HW))
    assert value(metrics, "sparkcdc_driver_connected") == 1
    clock.now += 30
    assert value(metrics, "sparkcdc_driver_connected") == 1
    clock.now += 0.5  # no heartbeat for more than three periods: the source is not reaching us
    assert value(metrics, "sparkcdc_driver_connected") == 0
    progress.batch_committed(BatchCommit(0, HW))
    assert value(metrics, "sparkcdc_driver_connected") == 1


def test_the_binlog_reader_in_use_and_the_bytes_behind() -> None:
    progress, metrics, _ = run()
    readers = ("native", "python", "catchup")
    assert [value(metrics, "sparkcdc_driver_binlog_reader", reader=r) for r in readers] == [0, 0, 0]
    progress.binlog_reader("catchup")
    progress.backlog_measured(3 * 2**30)
    assert [value(metrics, "sparkcdc_driver_binlog_reader", reader=r) for r in readers] == [0, 0, 1]
    assert value(metrics, "sparkcdc_driver_binlog_bytes_behind") == 3 * 2**30
    progress.binlog_reader("native")
    progress.backlog_measured(0)
    assert [value(metrics, "sparkcdc_driver_binlog_reader", reader=r) for r in readers] == [1, 0, 0]
    assert value(metrics, "sparkcdc_driver_binlog_bytes_behind") == 0
    progress.binlog_reader("python")  # the Go decoder stopped at a schema change
    assert [value(metrics, "sparkcdc_driver_binlog_reader", reader=r) for r in readers] == [0, 1, 0]


def test_batch_change_counts_by_event_and_by_net_effect() -> None:
    events = [
        event(ORDERS, Op.INSERT, 1),
        event(ORDERS, Op.UPDATE, 1),
        event(ORDERS, Op.UPDATE, 1),
        event(ITEMS, Op.DELETE, 5),
    ]
    assert event_counts(events) == {(ORDERS, "create"): 1, (ORDERS, "update"): 2, (ITEMS, "delete"): 1}
    net = {ORDERS: BackfillChanges({(1,): {"id": 1}, (2,): {"id": 2}}, {(3,)}), ITEMS: BackfillChanges()}
    assert net_counts(net) == {(ORDERS, "upsert"): 2, (ORDERS, "delete"): 1}
