"""From API objects to the plain observation ``core.reconcile`` decides on."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sparkcdc.controller.builders import (
    ANNOTATION_EPOCH,
    ANNOTATION_RESNAPSHOT_NONCE,
    ANNOTATION_RESTART_NONCE,
    ANNOTATION_SPEC_HASH,
)
from sparkcdc.core.reconcile_types import DriverPod, parse_time

Obj = Mapping[str, Any]
# What moves while a driver works; lastCommitAt moves with the heartbeats of an idle source too.
_PROGRESS_KEYS = (
    "splitsTotal",
    "splitsFinished",
    "rowsSnapshotted",
    "eventsApplied",
    "binlogOffset",
    "lastCommitAt",
)


def driver_pod_view(pod: Obj, now: datetime) -> DriverPod:
    """What reconcile needs to know about one driver pod."""
    md = pod.get("metadata") or {}
    annotations = md.get("annotations") or {}
    status = pod.get("status") or {}
    container = _container_status(status)
    state = container.get("state") or {}
    running, terminated, waiting = (state.get(k) or {} for k in ("running", "terminated", "waiting"))
    return DriverPod(
        name=md.get("name", ""),
        created_at=parse_time(md.get("creationTimestamp")) or now,
        epoch=_int(annotations.get(ANNOTATION_EPOCH)),
        spec_hash=annotations.get(ANNOTATION_SPEC_HASH),
        restart_nonce=annotations.get(ANNOTATION_RESTART_NONCE),
        resnapshot_nonce=annotations.get(ANNOTATION_RESNAPSHOT_NONCE),
        phase=status.get("phase") or "Pending",
        deleting=md.get("deletionTimestamp") is not None,
        started_at=parse_time(running.get("startedAt") or terminated.get("startedAt")),
        finished_at=parse_time(terminated.get("finishedAt")),
        exit_code=_int(terminated.get("exitCode")),
        termination_reason=terminated.get("reason"),
        termination_message=terminated.get("message"),
        waiting_reason=waiting.get("reason"),
        waiting_message=waiting.get("message"),
        unschedulable=_unschedulable(status),
    )


def _container_status(status: Obj) -> Obj:
    statuses = status.get("containerStatuses") or []
    named = [s for s in statuses if s.get("name") == "driver"]
    return (named or statuses or [{}])[0]  # type: ignore[no-any-return]


def _unschedulable(status: Obj) -> str | None:
    for condition in status.get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return str(condition.get("message") or condition.get("reason") or "unschedulable")
    return None


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


class ProgressClock:
    """When each pipeline's ``status.progress`` last moved, as seen by this operator process.

    Lag alone does not count as movement: it grows while a stuck driver does nothing. After an
    operator restart every pipeline gets a fresh full stall period.
    """

    def __init__(self) -> None:
        self._seen: dict[str, tuple[tuple[Any, ...], datetime]] = {}
        self._lock = threading.Lock()

    def last_progress(self, uid: str, status: Obj | None, now: datetime) -> datetime:
        progress = (status or {}).get("progress") or {}
        fingerprint = tuple(progress.get(k) for k in _PROGRESS_KEYS)
        with self._lock:
            previous = self._seen.get(uid)
            if previous is None or previous[0] != fingerprint:
                self._seen[uid] = (fingerprint, now)
                return now
            return previous[1]

    def forget(self, uid: str) -> None:
        with self._lock:
            self._seen.pop(uid, None)
