"""The driver's progress listener: status.progress and the Prometheus series it feeds."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from harness.reconcile_fixtures import pipeline
from sparkcdc.api.status import BinlogRetention
from sparkcdc.core.checkpoint import Checkpoint, Phase, TablePlan, TableState
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.source_identity import SourceIdentity
from sparkcdc.core.splits import FinishedSplitInfo, SnapshotSplit
from sparkcdc.core.tables import TableId
from sparkcdc.driver.main import metrics_port
from sparkcdc.driver.reporting import DriverMetrics, DriverProgress, StoredCheckpoint
from sparkcdc.driver.verify_local import applied_offset
from sparkcdc.engine.enumerator import SplitEnumerator
from sparkcdc.engine.listener import BatchCommit
from sparkcdc.engine.runtime import PipelineRuntime, build_runtime
from sparkcdc.spark.snapshot import SplitSummary
from sparkcdc.state.file_store import FileCheckpointStore

ORDERS, ITEMS = TableId("shop", "orders"), TableId("shop", "order_items")
HW = BinlogOffset("binlog.000001", 400)
NOW = 1_700_000_100.0


class Pushed:
    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []

    def __call__(self, progress: dict[str, Any]) -> None:
        self.items.append(progress)

    @property
    def last(self) -> dict[str, Any]:
        return self.items[-1]


def sample(metrics: DriverMetrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


def summary(table: TableId, index: int, rows: int) -> SplitSummary:
    split = SnapshotSplit(table, index, None if index == 0 else (index * 10,), None)
    return SplitSummary(split, HW, HW, rows, 0)


def listener(**kwargs: Any) -> tuple[DriverProgress, DriverMetrics, Pushed]:
    metrics, pushed = DriverMetrics(), Pushed()
    return DriverProgress(pushed, metrics, clock=lambda: NOW, **kwargs), metrics, pushed


def test_snapshot_progress_and_split_gauges() -> None:
    progress, metrics, pushed = listener()
    progress.snapshot_planned({ORDERS: 3, ITEMS: 2}, {ORDERS: 1, ITEMS: 0})
    assert pushed.last == {
        "splitsTotal": 5, "splitsFinished": 1, "splitsDisplay": "1/5", "rowsSnapshotted": 0,
        "eventsApplied": 0, "tables": 2, "warnings": [], "failedTables": [],
    }  # fmt: skip
    progress.splits_finished([summary(ORDERS, 1, 100), summary(ITEMS, 0, 40)])
    assert (pushed.last["splitsFinished"], pushed.last["rowsSnapshotted"]) == (3, 140)
    assert sample(metrics, "sparkcdc_driver_snapshot_rows_total", table="shop.orders") == 100
    assert sample(metrics, "sparkcdc_driver_snapshot_splits", table="shop.orders", state="finished") == 2
    assert sample(metrics, "sparkcdc_driver_snapshot_splits", table="shop.orders", state="pending") == 1
    assert sample(metrics, "sparkcdc_driver_snapshot_splits", table="shop.order_items", state="pending") == 1
    assert "lagSeconds" not in pushed.last and "binlogOffset" not in pushed.last


def test_a_recut_tail_never_counts_more_finished_than_total() -> None:
    progress, metrics, pushed = listener()
    progress.snapshot_planned({ORDERS: 1}, {ORDERS: 0})
    progress.splits_finished([summary(ORDERS, 0, 5), summary(ORDERS, 1, 5)])
    assert (pushed.last["splitsFinished"], pushed.last["splitsTotal"]) == (2, 2)
    assert sample(metrics, "sparkcdc_driver_snapshot_splits", table="shop.orders", state="pending") == 0


def test_binlog_batches_lag_events_and_commit_latency() -> None:
    progress, metrics, pushed = listener()
    progress.snapshot_planned({ORDERS: 2}, {ORDERS: 1})  # one split still open as seen here
    progress.tables_prepared([ORDERS])
    progress.batch_committed(BatchCommit(2, BinlogOffset("binlog.000001", 900), 0.02, int((NOW - 3) * 1000)))
    assert pushed.last["lagSeconds"] == 3.0
    assert pushed.last["binlogOffset"] == "binlog.000001:900"
    assert pushed.last["eventsApplied"] == 2
    # The binlog phase runs, so the snapshot is complete whatever was seen of it.
    assert pushed.last["splitsFinished"] == pushed.last["splitsTotal"] == 2
    assert sample(metrics, "sparkcdc_driver_emit_event_time_lag_seconds") == 3.0
    assert sample(metrics, "sparkcdc_driver_binlog_events_total") == 2
    assert sample(metrics, "sparkcdc_driver_sink_commit_seconds_count") == 1
    # Idle: heartbeats close batches without captured events; the pipeline is caught up.
    progress.batch_committed(BatchCommit(0, BinlogOffset("binlog.000001", 950)))
    assert pushed.last["lagSeconds"] == 0.0
    assert sample(metrics, "sparkcdc_driver_sink_commit_seconds_count") == 1  # nothing was applied


def test_counters_continue_from_the_checkpoint_and_the_last_progress() -> None:
    finished = {
        ORDERS: (FinishedSplitInfo(SnapshotSplit(ORDERS, 0, None, None), HW, 1200),),
        ITEMS: (FinishedSplitInfo(SnapshotSplit(ITEMS, 0, None, (5,)), HW, 30),),
    }
    plans = {ORDERS: TablePlan(()), ITEMS: TablePlan(((5,),))}
    progress, _, pushed = listener(checkpoint=Checkpoint(plans=plans, finished=finished), events_applied=77)
    progress.snapshot_planned({ORDERS: 1, ITEMS: 2}, {ORDERS: 1, ITEMS: 1})
    assert pushed.last["rowsSnapshotted"] == 1230
    progress.batch_committed(BatchCommit(3, HW))
    assert pushed.last["eventsApplied"] == 80


def test_a_resumed_driver_reports_where_it_resumes_from_its_first_push() -> None:
    """The source check pushes before anything is planned: the operator must not read a resumed,
    streaming pipeline as a fresh snapshot (no splits, no offset) until the next report."""
    finished = {ORDERS: (FinishedSplitInfo(SnapshotSplit(ORDERS, 0, None, None), HW, 1200),)}
    checkpoint = Checkpoint(plans={ORDERS: TablePlan(())}, finished=finished, binlog_offset=HW)
    progress, _, pushed = listener(checkpoint=checkpoint)
    progress.source_identified(SourceIdentity(server_id=1, address="127.0.0.1:3306"))
    assert (pushed.last["splitsTotal"], pushed.last["splitsFinished"]) == (1, 1)
    assert pushed.last["binlogOffset"] == str(HW)


def test_warnings_are_kept_newest_last_and_failed_tables_stay_warned() -> None:
    failed = {ITEMS: TableState(Phase.FAILED, "table shop.order_items stopped streaming")}
    progress, _, pushed = listener(checkpoint=Checkpoint(tables=failed))
    for n in range(12):
        progress.warning(f"w{n}")
    progress.warning("w5")
    expected = ["w2", "w3", "w4", "w6", "w7", "w8", "w9", "w10", "w11", "w5"]  # the last ten, w5 moved last
    assert pushed.last["warnings"] == expected
    fresh, _, pushed = listener(checkpoint=Checkpoint(tables=failed))
    fresh.snapshot_planned({}, {})
    assert pushed.last["warnings"] == ["table shop.order_items stopped streaming"]


def test_failed_tables_are_listed_from_the_checkpoint_and_as_they_fail() -> None:
    failed = {ITEMS: TableState(Phase.FAILED, "table shop.order_items stopped streaming")}
    progress, _, pushed = listener(checkpoint=Checkpoint(tables=failed))
    progress.table_failed(ORDERS, "table shop.orders stopped during the snapshot")
    assert pushed.last["failedTables"] == [
        {"table": "shop.order_items", "error": "table shop.order_items stopped streaming"},
        {"table": "shop.orders", "error": "table shop.orders stopped during the snapshot"},
    ]
    assert pushed.last["warnings"][-1] == "table shop.orders stopped during the snapshot"


def test_the_stored_checkpoint_follows_the_engine(tmp_path: Path) -> None:
    """What the verifier reads: unknown before the engine loaded, then every checkpoint stored,
    reported by the enumerator after its store's load and each save."""
    progress, _, _ = listener()
    store = FileCheckpointStore(tmp_path, "shop")
    enumerator = SplitEnumerator(runtime(), store, None, progress)
    assert progress.stored_checkpoint() is None
    assert enumerator.load_checkpoint() is None
    assert progress.stored_checkpoint() == StoredCheckpoint(None)
    snapshotted = Checkpoint(snapshot_done=True, snapshot_end_offset=BinlogOffset("b.000001", 100))
    enumerator.save(snapshotted)
    assert progress.stored_checkpoint() == StoredCheckpoint(snapshotted)
    assert applied_offset(snapshotted) == BinlogOffset("b.000001", 100)
    assert store.load() == snapshotted  # the typed store round-trips what it was given
    streaming = replace(snapshotted, binlog_offset=BinlogOffset("b.000002", 7))
    enumerator.save(streaming)
    stored = progress.stored_checkpoint()
    assert stored is not None and applied_offset(stored.checkpoint) == BinlogOffset("b.000002", 7)


