"""Table-driven tests of the operator's decisions (``sparkcdc.core.reconcile``)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from harness.reconcile_fixtures import (
    HASH,
    NOW,
    apply_status,
    condition,
    failed_pod,
    make_pod,
    make_spec,
    make_status,
    observed,
    summary,
)
from sparkcdc.controller.observe import ProgressClock
from sparkcdc.core.reconcile import backoff_seconds, reconcile
from sparkcdc.core.reconcile_types import CreatePod, DeletePod, Observed, PatchStatus, Settings

POD1, POD2 = "shop-driver-1", "shop-driver-2"
STARTED = {"epoch": 1, "pod": POD1, "startedAt": "*"}
BOOM = f"{POD1}: exit code 1: Error: boom"
UNSCHEDULABLE = f"{POD1}: pending for more than 300s: Unschedulable: 0/1 nodes are available"

CASES: list[tuple[str, dict[str, Any], Any, Observed, list[tuple[Any, ...]]]] = [
    (
        "new pipeline: epoch 1, pod, service",
        {},
        None,
        observed(service=False),
        [
            ("status", {"phase": "Pending", "driver": STARTED}),
            ("create", 1),
            ("service",),
            ("event", "Normal", "DriverStarting"),
            ("requeue", 300),
        ],
    ),
    (
        "pod gone: the epoch rises only now, then the new pod",
        {},
        make_status(phase="Streaming", epoch=1),
        observed(),
        [
            ("status", {"phase": "Pending", "driver": {"epoch": 2, "pod": POD2, "startedAt": "*"}}),
            ("create", 2),
            ("event", "Normal", "DriverStarting"),
            ("requeue", 300),
        ],
    ),
    (
        "current pod terminating: wait, epoch unchanged",
        {},
        make_status(phase="Streaming"),
        observed(make_pod(deleting=True)),
        [("status", {"phase": "Pending"}), ("requeue", 2)],
    ),
    (
        "stale pod of an old epoch: deleted, no new pod while it lives",
        {},
        make_status(phase="Pending", epoch=2),
        observed(make_pod(1)),
        [("delete", POD1, "StaleEpoch"), ("requeue", 2)],
    ),
    (
        "spec changed: the driver rolls",
        {},
        make_status(phase="Streaming"),
        observed(make_pod(spec_hash="old")),
        [
            ("status", {"phase": "Pending"}),
            ("delete", POD1, "SpecChanged"),
            ("event", "Normal", "SpecChanged"),
        ],
    ),
    (
        "restartNonce changed: the driver restarts and failures are forgiven",
        {"restartNonce": "2"},
        make_status(phase="Streaming", restarts=2),
        observed(make_pod()),
        [
            ("status", {"phase": "Pending", "driver": {"restarts": 0}}),
            ("delete", POD1, "RestartRequested"),
            ("event", "Normal", "RestartRequested"),
        ],
    ),
    (
        "resnapshotNonce changed: a streaming driver follows it itself, it is not replaced",
        {"resnapshotNonce": "a"},
        make_status(phase="Snapshotting"),
        observed(make_pod(), last_progress_at=NOW),
        [("requeue", 600)],
    ),
    (
        "resnapshotNonce changed: a snapshot-only driver does not stream, it is replaced",
        {"resnapshotNonce": "a", "startup": {"mode": "snapshot-only"}},
        make_status(phase="Streaming"),
        observed(make_pod()),
        [
            ("status", {"phase": "Pending"}),
            ("delete", POD1, "ResnapshotRequested"),
            ("event", "Normal", "ResnapshotRequested"),
        ],
    ),
    (
        "suspend: the pod goes, phase Suspended",
        {"suspend": True},
        make_status(phase="Streaming"),
        observed(make_pod()),
        [
            ("status", {"phase": "Suspended"}),
            ("delete", POD1, "Suspended"),
            ("event", "Normal", "Suspended"),
            ("requeue", 2),
        ],
    ),
    (
        "suspended without a pod: nothing to do, no new epoch",
        {"suspend": True},
        make_status(phase="Suspended"),
        observed(),
        [],
    ),
    (
        "driver failed: recorded once, restart after the initial backoff",
        {},
        make_status(phase="Streaming"),
        observed(failed_pod()),
        [
            ("status", {"phase": "Pending", "driver": {"restarts": 1, "lastFailure": BOOM}}),
            ("event", "Warning", "DriverFailed"),
            ("requeue", 10),
        ],
    ),
    (
        "driver refused a changed source: reason SourceChanged, Failed, not restarted",
        {},
        make_status(phase="Streaming"),
        observed(
            replace(failed_pod(), termination_message="the source changed: server_id 1 -> 2", exit_code=2)
        ),
        [
            (
                "status",
                {
                    "phase": "Failed",
                    "driver": {
                        "restarts": 1,
                        "lastFailure": f"{POD1}: exit code 2: Error: the source changed: server_id 1 -> 2",
                    },
                },
            ),
            ("event", "Warning", "SourceChanged"),
        ],
    ),
    (
        "failure already recorded, backoff not over: just wait",
        {},
        make_status(phase="Pending", restarts=1, last_failure=f"{POD1}: exit code 1"),
        observed(failed_pod(finished_ago=4)),
        [("requeue", 6)],
    ),
    (
        "backoff over: the failed pod is deleted (the epoch rises once it is gone)",
        {},
        make_status(phase="Pending", restarts=1, last_failure=f"{POD1}: exit code 1"),
        observed(failed_pod(finished_ago=11)),
        [("delete", POD1, "RestartAfterFailure")],
    ),
    (
        "backoff doubles per failure: third failure waits 40s",
        {},
        make_status(phase="Pending", restarts=3, last_failure=f"{POD1}: x"),
        observed(failed_pod(finished_ago=30)),
        [("requeue", 10)],
    ),
    (
        "a driver that ran past stableSeconds starts a new failure series",
        {},
        make_status(phase="Streaming", restarts=3),
        observed(failed_pod(ran=700)),
        [
            ("status", {"phase": "Pending", "driver": {"restarts": 1, "lastFailure": BOOM}}),
            ("event", "Warning", "DriverFailed"),
            ("requeue", 10),
        ],
    ),
    (
        "maxRestarts exceeded: Failed, the pod is kept for its logs",
        {"restartPolicy": {"maxRestarts": 1}},
        make_status(phase="Pending", restarts=1, last_failure="shop-driver-0: x"),
        observed(failed_pod()),
        [
            ("status", {"phase": "Failed", "driver": {"restarts": 2, "lastFailure": BOOM}}),
            ("event", "Warning", "DriverFailed"),
            ("event", "Warning", "MaxRestartsExceeded"),
        ],
    ),
    (
        "Failed sticks while the spec is unchanged",
        {"restartPolicy": {"maxRestarts": 1}},
        make_status(phase="Failed", restarts=2, generation=1),
        observed(),
        [],
    ),
    (
        "Failed ends with a new generation: a new driver",
        {"restartPolicy": {"maxRestarts": 1}},
        make_status(phase="Failed", restarts=2, generation=1),
        observed(generation=2),
        [
            ("status", {"phase": "Pending", "driver": {"epoch": 2, "pod": POD2, "startedAt": "*"}}),
            ("create", 2),
            ("event", "Normal", "DriverStarting"),
            ("requeue", 300),
        ],
    ),
    (
        "running for stableSeconds resets the restart counter",
        {},
        make_status(phase="Snapshotting", restarts=2),
        observed(make_pod(age=700), last_progress_at=NOW),
        [("status", {"driver": {"restarts": 0}}), ("requeue", 600)],
    ),
    (
        "pending past the timeout, unschedulable: a failure naming the cause",
        {},
        make_status(phase="Pending"),
        observed(make_pod(phase="Pending", age=301, unschedulable="0/1 nodes are available")),
        [
            ("status", {"driver": {"restarts": 1, "lastFailure": UNSCHEDULABLE}}),
            ("event", "Warning", "Unschedulable"),
            ("requeue", 9),
        ],
    ),
    (
        "pending within the timeout: wait until it",
        {},
        make_status(phase="Pending"),
        observed(make_pod(phase="Pending", age=100)),
        [("requeue", 200)],
    ),
    (
        "pod succeeded: Completed, nothing restarted",
        {"startup": {"mode": "snapshot-only"}},
        make_status(phase="Snapshotting"),
        observed(make_pod(phase="Succeeded", exit_code=0)),
        [("status", {"phase": "Completed"})],
    ),
    (
        "pipeline deleting: only pod deletions",
        {},
        make_status(phase="Streaming"),
        observed(make_pod(), make_pod(2, deleting=True), deleting=True),
        [("delete", POD1, "PipelineDeleted")],
    ),
]


@pytest.mark.parametrize(
    ("spec_changes", "status", "seen", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_decisions(spec_changes: dict[str, Any], status: Any, seen: Observed, expected: list[Any]) -> None:
    got = summary(reconcile(make_spec(**spec_changes), status, seen, NOW))
    # Patches of conditions and observedGeneration alone are checked by the tests below.
    assert [g for g in got if g != ("status", {})] == expected


def test_status_patch_comes_before_the_pod_it_fences() -> None:
    actions = reconcile(make_spec(), make_status(epoch=4), observed(), NOW)
    kinds = [type(a) for a in actions]
    assert kinds.index(PatchStatus) < kinds.index(CreatePod)
    patch = next(a for a in actions if isinstance(a, PatchStatus))
    assert patch.fields["driver"]["epoch"] == 5
    assert next(a for a in actions if isinstance(a, CreatePod)).epoch == 5


def test_converges_a_second_reconcile_changes_nothing() -> None:
    spec, seen = make_spec(), observed(make_pod(), last_progress_at=NOW)
    first = reconcile(spec, make_status(phase="Pending"), seen, NOW)
    status = apply_status(make_status(phase="Pending"), first)
    assert status.phase == "Snapshotting"
    assert [a for a in reconcile(spec, status, seen, NOW) if isinstance(a, PatchStatus)] == []


def test_kstatus_conditions_with_observed_generation() -> None:
    seen = observed(make_pod(), generation=3, last_progress_at=NOW)
    status = apply_status(make_status(phase="Pending"), reconcile(make_spec(), make_status(), seen, NOW))
    assert status.observed_generation == 3
    assert condition(status, "Ready") == ("True", "Snapshotting")
    assert condition(status, "Reconciling") == ("False", "Reconciled")
    assert condition(status, "Stalled") == ("False", "Progressing")
    assert condition(status, "CrashLooping") == ("False", "NoRepeatedFailures")
    assert {c.observed_generation for c in status.conditions} == {3}


def test_transition_time_changes_only_with_the_status() -> None:
    spec, seen = make_spec(), observed(make_pod(), last_progress_at=NOW)
    status = apply_status(None, reconcile(spec, None, seen, NOW))
    later = NOW + timedelta(seconds=30)
    again = apply_status(status, reconcile(spec, status, observed(make_pod(), last_progress_at=later), later))
    ready_before, ready_after = status.condition("Ready"), again.condition("Ready")
    assert (
        ready_before and ready_after and ready_before.last_transition_time == ready_after.last_transition_time
    )


def test_a_refused_source_stays_refused_until_the_spec_changes() -> None:
    refused = replace(failed_pod(), termination_message="the source changed: server_id 1 -> 2", exit_code=2)
    before = make_status(phase="Streaming")
    status = apply_status(before, reconcile(make_spec(), before, observed(refused), NOW))
    assert status.phase == "Failed"
    assert condition(status, "Ready") == ("False", "SourceChanged")
    assert condition(status, "Stalled") == ("True", "SourceChanged")
    ready = status.condition("Ready")
    assert ready is not None and "server_id 1 -> 2" in ready.message
    later = NOW + timedelta(minutes=10)  # far past any backoff: still no restart, nothing changes
    assert [
        a for a in reconcile(make_spec(), status, observed(refused), later) if not isinstance(a, PatchStatus)
    ] == []
    assert apply_status(status, reconcile(make_spec(), status, observed(refused), later)) == status
    # The way out: a changed spec (another spec.source, onSourceChange) replaces the driver.
    changed = observed(replace(refused, spec_hash="old"), generation=2)
    assert [s for s in summary(reconcile(make_spec(), status, changed, later)) if s[0] != "status"] == [
        ("delete", POD1, "SpecChanged"),
        ("event", "Normal", "SpecChanged"),
    ]


def test_a_lost_binlog_is_not_retried_like_a_crash() -> None:
    """A purged resume position fails the same way on every restart: the pipeline waits for the
    user (onBinlogLost: resnapshot, a restartNonce), with its own reason instead of DriverFailed."""
    lost = "binlog lost: the pipeline must resume reading at binlog.000003:4, but binlog file ..."
    pod = replace(failed_pod(), termination_message=lost, exit_code=2)
    before = make_status(phase="Streaming")
    status = apply_status(before, reconcile(make_spec(), before, observed(pod), NOW))
    assert status.phase == "Failed"
    assert condition(status, "Ready") == ("False", "BinlogLost")
    assert condition(status, "Stalled") == ("True", "BinlogLost")
    later = NOW + timedelta(minutes=10)
    assert [
        a for a in reconcile(make_spec(), status, observed(pod), later) if not isinstance(a, PatchStatus)
    ] == []


def test_a_long_refusal_keeps_both_servers_named() -> None:
    text = (
        "the source changed: the checkpoint was written by server_id 1, but the source is now server_id 2: "
    )
    refused = replace(failed_pod(), termination_message=text + "x" * 3000, exit_code=2)
    status = apply_status(make_status(), reconcile(make_spec(), make_status(), observed(refused), NOW))
    ready = status.condition("Ready")
    assert ready is not None and ready.reason == "SourceChanged" and text in ready.message


def test_pending_timeout_sets_stalled_with_the_cause() -> None:
    pod = make_pod(phase="Pending", age=400, waiting_reason="CreateContainerConfigError",
                   waiting_message='secret "db" not found')  # fmt: skip
    status = apply_status(make_status(), reconcile(make_spec(), make_status(), observed(pod), NOW))
    assert condition(status, "Stalled") == ("True", "SecretMissing")
    assert condition(status, "Ready") == ("False", "SecretMissing")
    assert status.driver and 'secret "db" not found' in (status.driver.last_failure or "")


@pytest.mark.parametrize(
    ("waiting", "cause"),
    [
        ("ImagePullBackOff", "ImagePullFailed"),
        ("ErrImagePull", "ImagePullFailed"),
        ("Other", "PendingTimeout"),
    ],
)
def test_pending_causes(waiting: str, cause: str) -> None:
    pod = make_pod(phase="Pending", age=400, waiting_reason=waiting, waiting_message="m")
    status = apply_status(make_status(), reconcile(make_spec(), make_status(), observed(pod), NOW))
    assert condition(status, "Stalled") == ("True", cause)


def test_pending_cause_is_named_before_the_timeout() -> None:
    pod = make_pod(phase="Pending", age=5, unschedulable="0/1 nodes")
    status = apply_status(make_status(), reconcile(make_spec(), make_status(), observed(pod), NOW))
    assert condition(status, "Ready") == ("False", "Unschedulable")
    assert status.driver and status.driver.restarts == 0


def test_crash_looping_after_repeated_failures() -> None:
    status = make_status(phase="Pending", restarts=1, last_failure="shop-driver-0: x")
    status = apply_status(status, reconcile(make_spec(), status, observed(failed_pod()), NOW))
    assert condition(status, "CrashLooping") == ("True", "RepeatedFailures")


def test_no_progress_is_stalled_unless_caught_up() -> None:
    stale = NOW - timedelta(seconds=700)
    seen = observed(make_pod(age=800), last_progress_at=stale)
    status = apply_status(make_status(), reconcile(make_spec(), make_status(), seen, NOW))
    assert condition(status, "Stalled") == ("True", "NoProgress")
    assert condition(status, "Ready") == ("False", "NoProgress")
    caught_up = make_status(progress={"splitsTotal": 2, "splitsFinished": 2, "lagSeconds": 1.0})
    status = apply_status(caught_up, reconcile(make_spec(), caught_up, seen, NOW))
    assert status.phase == "Streaming"
    assert condition(status, "Stalled") == ("False", "Progressing")


def test_a_driver_that_stopped_committing_is_stalled_whatever_its_last_lag() -> None:
    """A driver reporting its commits (heartbeats of an idle source included) proves it is alive
    by them: once they stop, its last lag (small: it had caught up, then hung) does not hide it."""
    hung = make_status(
        progress={
            "splitsTotal": 2,
            "splitsFinished": 2,
            "lagSeconds": 0.0,
            "lastCommitAt": "2026-01-01T00:00:00Z",
        }
    )
    seen = observed(make_pod(age=800), last_progress_at=NOW - timedelta(seconds=700))
    status = apply_status(hung, reconcile(make_spec(), hung, seen, NOW))
    assert condition(status, "Stalled") == ("True", "NoProgress")
    alive = observed(make_pod(age=800), last_progress_at=NOW - timedelta(seconds=30))
    status = apply_status(hung, reconcile(make_spec(), hung, alive, NOW))
    assert condition(status, "Stalled") == ("False", "Progressing")


def test_the_commit_heartbeat_counts_as_progress() -> None:
    clock = ProgressClock()
    first = {"progress": {"binlogOffset": "b.1:4", "lastCommitAt": "2026-01-01T00:00:00Z"}}
    assert clock.last_progress("u", first, NOW) == NOW
    later = NOW + timedelta(seconds=60)
    assert clock.last_progress("u", first, later) == NOW  # nothing moved
    beat = {"progress": {"binlogOffset": "b.1:4", "lastCommitAt": "2026-01-01T00:01:00Z"}}
    assert clock.last_progress("u", beat, later) == later  # an idle source's heartbeat commit


@pytest.mark.parametrize(
    ("progress", "mode", "phase"),
    [
        (None, "initial", "Snapshotting"),
        (None, "latest", "Streaming"),
        ({"splitsTotal": 4, "splitsFinished": 2}, "initial", "Snapshotting"),
        ({"splitsTotal": 4, "splitsFinished": 4}, "initial", "Streaming"),
        ({"splitsTotal": 4, "splitsFinished": 4}, "snapshot-only", "Snapshotting"),
        ({"binlogOffset": "mysql-bin.000001:4"}, "latest", "Streaming"),
    ],
)
def test_running_phase(progress: dict[str, Any] | None, mode: str, phase: str) -> None:
    status = make_status(progress=progress)
    spec = make_spec(startup={"mode": mode})
    patched = apply_status(status, reconcile(spec, status, observed(make_pod(), last_progress_at=NOW), NOW))
    assert patched.phase == phase


def test_server_ids_are_assigned_past_the_ranges_in_use() -> None:
    spec = make_spec(source={"serverId": None})
    seen = observed(server_ids_in_use=((1_000_000, 1_000_063), (1_000_100, 1_000_200)))
    status = apply_status(None, reconcile(spec, None, seen, NOW))
    assert status.server_id_range == "1000201-1000264"
    # Not looked up (None) or already assigned: left alone.
    assert apply_status(None, reconcile(spec, None, observed(), NOW)).server_id_range is None


def test_backoff_is_capped() -> None:
    policy = make_spec(restartPolicy={"initialBackoffSeconds": 10, "maxBackoffSeconds": 60}).restart_policy
    assert [backoff_seconds(policy, n) for n in (1, 2, 3, 4, 5, 100)] == [10, 20, 40, 60, 60, 60]


def test_stall_threshold_is_a_setting() -> None:
    seen = observed(make_pod(age=100), last_progress_at=NOW - timedelta(seconds=50))
    status = make_status()
    out = apply_status(status, reconcile(make_spec(), status, seen, NOW, Settings(stall_seconds=30)))
    assert condition(out, "Stalled") == ("True", "NoProgress")


def test_pods_of_the_spec_hash_are_kept() -> None:
    actions = reconcile(
        make_spec(), make_status(), observed(make_pod(spec_hash=HASH), last_progress_at=NOW), NOW
    )
    assert not any(isinstance(a, DeletePod) for a in actions)
