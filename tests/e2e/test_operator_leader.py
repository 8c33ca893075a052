"""Two operator replicas and the Lease (controller/leader.py), on the real API server.

* Two ``sparkcdc operator --leader-election`` processes (HOSTNAME operator-a and operator-b, as two
  pods): exactly one holds the Lease and only it reconciles (its name is on every Event, the other
  starts no kopf); the follower answers /healthz all the same.
* The leader is SIGKILLed in the middle of a reconcile: right after it created a new pipeline's
  driver pod, before the pipeline's status settled. The follower takes the Lease once it has seen
  it unrenewed for the lease duration (``leaseTransitions`` + 1) and brings that pipeline to
  Snapshotting with the same driver pod (no second one, no new epoch); it acts on the older pipeline
  too. Stopped with SIGTERM, it releases the Lease.
* A leader that cannot renew (another holder appears, as after a partition) exits within the renew
  deadline with exit code 3 and says why.

Short durations (lease 4 s, renew deadline 3 s, retry 0.5 s) keep the test quick; the rules are
the same as the defaults'. The decisions themselves: tests/unit/controller/test_controller_leader.py.
"""

from __future__ import annotations

import contextlib
import json
import signal
import threading
import urllib.request
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from e2e_images import E2EImages
from kubernetes import client
from operator_harness import (
    Pipelines,
    RunningOperator,
    driver_account_fixture,  # noqa: F401 - the driver_account fixture
    manifest,
    pods_of,
    start_operator,
)

from sparkcdc.testing.kube import ControlPlane, free_port, wait_until
from sparkcdc.testing.noderunner import NodeRunner

LEASE = "sparkcdc-operator"
LEASE_SECONDS, RENEW_DEADLINE, RETRY = 4, 3.0, 0.5
LOST_LEASE_EXIT_CODE = 3  # controller/main.py
Obj = dict[str, Any]


class Replica:
    """One operator process, as one pod of the chart's Deployment."""

    def __init__(self, running: RunningOperator, name: str, liveness_port: int) -> None:
        self.running, self.name, self.liveness_port = running, name, liveness_port

    def log(self) -> str:
        return self.running.log.read_text(errors="replace")

    def healthz(self) -> int:
        url = f"http://127.0.0.1:{self.liveness_port}/healthz"
        with urllib.request.urlopen(url, timeout=5) as response:
            return int(response.status)


@pytest.fixture
def replicas(
    control_plane: ControlPlane, node_runner: NodeRunner, images: E2EImages, sparkcdc_crd: str,
    namespace: str, driver_account: str, tmp_path: Path,
) -> Iterator[Any]:  # fmt: skip
    """Starts replicas on demand (``replicas(name)``); all are stopped afterwards."""
    started: list[Replica] = []

    def start(name: str) -> Replica:
        liveness = free_port()
        args = [
            f"--namespace={namespace}", "--leader-election", f"--leader-election-namespace={namespace}",
            f"--leader-election-lease-duration={LEASE_SECONDS}",
            f"--leader-election-renew-deadline={RENEW_DEADLINE}", f"--leader-election-retry-period={RETRY}",
            f"--liveness-port={liveness}",
        ]  # fmt: skip
        running = start_operator(
            control_plane, node_runner, tmp_path, images.fake_driver,
            args=args, variables={"HOSTNAME": name}, log_name=f"{name}.log",
        )  # fmt: skip
        replica = Replica(running, name, liveness)
        started.append(replica)
        return replica

    yield start
    for replica in started:
        proc = replica.running.proc
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def lease(cp: ControlPlane, namespace: str) -> Obj:
    api: Any = client.CoordinationV1Api(cp.api_client())
    response = api.read_namespaced_lease(LEASE, namespace, _preload_content=False)
    spec: Obj = json.loads(response.data)["spec"]
    return spec


def holder(cp: ControlPlane, namespace: str) -> str:
    with contextlib.suppress(client.ApiException):
        return str(lease(cp, namespace).get("holderIdentity") or "")
    return ""


def reporters(cp: ControlPlane, namespace: str, pipeline: str) -> set[str]:
    """Who posted the pipeline's Events (``reportingInstance``: the operator's HOSTNAME)."""
    core: Any = client.CoreV1Api(cp.api_client())
    events = core.list_namespaced_event(namespace, field_selector=f"involvedObject.name={pipeline}").items
    return {e.reporting_instance for e in events if e.source and e.source.component == "sparkcdc-operator"}


def snapshotting_at_epoch_1(pipelines: Pipelines, name: str) -> bool:
    status = pipelines.status(name)
    epochs = (status.get("checkpoint") or {}).get("epochs")
    return status.get("phase") == "Snapshotting" and epochs == [1] and status["driver"]["epoch"] == 1


