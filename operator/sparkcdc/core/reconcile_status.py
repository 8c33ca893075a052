"""Turning one reconcile's verdict into a minimal status patch, plus small pure helpers.

Conditions follow kstatus: ``Ready``, ``Reconciling`` and ``Stalled`` always present with the
generation they reflect; ``lastTransitionTime`` changes only when a condition's status does.
``BinlogExpiry`` (core/binlog_retention.py) is judged from the driver's last report even while no
driver runs: a suspended or crash-looping pipeline is the one whose binlog runs out.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sparkcdc.core.binlog_retention import RetentionVerdict, judge, report_of
from sparkcdc.core.reconcile_types import (
    Action,
    ConditionView,
    CreateService,
    DriverPod,
    Event,
    Observed,
    PatchStatus,
    ProgressView,
    Requeue,
    Settings,
    SpecView,
    StatusView,
    Verdict,
    format_time,
)

CONDITION_TYPES = ("Ready", "Reconciling", "Stalled", "CrashLooping", "BinlogExpiry")
IMAGE_PULL_REASONS = ("ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull")
_DRIVER_FIELDS = {
    "pod": "pod",
    "epoch": "epoch",
    "restarts": "restarts",
    "lastFailure": "last_failure",
    "startedAt": "started_at",
    "createFailure": "create_failure",
}
MAX_SERVICE_NAME = 63


def driver_pod_name(pipeline: str, epoch: int) -> str:
    """One name per epoch, so a new driver never waits for an old pod's name to be released."""
    return f"{pipeline}-driver-{epoch}"


def driver_service_name(pipeline: str) -> str:
    """A DNS-1035 label (starts with a letter, at most 63 characters) for the headless Service."""
    base = pipeline if pipeline[:1].isalpha() else f"p-{pipeline}"
    name = f"{base}-driver"
    if len(name) <= MAX_SERVICE_NAME:
        return name
    digest = hashlib.sha256(pipeline.encode()).hexdigest()[:8]
    return f"{base[:46].rstrip('-')}-{digest}-driver"


def pending_cause(pod: DriverPod) -> tuple[str, str]:
    """Why a pod is still Pending: (condition reason, detail from the pod's status)."""
    if pod.unschedulable is not None:
        return "Unschedulable", pod.unschedulable or "no node fits the driver pod"
    reason, message = pod.waiting_reason or "", pod.waiting_message or ""
    if reason in IMAGE_PULL_REASONS:
        return "ImagePullFailed", f"{reason}: {message}".rstrip(": ")
    if reason == "CreateContainerConfigError":
        if "secret" in message.lower():
            return "SecretMissing", message
        return "ContainerConfigError", message
    if reason:
        return "PendingTimeout", f"{reason}: {message}".rstrip(": ")
    return "PendingTimeout", "the driver pod did not start"


def running_phase(spec: SpecView, progress: ProgressView | None) -> str:
    """Snapshotting or Streaming, from the progress the driver reported."""
    snapshots = spec.startup.mode in ("initial", "snapshot-only")
    if progress is None or progress.splits_total == 0:
        if progress is not None and progress.binlog_offset:
            return "Streaming"
        return "Snapshotting" if snapshots else "Streaming"
    if spec.startup.mode == "snapshot-only":
        return "Snapshotting"
    done = progress.splits_finished >= progress.splits_total
    return "Streaming" if done or progress.binlog_offset else "Snapshotting"


def assign_server_ids(size: int, taken: Sequence[tuple[int, int]], base: int) -> tuple[int, int]:
    """The lowest range of ``size`` ids at or above ``base`` overlapping none of ``taken``."""
    start = base
    for low, high in sorted(taken):
        if high < start:
            continue
        if start + size - 1 < low:
            break
        start = high + 1
    return start, start + size - 1


def assemble(
    spec: SpecView,
    status: StatusView | None,
    observed: Observed,
    now: datetime,
    settings: Settings,
    verdict: Verdict,
    actions: Sequence[Action],
    requeue: float | None,
) -> list[Action]:
    """Status patch first (it raises the epoch before a CreatePod), then ``actions`` with the
    Service after the pod actions (a new driver starts one call sooner; its executors, the
    Service's users, come seconds later), then the events."""
    retention = retention_verdict(status, now, settings)
    patch = _status_patch(spec, status, observed, now, settings, verdict, retention)
    out: list[Action] = []
    if patch:
        out.append(PatchStatus(patch))
    out.extend(a for a in actions if not isinstance(a, Event))
    if not observed.service_exists and not spec.suspend:
        out.append(CreateService())
    out.extend(a for a in actions if isinstance(a, Event))
    previous = next((c for c in status.conditions if c.type == "BinlogExpiry"), None) if status else None
    if retention.condition[0] == "True" and (previous is None or previous.status != "True"):
        out.append(Event("Warning", "BinlogExpiry", retention.condition[2]))
    if requeue is not None:
        out.append(Requeue(max(requeue, 1.0)))
    return out


