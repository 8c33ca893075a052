"""One reconcile of one CdcPipeline: observe through the API, decide (``core.reconcile``), act.

Handlers of every kind (create, update, resume, timer, pod events, delayed requeues) end up here;
a per-pipeline lock makes them take turns. A status conflict means something changed while we
decided: observe again and decide again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any

from kubernetes.client.exceptions import ApiException
from pydantic import ValidationError

from sparkcdc.api.resource import CdcPipeline
from sparkcdc.controller.builders import (
    driver_account_name,
    driver_pod,
    driver_selector,
    driver_service,
    spec_hash,
)
from sparkcdc.controller.driver_account import driver_role, driver_role_binding, driver_service_account
from sparkcdc.controller.metrics import OperatorMetrics
from sparkcdc.controller.observe import ProgressClock, driver_pod_view
from sparkcdc.controller.retain import restore_state
from sparkcdc.controller.server_ids import ServerIdIndex
from sparkcdc.controller.settings import OperatorSettings
from sparkcdc.controller.spark_pods import runs_executors, spark_auth_secret
from sparkcdc.core.reconcile import driver_refused, reconcile
from sparkcdc.core.reconcile_image import image_refusal, refuse_image
from sparkcdc.core.reconcile_status import driver_service_name, retention_verdict
from sparkcdc.core.reconcile_types import (
    Action,
    CreatePod,
    CreateService,
    DeletePod,
    Event,
    Observed,
    PatchStatus,
    Requeue,
    Settings,
    format_time,
)
from sparkcdc.core.refusal import DRIVER_ACCOUNT_MISSING, Refusal
from sparkcdc.kube.client import ConflictError, KubeClient, refusal_of

log = logging.getLogger(__name__)
Obj = dict[str, Any]
MAX_ATTEMPTS = 5


class _AccountMissingError(RuntimeError):
    """The namespace lacks the shared driver ServiceAccount (pipelines may not run there)."""


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class Reconciler:
    def __init__(
        self,
        kube: KubeClient,
        settings: OperatorSettings,
        metrics: OperatorMetrics,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.kube, self.settings, self.metrics, self._clock = kube, settings, metrics, clock
        self.decisions = Settings(
            stall_seconds=settings.stall_seconds,
            binlog_expiry_margin_seconds=settings.binlog_expiry_margin_seconds,
            binlog_expiry_margin_files=settings.binlog_expiry_margin_files,
        )
        self._progress = ProgressClock()
        self._locks: dict[tuple[str, str], threading.Lock] = {}
        self._locks_guard = threading.Lock()
        # Server-id assignment reads the other pipelines' ranges and reserves one: one at a time.
        self._assign_lock = threading.Lock()
        self.server_ids = ServerIdIndex(self._watched_pipelines)

    def lock(self, namespace: str, name: str) -> threading.Lock:
        with self._locks_guard:
            return self._locks.setdefault((namespace, name), threading.Lock())

    def reconcile(self, namespace: str, name: str) -> float | None:
        """Reconcile once; returns the seconds after which to reconcile again (at most the resync
        interval), or None when the pipeline no longer exists."""
        waited = time.monotonic()
        with self.lock(namespace, name):
            started = time.monotonic()
            self.metrics.reconciles.inc()
            try:
                for _ in range(MAX_ATTEMPTS):
                    try:
                        delay = self._once(namespace, name)
                        log.debug(
                            "reconciled %s/%s in %.3fs (waited %.3fs for its lock)",
                            namespace, name, time.monotonic() - started, started - waited,
                        )  # fmt: skip
                        return delay
                    except ConflictError:
                        log.debug("CdcPipeline %s/%s changed while reconciling; again", namespace, name)
                return 1.0
            except Exception:
                self.metrics.reconcile_errors.inc()
                raise

    def forget(self, uid: str) -> None:
        self._progress.forget(uid)
        self.server_ids.forget(uid)
        self.metrics.set_phase(uid, None)

    # -- one pass --------------------------------------------------------------------------------
    def _once(self, namespace: str, name: str) -> float | None:
        obj = self.kube.get_pipeline(namespace, name)
        if obj is None:
            return None
        now = self._clock()
        if restore_state(self.kube, obj, format_time(now)):
            obj = self.kube.get_pipeline(namespace, name)
            if obj is None:
                return None
        try:
            pipeline = CdcPipeline.from_k8s(obj)
        except ValidationError as err:
            self._report_invalid(obj, err, now)
            return self.settings.resync_seconds
        self.server_ids.observe(obj)
        spec, status = pipeline.spec, pipeline.status
        observed = self._observe(obj, pipeline, now)
        refused = image_refusal(spec.spark.image, self.settings.allowed_images)
        if refused is not None and not observed.deleting and not spec.suspend:
            actions = refuse_image(spec, status, observed, now, refused, self.decisions)
        elif spec.source.server_id is None and not (status and status.server_id_range):
            # Choose and reserve a range under the lock (no API calls in it).
            with self._assign_lock:
                uid = obj["metadata"].get("uid", "")
                in_use = self.server_ids.in_use(spec.source.host, uid)
                observed = replace(observed, server_ids_in_use=in_use)
                actions = reconcile(spec, status, observed, now, self.decisions)
                for action in actions:
                    if isinstance(action, PatchStatus) and "serverIdRange" in action.fields:
                        self.server_ids.reserve(uid, spec.source.host, str(action.fields["serverIdRange"]))
        else:
            actions = reconcile(spec, status, observed, now, self.decisions)
        return self._execute(obj, pipeline, actions, now, observed)

    def _observe(self, obj: Obj, pipeline: CdcPipeline, now: datetime) -> Observed:
        md = obj["metadata"]
        namespace, name = md["namespace"], md["name"]
        pods = self.kube.list_pods(namespace, driver_selector(name))
        return Observed(
            pipeline=name,
            generation=int(md.get("generation") or 0),
            spec_hash=spec_hash(pipeline.spec),
            pods=tuple(driver_pod_view(p, now) for p in pods),
            service_exists=self.kube.service_exists(namespace, driver_service_name(name)),
            deleting=md.get("deletionTimestamp") is not None,
            last_progress_at=self._progress.last_progress(md.get("uid", ""), obj.get("status"), now),
        )

    def _execute(
        self, obj: Obj, pipeline: CdcPipeline, actions: Sequence[Action], now: datetime, observed: Observed
    ) -> float | None:
        md = obj["metadata"]
        namespace, name = md["namespace"], md["name"]
        requeue = self.settings.resync_seconds
        for action in actions:
            if isinstance(action, PatchStatus):
                version = obj["metadata"]["resourceVersion"]
                obj = self.kube.patch_pipeline_status(namespace, name, dict(action.fields), version)
            elif isinstance(action, CreateService):
                # Not where drivers may not run (no shared driver account, or no rights there):
                # the CreatePod that follows is refused for that, with the way out.
                if self.kube.get_service_account(namespace, self.settings.driver_service_account):
                    self.kube.create_service(driver_service(pipeline, self.settings.driver_metrics_port))
            elif isinstance(action, CreatePod):
                refusal = self._create_driver(pipeline, action.epoch)
                if refusal is not None:
                    # Instead of the rest: record the refusal and back off (the status read back
                    # from the epoch's patch is what the decision builds on).
                    status = CdcPipeline.from_k8s(obj).status
                    follow = driver_refused(pipeline.spec, status, observed, now, refusal, self.decisions)
                    return self._execute(obj, pipeline, follow, now, observed)
            elif isinstance(action, DeletePod):
                log.info("deleting driver pod %s/%s: %s", namespace, action.name, action.reason)
                self.kube.delete_pod(namespace, action.name)
                if action.reason == "RestartAfterFailure":
                    self.metrics.driver_restarts.inc()
            elif isinstance(action, Event):
                self._event(obj, action, now)
            elif isinstance(action, Requeue):
                requeue = min(requeue, action.seconds)
        self.metrics.observe_pipeline(md.get("uid", ""), namespace, name, obj.get("status"))
        retention = retention_verdict(CdcPipeline.from_k8s(obj).status, now, self.decisions)
        self.metrics.set_binlog_expiry(namespace, name, retention.seconds_left)
        return requeue

    def _create_driver(self, pipeline: CdcPipeline, epoch: int) -> Refusal | None:
        """Create the driver pod (and its account); the refusal when the API server said no."""
        try:
            self._driver_account(pipeline)
            if runs_executors(pipeline.spec.spark.master or self.settings.spark_master):
                self.kube.create_secret(spark_auth_secret(pipeline))
            self.kube.create_pod(self.driver_pod(pipeline, epoch))
        except _AccountMissingError as err:
            refusal = Refusal(None, DRIVER_ACCOUNT_MISSING, str(err))
        except ApiException as err:
            refusal = refusal_of(err)
        else:
            return None
        md = pipeline.metadata
        log.warning(
            "cannot create the driver of %s/%s (epoch %s): %s %s: %s",
            md.namespace, md.name, epoch, refusal.code, refusal.reason, refusal.message,
        )  # fmt: skip
        return refusal

    def _driver_account(self, pipeline: CdcPipeline) -> None:
        """The pipeline's own driver ServiceAccount, Role and RoleBinding (owned by it), before each
        driver pod: a driver may read and patch only its own pipeline. The namespace's shared
        driver account (from the chart) must exist: it marks where pipelines may run and lends
        the per-pipeline accounts its annotations and image pull secrets."""
        namespace = pipeline.metadata.namespace or "default"
        shared = self.settings.driver_service_account
        template = self.kube.get_service_account(namespace, shared)
        if template is None:
            raise _AccountMissingError(
                f"namespace {namespace} has no ServiceAccount {shared}, so CdcPipeline "
                f"{pipeline.metadata.name} "
                "cannot start a driver there: add the namespace to the chart's driver.namespaces or "
                "watchNamespaces (install.md, 'Where pipelines may run')"
            )
        master = pipeline.spec.spark.master or self.settings.spark_master
        for body in (
            driver_service_account(pipeline, template),
            driver_role(pipeline, master),
            driver_role_binding(pipeline),
        ):
            self.kube.apply_driver_rbac(body)

    def driver_pod(self, pipeline: CdcPipeline, epoch: int) -> Obj:
        spark = pipeline.spec.spark
        return driver_pod(
            pipeline,
            epoch,
            image=spark.image,
            spark_master=spark.master or self.settings.spark_master,
            service_account=driver_account_name(pipeline.metadata.name),
            spec_hash=spec_hash(pipeline.spec),
            scheduler_name=self.settings.scheduler_name,
            metrics_port=self.settings.driver_metrics_port,
        )

    def _event(self, obj: Obj, event: Event, now: datetime) -> None:
        try:
            self.kube.post_event(obj, event.type, event.reason, event.message, now=format_time(now))
        except Exception as err:  # events are best effort; the status says the same
            log.warning("could not post event %s: %s", event.reason, err)

    # -- helpers ---------------------------------------------------------------------------------
    def _watched_pipelines(self) -> list[Obj]:
        if self.settings.namespaces:
            return [p for ns in self.settings.namespaces for p in self.kube.list_pipelines(ns)]
        return self.kube.list_pipelines()

    def _report_invalid(self, obj: Obj, err: ValidationError, now: datetime) -> None:
        """The apiserver's schema should have refused this; say so instead of guessing."""
        generation = obj["metadata"].get("generation")
        status = obj.get("status") or {}
        if status.get("observedGeneration") == generation and status.get("phase") == "Failed":
            return
        message = f"the spec is invalid: {err.error_count()} problem(s), first: {err.errors()[0]['msg']}"
        condition = {
            "type": "Stalled", "status": "True", "reason": "InvalidSpec", "message": message,
            "lastTransitionTime": format_time(now), "observedGeneration": generation,
        }  # fmt: skip
        md = obj["metadata"]
        patch = {"phase": "Failed", "observedGeneration": generation, "conditions": [condition]}
        self.kube.patch_pipeline_status(md["namespace"], md["name"], patch, None)
        # The Event says no more than that: readers of Events need not be readers of the spec.
        said = f"the spec is invalid: {err.error_count()} problem(s); the Stalled condition names them"
        self._event(obj, Event("Warning", "InvalidSpec", said), now)