def test_one_replica_leads_and_a_follower_takes_over_a_killed_leader(
    replicas: Any, control_plane: ControlPlane, core: Any, namespace: str, images: E2EImages
) -> None:
    cp = control_plane
    a = replicas("operator-a")
    wait_until(lambda: holder(cp, namespace).startswith("operator-a_"), timeout=60, what="operator-a leads")
    b = replicas("operator-b")
    wait_until(lambda: "is held by operator-a_" in b.log(), timeout=60, what="operator-b follows")
    assert b.healthz() == 200  # the follower's probe passes: it is not restarted while it waits

    pipelines = Pipelines(cp, namespace)
    pipelines.create(manifest("lead-a", images.fake_driver))
    wait_until(lambda: snapshotting_at_epoch_1(pipelines, "lead-a"), timeout=90, what="lead-a Snapshotting")
    assert reporters(cp, namespace, "lead-a") == {"operator-a"}
    assert "lead-a" not in b.log(), b.log()  # the follower did nothing
    b.running.assert_alive()
    transitions = int(lease(cp, namespace).get("leaseTransitions") or 0)

    # The leader dies right after creating a driver pod, before the pipeline's status settled.
    pipelines.create(manifest("lead-b", images.fake_driver))
    (pod,) = wait_until(lambda: pods_of(core, namespace, "lead-b"), timeout=60, every=0.02, what="a pod")
    a.running.proc.send_signal(signal.SIGKILL)
    killed_at = datetime.now(timezone.utc)
    assert not snapshotting_at_epoch_1(pipelines, "lead-b")  # still settling when the leader died
    a.running.proc.wait()

    # Taken over once the follower saw the Lease unrenewed for its duration (plus a retry and the
    # slack of a loaded machine).
    wait_until(
        lambda: holder(cp, namespace).startswith("operator-b_"),
        timeout=LEASE_SECONDS + 2 * RETRY + 10,
        what=f"operator-b takes over ({b.log()[-3000:]})",
    )
    spec = lease(cp, namespace)
    assert int(spec["leaseTransitions"]) == transitions + 1
    acquired = datetime.fromisoformat(spec["acquireTime"].replace("Z", "+00:00"))
    assert (acquired - killed_at).total_seconds() >= LEASE_SECONDS - 1  # never before expiry
    wait_until(
        lambda: snapshotting_at_epoch_1(pipelines, "lead-b"),
        timeout=90,
        what=f"lead-b Snapshotting under operator-b ({b.log()[-3000:]})",
    )
    (after,) = pods_of(core, namespace, "lead-b")  # no second driver pod
    assert after["metadata"]["uid"] == pod["metadata"]["uid"]

    # The new leader acts on the older pipeline too: suspending deletes its driver pod.
    pipelines.patch("lead-a", {"spec": {"suspend": True}})
    wait_until(lambda: pipelines.status("lead-a").get("phase") == "Suspended", timeout=60, what="Suspended")
    wait_until(lambda: not pods_of(core, namespace, "lead-a"), timeout=60, what="lead-a's pod deleted")
    assert "operator-b" in reporters(cp, namespace, "lead-a")

    # Stopped cleanly, it releases the Lease: a follower would take it at its next try.
    b.running.proc.terminate()
    assert b.running.proc.wait(timeout=60) == 0, b.log()[-3000:]
    released = lease(cp, namespace)
    assert (released.get("holderIdentity"), released["leaseDurationSeconds"]) == (None, 1)


def test_a_leader_that_cannot_renew_exits(replicas: Any, control_plane: ControlPlane, namespace: str) -> None:
    cp = control_plane
    a = replicas("operator-a")
    wait_until(lambda: holder(cp, namespace).startswith("operator-a_"), timeout=60, what="operator-a leads")
    wait_until(lambda: "kopf" in a.log(), timeout=60, what="operator-a's kopf started")
    api: Any = client.CoordinationV1Api(cp.api_client())
    stop = threading.Event()

    def intrude() -> None:
        # Another holder keeps renewing, as one across a partition would after taking over.
        while not stop.wait(RETRY / 2):
            with contextlib.suppress(client.ApiException):  # a conflict with the leader's renewal
                current = api.read_namespaced_lease(LEASE, namespace)
                current.spec.holder_identity = "intruder"
                current.spec.renew_time = datetime.now(timezone.utc)
                api.replace_namespaced_lease(LEASE, namespace, current)

    thread = threading.Thread(target=intrude, daemon=True)
    thread.start()
    try:
        code = wait_until(
            a.running.proc.poll,
            timeout=RENEW_DEADLINE + 15,
            what=f"operator-a exits ({a.log()[-3000:]})",
        )
    finally:
        stop.set()
        thread.join()
    assert code == LOST_LEASE_EXIT_CODE
    assert "lost the leader election: could not renew Lease" in a.log()
    assert holder(cp, namespace) == "intruder"  # it did not release what it no longer held
