"""The kopf side: every trigger becomes ``Reconciler.reconcile(namespace, name)``.

Handlers are registered into a registry built per operator process (``register``), so settings
such as the resync interval are plain arguments rather than import-time constants.

What kopf persists, and why:

* the diff base (``sparkcdc.io/last-handled-configuration``): update handlers need it to see spec
  changes; status-only changes (the driver's checkpoint every second) trigger nothing;
* handler progress, in annotations only (never ``status.kopf``: the CRD's schema would prune it
  and every attempt would race the driver's fenced status writes); written only on retries;
* a finalizer (``sparkcdc.io/retain-state``) only on pipelines with ``statePolicy: Retain``,
  whose checkpoint must be copied aside before the object goes; owner references delete the
  pods and services of all others.

Pods are watched with a server-side label selector and plain event handlers (no persistence).
Delayed reconciles ("requeue") and the periodic resync live in memory, in :class:`Scheduler`: a
kopf timer would put a finalizer on every pipeline.
"""

from __future__ import annotations

import logging
from typing import Any

import kopf

from sparkcdc.api.resource import GROUP, PLURAL, VERSION
from sparkcdc.controller.builders import LABEL_COMPONENT, LABEL_NAME, LABEL_PIPELINE
from sparkcdc.controller.metrics import OperatorMetrics
from sparkcdc.controller.reconciler import Reconciler, utcnow
from sparkcdc.controller.retain import retain_state
from sparkcdc.controller.scheduler import Key, Scheduler
from sparkcdc.controller.settings import OperatorSettings
from sparkcdc.controller.verify_idle import answer_idle_request
from sparkcdc.core.reconcile_types import format_time
from sparkcdc.kube.client import KubeClient, KubeConfig

log = logging.getLogger(__name__)
PREFIX = "sparkcdc.io"
FINALIZER = f"{PREFIX}/retain-state"
DRIVER_LABELS = {LABEL_NAME: "sparkcdc", LABEL_COMPONENT: "driver"}
RETRY_SECONDS = 5.0


class Operator:
    """What the handlers share: the reconciler, the requeue scheduler and the metrics."""

    def __init__(
        self, settings: OperatorSettings, config: KubeConfig, kube: KubeClient | None = None
    ) -> None:
        self.settings = settings
        self.config = config
        self.kube = kube or KubeClient.from_config(config, settings.instance)
        self.metrics = OperatorMetrics()
        self.reconciler = Reconciler(self.kube, settings, self.metrics)
        self.scheduler: Scheduler | None = None

    def start(self) -> None:
        self.scheduler = Scheduler(self.run_key)
        if self.settings.metrics_port:
            self.metrics.serve(self.settings.metrics_port)

    def stop(self) -> None:
        if self.scheduler is not None:
            self.scheduler.stop()

    def forget(self, namespace: str, name: str, uid: str | None) -> None:
        if self.scheduler is not None:
            self.scheduler.cancel((namespace, name))
        if uid:
            self.reconciler.forget(uid)

    def run(self, namespace: str, name: str) -> None:
        """Reconcile now, and again when asked or at the resync interval (also after errors, which are
        retried here rather than recorded on the object)."""
        try:
            delay = self.reconciler.reconcile(namespace, name)
            if delay is not None:  # a verifyNonce no driver is there to answer: say so
                with self.reconciler.lock(namespace, name):
                    answer_idle_request(self.kube, namespace, name)
        except Exception:
            log.exception(
                "reconciling CdcPipeline %s/%s failed; retrying in %ss", namespace, name, RETRY_SECONDS
            )
            delay = RETRY_SECONDS
        if self.scheduler is not None:
            if delay is None:
                self.scheduler.cancel((namespace, name))
            else:
                self.scheduler.schedule((namespace, name), delay)

    def run_key(self, key: Key) -> None:
        self.run(*key)


def configure(settings: kopf.OperatorSettings) -> None:
    settings.posting.level = logging.WARNING  # kopf's own events: only problems
    settings.posting.reporting_component = "sparkcdc-operator"
    settings.persistence.finalizer = FINALIZER
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=PREFIX)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix=PREFIX, key="last-handled-configuration"
    )
    selector = ",".join(f"{k}={v}" for k, v in DRIVER_LABELS.items())
    settings.watching.label_selectors["v1", "pods"] = selector
    settings.watching.server_timeout = 300
    settings.watching.client_timeout = 330
    settings.execution.max_workers = 16


def connection_info(kube: KubeConfig) -> kopf.ConnectionInfo:
    """kopf's credentials from the same loader the driver uses (in-cluster, else the kubeconfig)."""
    cfg = kube.configuration
    if cfg.refresh_api_key_hook is not None:
        cfg.refresh_api_key_hook(cfg)
    auth = cfg.api_key.get("authorization") or cfg.api_key.get("BearerToken")
    scheme, token = auth.split(" ", 1) if auth else (None, None)
    return kopf.ConnectionInfo(
        server=cfg.host,
        ca_path=cfg.ssl_ca_cert,
        insecure=not cfg.verify_ssl,
        scheme=scheme,
        token=token,
        certificate_path=cfg.cert_file,
        private_key_path=cfg.key_file,
        default_namespace=kube.namespace,
    )


def register(registry: kopf.OperatorRegistry, operator: Operator) -> None:
    """Register every handler of ``operator`` into ``registry``."""
    resource = (GROUP, VERSION, PLURAL)

    @kopf.on.startup(registry=registry)
    def startup(settings: kopf.OperatorSettings, **_: Any) -> None:
        configure(settings)
        operator.start()

    @kopf.on.cleanup(registry=registry)
    def cleanup(**_: Any) -> None:
        operator.stop()

    @kopf.on.login(registry=registry)
    def login(**_: Any) -> kopf.ConnectionInfo:
        return connection_info(operator.config)

    @kopf.on.resume(*resource, registry=registry)
    @kopf.on.create(*resource, registry=registry)
    @kopf.on.update(*resource, field="spec", registry=registry)
    def changed(namespace: str | None, name: str, **_: Any) -> None:
        operator.run(namespace or "default", name)

    # Only deletions: every status write of a driver is an event too, and kopf logs each call.
    @kopf.on.event(*resource, registry=registry, when=lambda type, **_: type == "DELETED")
    def pipeline_deleted(body: kopf.Body, **_: Any) -> None:
        operator.forget(body.metadata.namespace or "default", body.metadata.name or "", body.metadata.uid)

    @kopf.on.event("v1", "pods", labels=DRIVER_LABELS, registry=registry)
    def driver_pod_event(namespace: str | None, labels: kopf.Labels, **_: Any) -> None:
        pipeline = labels.get(LABEL_PIPELINE)
        if pipeline and namespace:
            operator.run(namespace, pipeline)

    @kopf.on.delete(*resource, field="spec.statePolicy", value="Retain", registry=registry)
    def retain(namespace: str | None, name: str, **_: Any) -> None:
        namespace = namespace or "default"
        with operator.reconciler.lock(namespace, name):
            obj = operator.kube.get_pipeline(namespace, name)
            if obj is not None and not retain_state(operator.kube, obj, format_time(utcnow())):
                raise kopf.TemporaryError("waiting for the driver pod to stop", delay=2)
