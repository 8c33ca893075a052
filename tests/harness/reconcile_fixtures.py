"""Builders of reconcile inputs for the controller unit tests."""

from __future__ import annotations

import copy
from datetime import datetime, timedelta, timezone
from typing import Any

from sparkcdc.api import CdcPipeline, CdcPipelineSpec, CdcPipelineStatus
from sparkcdc.core.reconcile_status import driver_pod_name
from sparkcdc.core.reconcile_types import (
    Action,
    CreatePod,
    CreateService,
    DeletePod,
    DriverPod,
    Event,
    Observed,
    PatchStatus,
    Requeue,
)

NOW = datetime(2024, 5, 1, 12, 0, 0, tzinfo=timezone.utc)
HASH = "hash-1"
NAME = "shop"
REFERENCE: dict[str, Any] = {
    "apiVersion": "sparkcdc.io/v1alpha1",
    "kind": "CdcPipeline",
    "metadata": {"name": NAME, "namespace": "ns", "uid": "uid-1", "generation": 1},
    "spec": {
        "source": {
            "host": "127.0.0.1",
            "user": "cdc",
            "passwordSecretRef": {"name": "mysql-cdc", "key": "password"},
            "tables": ["shop.orders", "shop.order_items"],
            "serverId": "5400-5404",
        },
        "sink": {
            "type": "jdbc",
            "url": "mysql://127.0.0.1:3306/shop_replica",
            "user": "cdc",
            "passwordSecretRef": {"name": "sink-secret", "key": "pw"},
        },
    },
}


def merge(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch, as the apiserver applies it."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge(out.get(key), value)
    return out


def pipeline_obj(**spec: Any) -> dict[str, Any]:
    obj = copy.deepcopy(REFERENCE)
    obj["spec"] = merge(obj["spec"], spec)
    return obj


def pipeline(**spec: Any) -> CdcPipeline:
    return CdcPipeline.from_k8s(pipeline_obj(**spec))


def make_spec(**spec: Any) -> CdcPipelineSpec:
    return pipeline(**spec).spec


def make_status(
    *,
    phase: str | None = None,
    epoch: int = 1,
    restarts: int = 0,
    last_failure: str | None = None,
    generation: int | None = 1,
    progress: dict[str, Any] | None = None,
    **extra: Any,
) -> CdcPipelineStatus:
    driver: dict[str, Any] = {"epoch": epoch, "restarts": restarts, "pod": driver_pod_name(NAME, epoch)}
    if last_failure is not None:
        driver["lastFailure"] = last_failure
    data: dict[str, Any] = {"driver": driver, **extra}
    if phase is not None:
        data["phase"] = phase
    if generation is not None:
        data["observedGeneration"] = generation
    if progress is not None:
        data["progress"] = progress
    return CdcPipelineStatus.model_validate(data)


def make_pod(epoch: int = 1, phase: str = "Running", *, age: float = 60.0, **changes: Any) -> DriverPod:
    values: dict[str, Any] = {
        "name": driver_pod_name(NAME, epoch),
        "created_at": NOW - timedelta(seconds=age),
        "epoch": epoch,
        "spec_hash": HASH,
        "phase": phase,
    }
    if phase == "Running":
        values["started_at"] = NOW - timedelta(seconds=age - 1)
    values.update(changes)
    return DriverPod(**values)


def failed_pod(epoch: int = 1, *, finished_ago: float = 0.0, ran: float = 30.0, **changes: Any) -> DriverPod:
    finished = NOW - timedelta(seconds=finished_ago)
    return make_pod(
        epoch,
        "Failed",
        age=finished_ago + ran + 1,
        started_at=finished - timedelta(seconds=ran),
        finished_at=finished,
        exit_code=1,
        termination_reason="Error",
        termination_message="boom",
        **changes,
    )


def observed(*pods: DriverPod, service: bool = True, generation: int = 1, **changes: Any) -> Observed:
    return Observed(
        pipeline=NAME, generation=generation, spec_hash=HASH, pods=pods, service_exists=service, **changes
    )


def summary(actions: list[Action]) -> list[tuple[Any, ...]]:
    """A readable digest of actions: status patches reduced to phase and driver fields."""
    out: list[tuple[Any, ...]] = []
    for action in actions:
        if isinstance(action, PatchStatus):
            fields = {k: v for k, v in action.fields.items() if k in ("phase", "driver", "serverIdRange")}
            if "startedAt" in fields.get("driver", {}):
                fields["driver"] = {**fields["driver"], "startedAt": "*"}
            out.append(("status", fields))
        elif isinstance(action, CreatePod):
            out.append(("create", action.epoch))
        elif isinstance(action, DeletePod):
            out.append(("delete", action.name, action.reason))
        elif isinstance(action, CreateService):
            out.append(("service",))
        elif isinstance(action, Event):
            out.append(("event", action.type, action.reason))
        elif isinstance(action, Requeue):
            out.append(("requeue", round(action.seconds)))
    return out


def apply_status(status: CdcPipelineStatus | None, actions: list[Action]) -> CdcPipelineStatus:
    data = status.to_k8s() if status is not None else {}
    for action in actions:
        if isinstance(action, PatchStatus):
            data = merge(data, dict(action.fields))
    return CdcPipelineStatus.model_validate(data)


def condition(status: CdcPipelineStatus, type_: str) -> tuple[str, str]:
    found = status.condition(type_)
    assert found is not None, f"no {type_} condition in {status.conditions}"
    return found.status, found.reason