def runtime() -> PipelineRuntime:
    return build_runtime(pipeline(), lambda ref, path: SecretStr("pw"))


def test_metrics_port_from_the_environment() -> None:
    assert metrics_port({}) == 8090
    assert metrics_port({"SPARKCDC_DRIVER_METRICS_PORT": "9123"}) == 9123
    assert metrics_port({"SPARKCDC_DRIVER_METRICS_PORT": "0"}) == 0
    assert metrics_port({"SPARKCDC_DRIVER_METRICS_PORT": "http"}) == 0


def test_the_retention_report_rides_with_the_next_progress_write() -> None:
    """driver/retention.py's report is no status write of its own (a replaced driver's first write
    would fence it before its sink transaction does); the next progress report carries it."""
    pushed = Pushed()
    progress = DriverProgress(pushed, DriverMetrics(), clock=lambda: NOW)
    report = BinlogRetention(needed_file="binlog.000001", current_file="binlog.000001", expire_seconds=60.0)
    progress.retention_observed(report)
    assert not pushed.items
    progress.batch_committed(BatchCommit(3, HW))
    assert pushed.last["binlogRetention"] == {
        "neededFile": "binlog.000001", "currentFile": "binlog.000001",
        "filesBefore": 0, "expireSeconds": 60.0,
    }  # fmt: skip
