"""The Argo CD health check (charts/sparkcdc/argocd/health.lua), run by Debian's Lua interpreters.

Argo CD runs health checks in gopher-lua (Lua 5.1 semantics) with the live object as the global
``obj``; JSON numbers arrive as floats. Each sample runs under ``lua5.1`` and ``lua5.4`` (installed by
hack/bootstrap.sh), with integers written as integers and as floats. Samples are hand-written statuses
in the operator's shape, and statuses produced by the operator's own ``core.reconcile`` decisions.
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.api.resource import CdcPipeline
from sparkcdc.core.reconcile import reconcile
from sparkcdc.core.reconcile_types import CreatePod, DriverPod, Observed, PatchStatus

REPO = Path(__file__).resolve().parents[3]
HEALTH_LUA = REPO / "charts" / "sparkcdc" / "argocd" / "health.lua"
ARGOCD_DOC = REPO / "docs" / "argocd.md"
INTERPRETERS = ("lua5.1", "lua5.4")
NOW = datetime(2025, 1, 1, 12, 0, 0, tzinfo=timezone.utc)

Obj = dict[str, Any]


def to_lua(value: Any, floats: bool = False) -> str:
    """A Lua table constructor for a JSON value, as Argo CD hands it to the script (null: absent)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value}.0" if floats else str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string literal is a valid Lua string literal for this text
    if isinstance(value, list):
        return "{" + ", ".join(to_lua(v, floats) for v in value) + "}"
    if isinstance(value, dict):
        items = [f"[{json.dumps(k)}] = {to_lua(v, floats)}" for k, v in value.items() if v is not None]
        return "{" + ", ".join(items) + "}"
    raise TypeError(f"not JSON: {value!r}")


def run_health(obj: Obj, interpreter: str = "lua5.4", floats: bool = False) -> tuple[str, str]:
    harness = (
        f"obj = {to_lua(obj, floats)}\n"
        f"local hs = dofile({json.dumps(str(HEALTH_LUA))})\n"
        'io.write(hs.status, "\\n", hs.message or "")\n'
    )
    res = subprocess.run([interpreter, "-"], input=harness, capture_output=True, text=True, timeout=30)
    assert res.returncode == 0, f"{interpreter} failed: {res.stderr}"
    status, _, message = res.stdout.partition("\n")
    return status, message


# -- hand-written samples ----------------------------------------------------------------------------


def cond(type_: str, status: str, reason: str = "", message: str = "", generation: int = 2) -> Obj:
    return {
        "type": type_, "status": status, "reason": reason, "message": message,
        "lastTransitionTime": "2025-01-01T11:00:00Z", "observedGeneration": generation,
    }  # fmt: skip


def pipeline(
    phase: str | None,
    conditions: list[Obj] | None = None,
    *,
    generation: int = 2,
    observed: int | None = 2,
    suspend: bool | None = None,
    progress: Obj | None = None,
) -> Obj:
    obj: Obj = {
        "apiVersion": "sparkcdc.io/v1alpha1",
        "kind": "CdcPipeline",
        "metadata": {"name": "shop", "namespace": "ns", "generation": generation},
        "spec": {"source": {"host": "db", "tables": ["shop.orders"]}, "sink": {"type": "console"}},
    }
    if suspend is not None:
        obj["spec"]["suspend"] = suspend
    if phase is None and conditions is None:
        return obj
    obj["status"] = {"phase": phase, "observedGeneration": observed, "conditions": conditions or []}
    if progress is not None:
        obj["status"]["progress"] = progress
    return obj


def ready(status: str, reason: str, message: str = "", generation: int = 2) -> Obj:
    return cond("Ready", status, reason, message, generation)


def reconciling(status: str, reason: str = "", message: str = "") -> Obj:
    return cond("Reconciling", status, reason, message)


def stalled(status: str, reason: str = "", message: str = "") -> Obj:
    return cond("Stalled", status, reason, message)


def crash(status: str, reason: str = "", message: str = "") -> Obj:
    return cond("CrashLooping", status, reason, message)


OK = [reconciling("False"), stalled("False"), crash("False")]

