"""The operator's Prometheus metrics (names in the style of controller-runtime and kube-state-metrics).

Besides its own work (reconciles, errors, restarts, pipelines per phase) the operator exports each
pipeline's state as read from its status, one series per pipeline labelled ``namespace`` and
``pipeline``: the chart's alert rules (templates/prometheusrule.yaml) fire on these, so alerting needs
only the operator's endpoint, not a scrape of every driver pod. The operator already reads every
status, so the figures cost nothing more; they are as fresh as the last reconcile (every
``resyncSeconds`` at least). The chart's ServiceMonitor keeps these labels (``honorLabels``) instead
of the operator pod's own ``namespace``.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server

from sparkcdc.api.status import PHASES

__all__ = ["OperatorMetrics"]

_PHASES = (*PHASES, "Unknown")
Obj = Mapping[str, Any]


class OperatorMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.reconciles = Counter("sparkcdc_operator_reconciles", "CdcPipeline reconciles run.", registry=r)
        self.reconcile_errors = Counter(
            "sparkcdc_operator_reconcile_errors", "Reconciles that failed.", registry=r
        )
        self.driver_restarts = Counter(
            "sparkcdc_operator_driver_restarts", "Driver pods replaced after a failure.", registry=r
        )
        self.pipelines = Gauge("sparkcdc_operator_pipelines", "CdcPipelines by phase.", ["phase"], registry=r)
        per_pipeline = ["namespace", "pipeline"]
        self.pipeline_phase = Gauge(
            "sparkcdc_operator_pipeline_phase",
            "1 for the pipeline's current phase (status.phase), 0 for the others.",
            [*per_pipeline, "phase"],
            registry=r,
        )
        self.pipeline_ready = Gauge(
            "sparkcdc_operator_pipeline_ready",
            "1 when the Ready condition is True.",
            per_pipeline,
            registry=r,
        )
        self.pipeline_stalled = Gauge(
            "sparkcdc_operator_pipeline_stalled",
            "1 when the Stalled condition is True.",
            per_pipeline,
            registry=r,
        )
        self.pipeline_restarts = Gauge(
            "sparkcdc_operator_pipeline_restarts",
            "Driver restarts (status.driver.restarts; a new restartNonce resets it).",
            per_pipeline,
            registry=r,
        )
        self.pipeline_lag = Gauge(
            "sparkcdc_operator_pipeline_lag_seconds",
            "The driver's last reported emit lag (status.progress.lagSeconds); absent while unknown.",
            per_pipeline,
            registry=r,
        )
        self.binlog_expiry_margin = Gauge(
            "sparkcdc_operator_binlog_expiry_margin_seconds",
            "Seconds until the binlog file of the pipeline's checkpoint is expected to be purged at "
            "the source; negative when past.",
            per_pipeline,
            registry=r,
        )
        self._phases: dict[str, str] = {}
        self._names: dict[str, tuple[str, str]] = {}  # uid -> (namespace, name) of its series
        self._lock = threading.Lock()
        for phase in _PHASES:
            self.pipelines.labels(phase).set(0)

    def set_phase(self, uid: str, phase: str | None) -> None:
        """The pipeline's phase for ``sparkcdc_operator_pipelines``; None: it is gone, and so are
        its per-pipeline series."""
        with self._lock:
            if phase is None:
                self._phases.pop(uid, None)
                gone = self._names.pop(uid, None)
            else:
                self._phases[uid] = phase
                gone = None
            counts = dict.fromkeys(_PHASES, 0)
            for value in self._phases.values():
                counts[value if value in counts else "Unknown"] += 1
        for name, count in counts.items():
            self.pipelines.labels(name).set(count)
        if gone is not None:
            self._remove(*gone)

    def observe_pipeline(self, uid: str, namespace: str, name: str, status: Obj | None) -> None:
        """Everything the operator exports from one pipeline's status."""
        status = status or {}
        phase = status.get("phase")
        self.set_phase(uid, phase)
        with self._lock:
            self._names[uid] = (namespace, name)
        current = phase if phase in PHASES else "Unknown"
        for each in _PHASES:
            self.pipeline_phase.labels(namespace, name, each).set(1 if each == current else 0)
        conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or ()}
        self.pipeline_ready.labels(namespace, name).set(1 if conditions.get("Ready") == "True" else 0)
        self.pipeline_stalled.labels(namespace, name).set(1 if conditions.get("Stalled") == "True" else 0)
        restarts = (status.get("driver") or {}).get("restarts") or 0
        self.pipeline_restarts.labels(namespace, name).set(restarts)
        lag = (status.get("progress") or {}).get("lagSeconds")
        if lag is None:
            _discard(self.pipeline_lag, namespace, name)
        else:
            self.pipeline_lag.labels(namespace, name).set(lag)

    def set_binlog_expiry(self, namespace: str, name: str, seconds: float | None) -> None:
        """Seconds until the checkpoint's binlog file is expected to be purged; None: not known
        (no checkpointed offset, no expiry configured at the source), and the series goes."""
        if seconds is None:
            _discard(self.binlog_expiry_margin, namespace, name)
        else:
            self.binlog_expiry_margin.labels(namespace, name).set(seconds)

    def _remove(self, namespace: str, name: str) -> None:
        for gauge in (
            self.pipeline_ready,
            self.pipeline_stalled,
            self.pipeline_restarts,
            self.pipeline_lag,
            self.binlog_expiry_margin,
        ):
            _discard(gauge, namespace, name)
        for phase in _PHASES:
            _discard(self.pipeline_phase, namespace, name, phase)

    def serve(self, port: int) -> None:
        start_http_server(port, registry=self.registry)


def _discard(gauge: Gauge, *labels: str) -> None:
    with contextlib.suppress(KeyError):  # never set
        gauge.remove(*labels)
