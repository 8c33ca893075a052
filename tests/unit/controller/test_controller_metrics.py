"""The operator's per-pipeline series (controller/metrics.py), read back as Prometheus scrapes them."""

from __future__ import annotations

from typing import Any

from prometheus_client import generate_latest

from sparkcdc.api.status import PHASES
from sparkcdc.controller.metrics import OperatorMetrics


def value(metrics: OperatorMetrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


def status(phase: str, *, ready: str, stalled: str, restarts: int, lag: float | None) -> dict[str, Any]:
    conditions = [{"type": "Ready", "status": ready}, {"type": "Stalled", "status": stalled}]
    progress = {} if lag is None else {"lagSeconds": lag}
    return {"phase": phase, "conditions": conditions, "driver": {"restarts": restarts}, "progress": progress}


def test_a_pipelines_status_becomes_its_series() -> None:
    m = OperatorMetrics()
    m.observe_pipeline(
        "u1", "shop", "orders", status("Streaming", ready="True", stalled="False", restarts=2, lag=1.5)
    )
    m.observe_pipeline(
        "u2", "shop", "stock", status("Failed", ready="False", stalled="True", restarts=5, lag=None)
    )
    assert value(m, "sparkcdc_operator_pipeline_ready", namespace="shop", pipeline="orders") == 1
    assert value(m, "sparkcdc_operator_pipeline_stalled", namespace="shop", pipeline="orders") == 0
    assert value(m, "sparkcdc_operator_pipeline_restarts", namespace="shop", pipeline="orders") == 2
    assert value(m, "sparkcdc_operator_pipeline_lag_seconds", namespace="shop", pipeline="orders") == 1.5
    assert value(m, "sparkcdc_operator_pipeline_ready", namespace="shop", pipeline="stock") == 0
    assert value(m, "sparkcdc_operator_pipeline_stalled", namespace="shop", pipeline="stock") == 1
    assert value(m, "sparkcdc_operator_pipeline_lag_seconds", namespace="shop", pipeline="stock") is None
    phases = {
        p: value(m, "sparkcdc_operator_pipeline_phase", namespace="shop", pipeline="stock", phase=p)
        for p in PHASES
    }
    assert phases == {p: 1 if p == "Failed" else 0 for p in PHASES}
    assert value(m, "sparkcdc_operator_pipelines", phase="Failed") == 1
    assert value(m, "sparkcdc_operator_pipelines", phase="Streaming") == 1
    # The lag becomes unknown again (a new driver has not reported yet): the series goes.
    m.observe_pipeline(
        "u1", "shop", "orders", status("Pending", ready="False", stalled="False", restarts=3, lag=None)
    )
    assert value(m, "sparkcdc_operator_pipeline_lag_seconds", namespace="shop", pipeline="orders") is None
    assert (
        value(m, "sparkcdc_operator_pipeline_phase", namespace="shop", pipeline="orders", phase="Pending")
        == 1
    )
    assert (
        value(m, "sparkcdc_operator_pipeline_phase", namespace="shop", pipeline="orders", phase="Streaming")
        == 0
    )


def test_a_pipeline_without_status_yet_counts_as_unknown_and_not_ready() -> None:
    m = OperatorMetrics()
    m.observe_pipeline("u1", "shop", "orders", None)
    assert (
        value(m, "sparkcdc_operator_pipeline_phase", namespace="shop", pipeline="orders", phase="Unknown")
        == 1
    )
    assert value(m, "sparkcdc_operator_pipeline_ready", namespace="shop", pipeline="orders") == 0
    assert value(m, "sparkcdc_operator_pipeline_restarts", namespace="shop", pipeline="orders") == 0


def test_binlog_expiry_margin_is_set_and_removed() -> None:
    m = OperatorMetrics()
    m.set_binlog_expiry("shop", "orders", 3600.0)
    m.set_binlog_expiry("shop", "stock", -120.0)
    assert (
        value(m, "sparkcdc_operator_binlog_expiry_margin_seconds", namespace="shop", pipeline="orders")
        == 3600
    )
    assert (
        value(m, "sparkcdc_operator_binlog_expiry_margin_seconds", namespace="shop", pipeline="stock") == -120
    )
    m.set_binlog_expiry("shop", "orders", None)
    m.set_binlog_expiry("shop", "never-set", None)  # nothing to remove is no error
    assert (
        value(m, "sparkcdc_operator_binlog_expiry_margin_seconds", namespace="shop", pipeline="orders")
        is None
    )


def test_a_deleted_pipeline_leaves_no_series_behind() -> None:
    m = OperatorMetrics()
    m.observe_pipeline(
        "u1", "shop", "orders", status("Streaming", ready="True", stalled="False", restarts=0, lag=0.2)
    )
    m.observe_pipeline(
        "u2", "shop", "stock", status("Streaming", ready="True", stalled="False", restarts=0, lag=0.1)
    )
    m.set_binlog_expiry("shop", "orders", 600.0)
    m.set_phase("u1", None)  # the reconciler forgets a deleted pipeline this way
    text = generate_latest(m.registry).decode()
    assert 'pipeline="orders"' not in text
    assert 'pipeline="stock"' in text
    assert value(m, "sparkcdc_operator_pipelines", phase="Streaming") == 1