SAMPLES: dict[str, tuple[Obj, str, str]] = {
    "no status yet": (pipeline(None), "Progressing", "Waiting for the sparkcdc operator"),
    "new generation not observed": (
        pipeline("Streaming", [ready("True", "Streaming"), *OK], generation=3, observed=2),
        "Progressing",
        "act on generation 3",
    ),
    "status without observedGeneration": (
        pipeline("Streaming", [ready("True", "Streaming"), *OK], observed=None),
        "Progressing",
        "act on generation 2",
    ),
    "stale condition": (
        pipeline("Streaming", [ready("True", "Streaming", generation=1), *OK]),
        "Progressing",
        "Condition Ready reflects generation 1, not 2",
    ),
    "driver starting": (
        pipeline("Pending", [
            ready("False", "DriverStarting", "starting driver shop-driver-1 (epoch 1)"),
            reconciling("True", "DriverStarting", "starting driver shop-driver-1 (epoch 1)"),
            stalled("False"), crash("False"),
        ]),
        "Progressing",
        "DriverStarting: starting driver shop-driver-1",
    ),
    "snapshotting": (
        pipeline(
            "Snapshotting", [ready("True", "Snapshotting", "driver shop-driver-1 is running"), *OK],
            progress={"splitsTotal": 40, "splitsFinished": 12, "splitsDisplay": "12/40", "tables": 2},
        ),
        "Healthy",
        "Snapshotting: 12/40 splits",
    ),
    "streaming": (
        pipeline(
            "Streaming", [ready("True", "Streaming", "driver shop-driver-1 is running"), *OK],
            progress={"splitsTotal": 4, "splitsFinished": 4, "lagSeconds": 0.25,
                      "binlogOffset": "mysql-bin.000003:1234"},
        ),
        "Healthy",
        "Streaming, lag 0.2s, binlog mysql-bin.000003:1234",
    ),
    "streaming without progress yet": (
        pipeline("Streaming", [ready("True", "Streaming"), *OK]), "Healthy", "Streaming",
    ),
    "snapshot-only completed": (
        pipeline("Completed", [ready("True", "Completed", "finished"), *OK]), "Healthy", "Completed: fin",
    ),
    "suspended": (
        pipeline("Suspended", [ready("False", "Suspended", "spec.suspend is true"), *OK], suspend=True),
        "Suspended",
        "checkpoint is kept",
    ),
    "suspend requested, driver still running": (
        pipeline("Streaming", [ready("True", "Streaming"), *OK], suspend=True),
        "Progressing",
        "Suspending",
    ),
    "suspending, waiting for the pod": (
        pipeline("Suspended", [
            ready("False", "Suspended", "spec.suspend is true"),
            reconciling("True", "Suspending", "waiting for the driver pod to stop"), stalled("False"),
        ], suspend=True),
        "Progressing",
        "Suspending: waiting for the driver pod to stop",
    ),
    "resuming": (
        pipeline("Suspended", [ready("False", "Suspended"), *OK], suspend=False),
        "Progressing",
        "Resuming",
    ),
    "failed after max restarts": (
        pipeline("Failed", [
            ready("False", "MaxRestartsExceeded", "4 consecutive driver failures"),
            reconciling("False"), stalled("True", "MaxRestartsExceeded", "4 consecutive driver failures"),
            crash("True", "RepeatedFailures", "4 consecutive driver failures"),
        ]),
        "Degraded",
        "MaxRestartsExceeded: 4 consecutive driver failures",
    ),
    "invalid spec": (
        pipeline("Failed", [stalled("True", "InvalidSpec", "the spec is invalid: 1 problem(s)")]),
        "Degraded",
        "InvalidSpec: the spec is invalid",
    ),
    "driver failed, backing off": (
        pipeline("Pending", [
            ready("False", "DriverFailed", "exit code 1: Error: boom"),
            reconciling("True", "BackOff", "restarting in 8s (failure 1)"), stalled("False"), crash("False"),
        ]),
        "Degraded",
        "DriverFailed: exit code 1: Error: boom",
    ),
    "crash looping while it runs again": (
        pipeline("Streaming", [
            ready("True", "Streaming"), reconciling("False"), stalled("False"),
            crash("True", "RepeatedFailures", "3 consecutive driver failures"),
        ]),
        "Degraded",
        "RepeatedFailures: 3 consecutive driver failures",
    ),
    "secret missing": (
        pipeline("Pending", [
            ready("False", "SecretMissing", 'secret "mysql-cdc" not found'),
            reconciling("True", "DriverStarting"), stalled("False"), crash("False"),
        ]),
        "Degraded",
        'SecretMissing: secret "mysql-cdc" not found',
    ),
    "image cannot be pulled": (
        pipeline("Pending", [ready("False", "ImagePullFailed", "ImagePullBackOff"), *OK]),
        "Degraded",
        "ImagePullFailed",
    ),
    "unschedulable for now": (
        pipeline("Pending", [
            ready("False", "Unschedulable", "0/3 nodes are available"),
            reconciling("True", "DriverStarting"), stalled("False"), crash("False"),
        ]),
        "Progressing",
        "DriverStarting",
    ),
    "unschedulable past the pending timeout": (
        pipeline("Pending", [
            ready("False", "Unschedulable", "pending for more than 300s"), reconciling("True", "BackOff"),
            stalled("True", "Unschedulable", "pending for more than 300s: Unschedulable"), crash("False"),
        ]),
        "Degraded",
        "Unschedulable: pending for more than 300s",
    ),
    "no progress": (
        pipeline("Streaming", [
            ready("False", "NoProgress", "the binlog offset did not move for 900s"), reconciling("False"),
            stalled("True", "NoProgress", "the binlog offset did not move for 900s"), crash("False"),
        ]),
        "Degraded",
        "NoProgress: the binlog offset did not move",
    ),
    "spec changed, driver being replaced": (
        pipeline("Pending", [
            ready("False", "SpecChanged", "replacing driver shop-driver-1: SpecChanged"),
            reconciling("True", "SpecChanged", "replacing driver shop-driver-1: SpecChanged"),
            stalled("False"), crash("False"),
        ]),
        "Progressing",
        "SpecChanged: replacing driver",
    ),
    "conditions without observedGeneration": (
        pipeline("Streaming", [{"type": "Ready", "status": "True", "reason": "Streaming"}]),
        "Healthy",
        "Streaming",
    ),
}  # fmt: skip


