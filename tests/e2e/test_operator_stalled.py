"""Stalled from facts, on the real control plane: a driver that runs but stops reporting progress
(the fake driver checkpoints once, then hangs, as a driver stuck on a blocked sink) becomes
``Stalled`` with reason ``NoProgress`` after the operator's stall period, although its pod is
Running and its last report looked healthy; a restart brings progress and clears it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e_images import E2EImages
from operator_harness import (
    Pipelines,
    RunningOperator,
    condition,
    driver_account_fixture,  # noqa: F401 - the driver_account fixture
    manifest,
    pods_of,
    start_operator,
)

from sparkcdc.testing.kube import ControlPlane, wait_until
from sparkcdc.testing.noderunner import NodeRunner

STALL_SECONDS = 6


@pytest.fixture
def impatient_operator(
    control_plane: ControlPlane, node_runner: NodeRunner, images: E2EImages, sparkcdc_crd: str,
    namespace: str, driver_account: str, tmp_path: Path,
) -> Iterator[RunningOperator]:  # fmt: skip
    """An operator of this namespace whose stall period is seconds, not minutes."""
    args = [f"--namespace={namespace}", f"--stall-seconds={STALL_SECONDS}", "--resync-seconds=2"]
    running = start_operator(control_plane, node_runner, tmp_path, images.fake_driver, args=args)
    try:
        yield running
    finally:
        running.proc.terminate()
        running.proc.wait(timeout=30)


def test_a_driver_without_progress_is_stalled_and_a_restart_clears_it(
    impatient_operator: RunningOperator, control_plane: ControlPlane, core: Any, namespace: str
) -> None:
    op = impatient_operator
    pipelines = Pipelines(control_plane, namespace)
    pipelines.create(manifest("hang-a", op.driver_image))

    def running() -> bool:
        op.assert_alive()
        status = pipelines.status("hang-a")
        return status.get("phase") == "Snapshotting" and condition(status, "Ready").get("status") == "True"

    wait_until(running, timeout=90, what=f"hang-a running (operator log: {op.log})")
    (pod,) = pods_of(core, namespace, "hang-a")

    def stalled() -> dict[str, Any] | None:
        found = condition(pipelines.status("hang-a"), "Stalled")
        return found if found.get("status") == "True" else None

    found = wait_until(stalled, timeout=STALL_SECONDS * 6, what="Stalled after the stall period")
    assert found["reason"] == "NoProgress", found
    status = pipelines.status("hang-a")
    assert condition(status, "Ready")["status"] == "False"
    (still,) = pods_of(core, namespace, "hang-a")  # stalled is a verdict, not a kill
    assert still["metadata"]["uid"] == pod["metadata"]["uid"]
    assert still["status"]["phase"] == "Running"

    # A restart is the on-call's way out: the new driver checkpoints, which is progress.
    pipelines.patch("hang-a", {"spec": {"restartNonce": "unstick"}})

    def recovered() -> bool:
        status = pipelines.status("hang-a")
        epochs = (status.get("checkpoint") or {}).get("epochs") or []
        return epochs == [1, 2] and condition(status, "Stalled").get("status") == "False"

    wait_until(recovered, timeout=90, what="a new driver's progress clearing Stalled")
