"""The operator's Prometheus metrics (names in the style of controller-runtime and the Spark operator)."""

from __future__ import annotations

import threading

from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server

from sparkcdc.api.status import PHASES


class OperatorMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.reconciles = Counter(
            "sparkcdc_operator_reconciles", "CdcPipeline reconciles run.", registry=self.registry
        )
        self.reconcile_errors = Counter(
            "sparkcdc_operator_reconcile_errors", "Reconciles that failed.", registry=self.registry
        )
        self.driver_restarts = Counter(
            "sparkcdc_operator_driver_restarts",
            "Driver pods replaced after a failure.",
            registry=self.registry,
        )
        self.pipelines = Gauge(
            "sparkcdc_operator_pipelines", "CdcPipelines by phase.", ["phase"], registry=self.registry
        )
        self._phases: dict[str, str] = {}
        self._lock = threading.Lock()
        for phase in (*PHASES, "Unknown"):
            self.pipelines.labels(phase).set(0)

    def set_phase(self, uid: str, phase: str | None) -> None:
        with self._lock:
            if phase is None:
                self._phases.pop(uid, None)
            else:
                self._phases[uid] = phase
            counts = dict.fromkeys((*PHASES, "Unknown"), 0)
            for value in self._phases.values():
                counts[value if value in counts else "Unknown"] += 1
        for name, count in counts.items():
            self.pipelines.labels(name).set(count)

    def serve(self, port: int) -> None:
        start_http_server(port, registry=self.registry)