@pytest.mark.parametrize("floats", [False, True], ids=["ints", "floats"])
@pytest.mark.parametrize("interpreter", INTERPRETERS)
@pytest.mark.parametrize("sample", list(SAMPLES))
def test_sample_status_maps_to_health(sample: str, interpreter: str, floats: bool) -> None:
    obj, want_status, want_message = SAMPLES[sample]
    status, message = run_health(obj, interpreter, floats)
    assert status == want_status, f"{sample}: {status} ({message})"
    assert want_message in message, f"{sample}: {message!r}"


def test_every_argo_health_status_is_reachable() -> None:
    assert {s for _, s, _ in SAMPLES.values()} == {"Healthy", "Progressing", "Degraded", "Suspended"}


def test_degraded_reasons_are_reasons_the_operator_uses() -> None:
    """Every reason the script singles out is written by the operator (no drift after a rename)."""
    source = "\n".join(p.read_text() for p in (REPO / "operator" / "sparkcdc").rglob("*.py"))
    table = re.search(r"DEGRADED_REASONS = \{(.*?)\n\}", HEALTH_LUA.read_text(), re.S)
    assert table is not None
    reasons = re.findall(r"^\s*(\w+) = true", table.group(1), re.M)
    assert reasons
    for reason in reasons:
        assert f'"{reason}"' in source, f"{reason} is not a reason in operator/sparkcdc"


def test_the_docs_ship_the_same_script() -> None:
    """docs/argocd.md embeds the script in the argocd-cm example; it must be the chart's file."""
    doc = ARGOCD_DOC.read_text()
    block = re.search(
        r"resource\.customizations\.health\.sparkcdc\.io_CdcPipeline: \|\n(.*?)\n```", doc, re.S
    )
    assert block is not None, "docs/argocd.md lacks the argocd-cm example"
    lines = block.group(1).split("\n")
    indent = min(len(line) - len(line.lstrip()) for line in lines if line.strip())
    embedded = "\n".join(line[indent:] for line in lines) + "\n"
    assert embedded == HEALTH_LUA.read_text()