def retention_verdict(status: StatusView | None, now: datetime, settings: Settings) -> RetentionVerdict:
    """The ``BinlogExpiry`` condition from the driver's last retention report, however old."""
    progress = status.progress if status else None
    report = report_of(progress.binlog_retention if progress else None)
    return judge(report, now, settings.binlog_expiry_margin_seconds, settings.binlog_expiry_margin_files)


def _status_patch(
    spec: SpecView,
    status: StatusView | None,
    observed: Observed,
    now: datetime,
    settings: Settings,
    verdict: Verdict,
    retention: RetentionVerdict,
) -> dict[str, Any]:
    patch: dict[str, Any] = {}
    if (status.phase if status else None) != verdict.phase:
        patch["phase"] = verdict.phase
    if (status.observed_generation if status else None) != observed.generation:
        patch["observedGeneration"] = observed.generation
    driver = _driver_patch(status, verdict.driver)
    if driver:
        patch["driver"] = driver
    restarts = verdict.driver.get("restarts", status.driver.restarts if status and status.driver else 0)
    existing = list(status.conditions) if status else []
    conditions = _conditions(existing, verdict, int(restarts), settings, observed.generation, now, retention)
    if conditions != [_condition_dict(c) for c in existing]:
        patch["conditions"] = conditions
    ids = _server_id_range(spec, status, observed, settings)
    if ids is not None:
        patch["serverIdRange"] = ids
    return patch


def _driver_patch(status: StatusView | None, changes: dict[str, Any]) -> dict[str, Any]:
    driver = status.driver if status else None
    out = {}
    for key, value in changes.items():
        current = getattr(driver, _DRIVER_FIELDS[key]) if driver is not None else None
        if key == "createFailure" and current is not None:
            current = {f: getattr(current, f) for f in ("reason", "message", "attempts", "at")}
        if current != value:
            out[key] = value
    return out


# The reason of a condition with nothing to report (Kubernetes requires one; kubectl shows it).
QUIET_REASONS = {
    "Ready": "NotReady",
    "Reconciling": "Reconciled",
    "Stalled": "Progressing",
    "CrashLooping": "NoRepeatedFailures",
    "BinlogExpiry": "NotReported",
}


def _conditions(
    existing: Sequence[ConditionView],
    verdict: Verdict,
    restarts: int,
    settings: Settings,
    generation: int,
    now: datetime,
    retention: RetentionVerdict,
) -> list[dict[str, Any]]:
    by_type = {c.type: c for c in existing}
    stalled = verdict.stalled
    if stalled is None:
        previous = by_type.get("Stalled")
        stalled = (previous.status, previous.reason, previous.message) if previous else ("False", "", "")
    looping = restarts >= settings.crash_looping_after
    crash = (
        ("True", "RepeatedFailures", f"{restarts} consecutive driver failures")
        if looping
        else ("False", "", "")
    )
    wanted = {"Ready": verdict.ready, "Reconciling": verdict.reconciling, "Stalled": stalled}
    wanted["CrashLooping"] = crash
    wanted["BinlogExpiry"] = retention.condition
    out = []
    for type_ in CONDITION_TYPES:
        state, reason, message = wanted[type_]
        reason = reason or QUIET_REASONS[type_]  # Kubernetes conditions always carry a reason
        previous = by_type.get(type_)
        changed = previous is None or previous.status != state or not previous.last_transition_time
        moment = format_time(now) if changed or previous is None else previous.last_transition_time
        out.append({
            "type": type_, "status": state, "reason": reason, "message": message[:32768],
            "lastTransitionTime": moment, "observedGeneration": generation,
        })  # fmt: skip
    out.extend(_condition_dict(c) for c in existing if c.type not in CONDITION_TYPES)
    return out


def _condition_dict(condition: ConditionView) -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": condition.type,
        "status": condition.status,
        "reason": condition.reason,
        "message": condition.message,
    }
    if condition.last_transition_time is not None:
        out["lastTransitionTime"] = condition.last_transition_time
    if condition.observed_generation is not None:
        out["observedGeneration"] = condition.observed_generation
    return out


def _server_id_range(
    spec: SpecView, status: StatusView | None, observed: Observed, settings: Settings
) -> str | None:
    """A range for a pipeline whose spec names none, not overlapping others on the same host."""
    if spec.source.server_id is not None or (status and status.server_id_range):
        return None
    if observed.server_ids_in_use is None:
        return None
    size = max(settings.server_id_block, spec.snapshot.parallelism + 1)
    start, end = assign_server_ids(size, observed.server_ids_in_use, settings.server_id_base)
    return f"{start}-{end}"
