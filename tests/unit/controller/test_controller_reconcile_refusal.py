"""A driver pod the API server refuses (quota, PodSecurity, RBAC, invalid): the refusal is
recorded with a Warning Event and conditions saying what to do, and the next attempt backs off
by restartPolicy instead of raising the epoch on every reconcile (pure decisions)."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from harness.reconcile_fixtures import (
    NOW,
    apply_status,
    condition,
    make_pod,
    make_spec,
    make_status,
    observed,
    summary,
)
from sparkcdc.api import CdcPipelineStatus
from sparkcdc.core.reconcile import driver_refused, reconcile
from sparkcdc.core.reconcile_types import CreatePod, Event, PatchStatus, Requeue
from sparkcdc.core.refusal import DRIVER_ACCOUNT_MISSING, Refusal, classify
from sparkcdc.kube.client import refusal_of

QUOTA = Refusal(
    403,
    "Forbidden",
    'pods "shop-driver-2" is forbidden: exceeded quota: no-pods, requested: pods=1, used: pods=0, '
    "limited: pods=0",
)
POLICY = {"restartPolicy": {"initialBackoffSeconds": 10, "maxBackoffSeconds": 35}}


def _refused_start(status: CdcPipelineStatus, refusal: Refusal = QUOTA, at: Any = NOW) -> CdcPipelineStatus:
    """Reconcile (which raises the epoch and creates the pod), then the pod is refused."""
    spec = make_spec(**POLICY)
    first = reconcile(spec, status, observed(), at)
    assert any(isinstance(a, CreatePod) for a in first)
    status = apply_status(status, first)
    return apply_status(status, driver_refused(spec, status, observed(), at, refusal))


def test_a_refusal_is_recorded_named_and_backed_off() -> None:
    spec, status = make_spec(**POLICY), apply_status(make_status(epoch=1), reconcile(
        make_spec(**POLICY), make_status(epoch=1), observed(), NOW
    ))  # fmt: skip
    actions = driver_refused(spec, status, observed(), NOW, QUOTA)

    assert not any(isinstance(a, CreatePod) for a in actions)
    events = [a for a in actions if isinstance(a, Event)]
    assert [(e.type, e.reason) for e in events] == [("Warning", "QuotaExceeded")]
    assert "exceeded quota: no-pods" in events[0].message and "ResourceQuota" in events[0].message
    assert [a.seconds for a in actions if isinstance(a, Requeue)] == [10]
    after = apply_status(status, actions)
    assert after.driver is not None and after.driver.epoch == 2
    failure = after.driver.create_failure
    assert failure is not None and (failure.reason, failure.attempts) == ("QuotaExceeded", 1)
    assert condition(after, "Ready") == ("False", "QuotaExceeded")
    assert condition(after, "Stalled") == ("True", "QuotaExceeded")
    assert condition(after, "Reconciling") == ("True", "BackOff")
    stalled = after.condition("Stalled")
    assert stalled is not None and "shop-driver-2" in stalled.message and "ResourceQuota" in stalled.message


def test_no_new_epoch_while_the_backoff_runs_then_one_per_attempt_with_growing_waits() -> None:
    spec = make_spec(**POLICY)
    status = _refused_start(make_status(epoch=1))
    at = NOW
    epochs, waits = [], []
    for _attempt in range(4):
        # Reconciles of other triggers during the wait change nothing and create nothing.
        during = reconcile(spec, status, observed(), at + timedelta(seconds=1))
        assert not any(isinstance(a, CreatePod) for a in during)
        assert [a for a in during if isinstance(a, PatchStatus)] == []
        (wait,) = [a.seconds for a in during if isinstance(a, Requeue)]
        waits.append(round(wait + 1))
        at += timedelta(seconds=round(wait + 1))
        actions = reconcile(spec, status, observed(), at)
        (create,) = [a for a in actions if isinstance(a, CreatePod)]
        epochs.append(create.epoch)
        status = apply_status(status, actions)
        status = apply_status(status, driver_refused(spec, status, observed(), at, QUOTA))
    assert waits == [10, 20, 35, 35]  # initial * 2^(n-1), capped at maxBackoffSeconds
    assert epochs == [3, 4, 5, 6]
    assert status.driver is not None and status.driver.create_failure is not None
    assert status.driver.create_failure.attempts == 5
    assert status.driver.restarts == 0  # refusals are not driver failures (maxRestarts)


def test_a_spec_change_tries_again_at_once() -> None:
    status = _refused_start(make_status(epoch=1))
    spec = make_spec(**POLICY, spark={"driver": {"memory": "512m"}})
    actions = reconcile(spec, status, observed(generation=2), NOW + timedelta(seconds=1))
    assert [a.epoch for a in actions if isinstance(a, CreatePod)] == [3]


def test_a_created_pod_clears_the_refusal_and_stalled() -> None:
    status = _refused_start(make_status(epoch=1))
    assert status.driver is not None
    actions = reconcile(make_spec(**POLICY), status, observed(make_pod(2, "Pending", age=1)), NOW)
    patch = next(a for a in actions if isinstance(a, PatchStatus))
    assert patch.fields["driver"] == {"createFailure": None}
    after = apply_status(status, actions)
    assert after.driver is not None and after.driver.create_failure is None
    assert condition(after, "Stalled")[0] == "False"
    assert ("event", "Warning", "QuotaExceeded") not in summary(actions)


@pytest.mark.parametrize(
    ("refusal", "reason", "hint"),
    [
        (QUOTA, "QuotaExceeded", "ResourceQuota"),
        (
            Refusal(403, "Forbidden", 'pods "p" is forbidden: violates PodSecurity "restricted:latest"'),
            "DriverPodForbidden",
            "PodSecurity",
        ),
        (
            Refusal(422, "Invalid", 'Pod "p" is invalid: spec.containers[0].image: Required'),
            "DriverPodInvalid",
            "",
        ),
        (
            Refusal(None, DRIVER_ACCOUNT_MISSING, "namespace ns has no ServiceAccount"),
            DRIVER_ACCOUNT_MISSING,
            "",
        ),
        (Refusal(500, "InternalError", "etcdserver: request timed out"), "DriverPodCreateFailed", "retrying"),
    ],
)
def test_classify(refusal: Refusal, reason: str, hint: str) -> None:
    got_reason, message, got_hint = classify(refusal)
    assert got_reason == reason and hint in got_hint
    assert message == refusal.message


def test_classify_keeps_messages_short_and_on_one_line() -> None:
    _, message, _ = classify(Refusal(422, "Invalid", "a\n  b " + "x" * 2000))
    assert message.startswith("a b x") and len(message) == 512 and message.endswith("...")


def test_refusal_of_reads_the_status_body_not_the_headers() -> None:
    err = ApiException(status=403, reason="Forbidden")
    err.body = json.dumps({"kind": "Status", "reason": "Forbidden", "message": QUOTA.message})
    err.headers = {"Audit-Id": "abc"}
    assert refusal_of(err) == Refusal(403, "Forbidden", QUOTA.message)
    bare = ApiException(status=422, reason="Unprocessable Entity")
    assert refusal_of(bare) == Refusal(422, "Unprocessable Entity", "Unprocessable Entity")