# -- statuses written by the operator's own decisions ------------------------------------------------


def merge(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch, as the API server applies status patches."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge(out.get(key), value)
    return out


BASE: Obj = {
    "apiVersion": "sparkcdc.io/v1alpha1",
    "kind": "CdcPipeline",
    "metadata": {"name": "shop", "namespace": "ns", "uid": "uid-1", "generation": 1},
    "spec": {
        "source": {
            "host": "127.0.0.1", "user": "cdc", "tables": ["shop.orders"], "serverId": "5400-5404",
            "passwordSecretRef": {"name": "mysql-cdc", "key": "password"},
        },
        "sink": {"type": "console"},
    },
}  # fmt: skip


def operator_status(obj: Obj, pods: tuple[DriverPod, ...] = (), rounds: int = 3) -> Obj:
    """``obj`` with the status the operator's reconcile converges to for the observed pods."""
    obj = copy.deepcopy(obj)
    for _ in range(rounds):
        parsed = CdcPipeline.from_k8s(obj)
        observed = Observed(
            pipeline=obj["metadata"]["name"], generation=obj["metadata"]["generation"], spec_hash="h",
            pods=pods, service_exists=True, last_progress_at=NOW,
        )  # fmt: skip
        actions = reconcile(parsed.spec, parsed.status, observed, NOW)
        for action in actions:
            if isinstance(action, PatchStatus):
                obj["status"] = merge(obj.get("status") or {}, dict(action.fields))
        if any(isinstance(a, CreatePod) for a in actions):
            break  # the next observation would include the new pod
    return obj


def pod(phase: str, **fields: Any) -> DriverPod:
    values: dict[str, Any] = {"started_at": NOW - timedelta(seconds=25), **fields}
    return DriverPod(
        name="shop-driver-1", created_at=NOW - timedelta(seconds=30), epoch=1, spec_hash="h", phase=phase,
        **values,
    )  # fmt: skip


def with_driver(obj: Obj, progress: Obj | None = None) -> Obj:
    obj = copy.deepcopy(obj)
    obj["status"] = {"driver": {"epoch": 1, "pod": "shop-driver-1"}, "observedGeneration": 1}
    if progress is not None:
        obj["status"]["progress"] = progress
    return obj


def suspended(obj: Obj) -> Obj:
    obj = copy.deepcopy(obj)
    obj["spec"]["suspend"] = True
    return obj


def failing(obj: Obj) -> Obj:
    obj = copy.deepcopy(obj)
    obj["spec"]["restartPolicy"] = {"maxRestarts": 0}
    return obj


OPERATOR_CASES: dict[str, tuple[Obj, tuple[DriverPod, ...], str]] = {
    "new pipeline": (BASE, (), "Progressing"),
    "driver running, snapshot under way": (
        with_driver(BASE, {"splitsTotal": 4, "splitsFinished": 1}), (pod("Running"),), "Healthy",
    ),
    "driver running, streaming": (
        with_driver(BASE, {"splitsTotal": 4, "splitsFinished": 4, "binlogOffset": "b.000001:4"}),
        (pod("Running"),), "Healthy",
    ),
    "driver failed": (
        with_driver(BASE), (pod("Failed", exit_code=1, finished_at=NOW - timedelta(seconds=1)),), "Degraded",
    ),
    "driver failed, no restarts allowed": (
        with_driver(failing(BASE)), (pod("Failed", exit_code=1, finished_at=NOW),), "Degraded",
    ),
    "secret missing": (
        with_driver(BASE),
        (pod("Pending", started_at=None, waiting_reason="CreateContainerConfigError",
             waiting_message='secret "mysql-cdc" not found'),),
        "Degraded",
    ),
    "suspended, driver gone": (suspended(with_driver(BASE)), (), "Suspended"),
    "suspended, driver still running": (suspended(with_driver(BASE)), (pod("Running"),), "Progressing"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(OPERATOR_CASES))
def test_statuses_the_operator_writes_map_to_health(case: str) -> None:
    obj, pods, want = OPERATOR_CASES[case]
    live = operator_status(obj, pods)
    status, message = run_health(live, "lua5.4", floats=True)
    assert status == want, f"{case}: {status} ({message}); status was {json.dumps(live.get('status'))}"
