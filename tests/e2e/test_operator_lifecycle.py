"""The operator on the real control plane: driver pods run by the test node runner, as containers of
the fake driver's image (``tests/e2e/fake_driver``)."""

from __future__ import annotations

import json
import time
import urllib.request
from typing import Any

from operator_harness import (
    SECRET_VALUE,
    Pipelines,
    RunningOperator,
    condition,
    driver_account_fixture,  # noqa: F401 - the driver_account fixture
    manifest,
    operator_fixture,  # noqa: F401 - the operator fixture
    pods_of,
)

from sparkcdc.kube.status_codec import decode_value
from sparkcdc.testing.kube import ControlPlane, wait_until
from sparkcdc.testing.noderunner import NodeRunner


def checkpoint_epochs(pipelines: Pipelines, name: str) -> list[int]:
    epochs: list[int] = (pipelines.status(name).get("checkpoint") or {}).get("epochs") or []
    return epochs


def wait_checkpoint(op: RunningOperator, pipelines: Pipelines, name: str, epochs: list[int]) -> None:
    def done() -> bool:
        op.assert_alive()
        return checkpoint_epochs(pipelines, name) == epochs

    wait_until(done, timeout=60, what=f"checkpoint epochs {epochs} of {name} (operator log: {op.log})")


def test_pipeline_gets_driver_pod_and_service_owned_by_it(
    operator: RunningOperator, control_plane: ControlPlane, core: Any, namespace: str, driver_account: str,
    node_runner: NodeRunner,
) -> None:  # fmt: skip
    pipelines = Pipelines(control_plane, namespace)
    uid = pipelines.create(manifest("idle-a", operator.driver_image))["metadata"]["uid"]
    wait_checkpoint(operator, pipelines, "idle-a", [1])
    pod = json.loads(core.read_namespaced_pod("idle-a-driver-1", namespace, _preload_content=False).data)
    svc = json.loads(core.read_namespaced_service("idle-a-driver", namespace, _preload_content=False).data)
    for obj in (pod, svc):
        (owner,) = obj["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
            "CdcPipeline",
            "idle-a",
            uid,
            True,
        )
    assert pod["metadata"]["annotations"]["sparkcdc.io/epoch"] == "1"
    assert svc["spec"]["clusterIP"] == "None"
    container = pod["spec"]["containers"][0]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    # A container of the pipeline's image (the namespace's restricted standard admitted the pod).
    assert (container["image"], container["command"]) == (operator.driver_image, ["sparkcdc", "driver"])
    assert pod["status"]["containerStatuses"][0]["containerID"].startswith("podman://")
    env = {e["name"]: e for e in container["env"]}
    assert env["SPARKCDC_SPARK_MASTER"]["value"] == "local[2]"
    assert env["SPARKCDC_SECRET_SPEC_SOURCE_PASSWORDSECRETREF"]["valueFrom"] == {
        "secretKeyRef": {"name": "mysql-cdc", "key": "password"}
    }
    assert "secret-present=True" in node_runner.logs(namespace, "idle-a-driver-1")

    def running() -> dict[str, Any]:
        status = pipelines.status("idle-a")
        return status if status.get("phase") == "Snapshotting" else {}

    status = wait_until(running, timeout=30, what="phase Snapshotting")
    assert condition(status, "Ready")["status"] == "True"
    assert status["checkpoint"]["nothing"] == {"$null": 1}  # stored tagged: a merge patch drops nulls
    assert decode_value(status["checkpoint"])["nothing"] is None
    assert status["driver"]["epoch"] == 1
    assert not (pipelines.get("idle-a") or {})["metadata"].get("finalizers")  # statePolicy Delete: none
    # The secret's value is nowhere in the pod, the status or the events.
    events = core.list_namespaced_event(namespace, _preload_content=False).data.decode()
    for text in (json.dumps(pod), json.dumps(pipelines.get("idle-a")), events):
        assert SECRET_VALUE not in text


def test_deleted_driver_pod_is_replaced_under_a_new_epoch_after_it_is_gone(
    operator: RunningOperator, control_plane: ControlPlane, core: Any, namespace: str, driver_account: str
) -> None:
    pipelines = Pipelines(control_plane, namespace)
    pipelines.create(manifest("idle-b", operator.driver_image))
    wait_checkpoint(operator, pipelines, "idle-b", [1])
    core.delete_namespaced_pod("idle-b-driver-1", namespace)

    def replaced() -> bool:
        epoch = (pipelines.status("idle-b").get("driver") or {}).get("epoch")
        if epoch == 2:
            # Read after the epoch: had pod 1 still existed when epoch 2 was written, we would see it.
            names = [p["metadata"]["name"] for p in pods_of(core, namespace, "idle-b")]
            assert "idle-b-driver-1" not in names, "epoch raised while the old driver pod existed"
        return checkpoint_epochs(pipelines, "idle-b") == [1, 2]

    wait_until(replaced, timeout=60, every=0.05, what="driver of epoch 2 resumed from the checkpoint")


def test_suspend_stops_the_driver_and_keeps_the_checkpoint(
    operator: RunningOperator, control_plane: ControlPlane, core: Any, namespace: str, driver_account: str
) -> None:
    pipelines = Pipelines(control_plane, namespace)
    pipelines.create(manifest("idle-c", operator.driver_image))
    wait_checkpoint(operator, pipelines, "idle-c", [1])
    pipelines.patch("idle-c", {"spec": {"suspend": True}})

    def suspended() -> bool:
        status = pipelines.status("idle-c")
        return status.get("phase") == "Suspended" and not pods_of(core, namespace, "idle-c")

    wait_until(suspended, timeout=60, what="suspended without pods")
    assert checkpoint_epochs(pipelines, "idle-c") == [1]
    assert condition(pipelines.status("idle-c"), "Ready")["reason"] == "Suspended"
    pipelines.patch("idle-c", {"spec": {"suspend": False}})
    wait_checkpoint(operator, pipelines, "idle-c", [1, 2])


def test_restart_nonce_restarts_the_driver(
    operator: RunningOperator, control_plane: ControlPlane, namespace: str, driver_account: str
) -> None:
    pipelines = Pipelines(control_plane, namespace)
    pipelines.create(manifest("idle-r", operator.driver_image))
    wait_checkpoint(operator, pipelines, "idle-r", [1])
    pipelines.patch("idle-r", {"spec": {"restartNonce": "now"}})
    wait_checkpoint(operator, pipelines, "idle-r", [1, 2])


def test_max_restarts_ends_in_failed(
    operator: RunningOperator, control_plane: ControlPlane, core: Any, namespace: str, driver_account: str
) -> None:
    pipelines = Pipelines(control_plane, namespace)
    policy = {"maxRestarts": 1, "initialBackoffSeconds": 1, "maxBackoffSeconds": 1}
    pipelines.create(manifest("crash-a", operator.driver_image, restartPolicy=policy))

    def failed() -> dict[str, Any]:
        operator.assert_alive()
        status = pipelines.status("crash-a")
        return status if status.get("phase") == "Failed" else {}

    status = wait_until(failed, timeout=90, what=f"phase Failed (operator log: {operator.log})")
    assert status["driver"]["restarts"] == 2
    assert status["driver"]["epoch"] == 2
    assert "boom from the fake driver" in status["driver"]["lastFailure"]
    assert condition(status, "Stalled")["reason"] == "MaxRestartsExceeded"
    assert condition(status, "CrashLooping")["status"] == "True"

    def reasons() -> list[str]:
        events = json.loads(core.list_namespaced_event(namespace, _preload_content=False).data)["items"]
        found = [e["reason"] for e in events if e["involvedObject"]["name"] == "crash-a"]
        return found if "MaxRestartsExceeded" in found else []

    assert wait_until(reasons, timeout=10, what="events").count("DriverFailed") == 2
    assert [p["metadata"]["name"] for p in pods_of(core, namespace, "crash-a")] == ["crash-a-driver-2"]


def test_pending_timeout_names_the_missing_secret(
    operator: RunningOperator, control_plane: ControlPlane, namespace: str, driver_account: str
) -> None:
    pipelines = Pipelines(control_plane, namespace)
    source = manifest("idle-d")["spec"]["source"] | {"passwordSecretRef": {"name": "absent", "key": "pw"}}
    pipelines.create(
        manifest("idle-d", operator.driver_image, source=source, restartPolicy={"pendingTimeoutSeconds": 2})
    )

    def stalled() -> dict[str, Any]:
        found = condition(pipelines.status("idle-d"), "Stalled")
        return found if found.get("status") == "True" else {}

    found = wait_until(stalled, timeout=60, what="Stalled condition")
    assert found["reason"] == "SecretMissing"
    assert "absent" in found["message"]


def test_retained_state_survives_delete_and_recreate(
    operator: RunningOperator, control_plane: ControlPlane, core: Any, namespace: str, driver_account: str
) -> None:
    pipelines = Pipelines(control_plane, namespace)
    pipelines.create(manifest("idle-e", operator.driver_image, statePolicy="Retain"))
    wait_checkpoint(operator, pipelines, "idle-e", [1])
    assert (pipelines.get("idle-e") or {})["metadata"]["finalizers"] == ["sparkcdc.io/retain-state"]
    pipelines.delete("idle-e")
    wait_until(lambda: pipelines.get("idle-e") is None, timeout=60, what="pipeline deleted")
    retained = core.read_namespaced_config_map("idle-e-sparkcdc-state", namespace)
    assert retained.metadata.owner_references is None
    pipelines.create(manifest("idle-e", operator.driver_image, statePolicy="Retain"))
    wait_checkpoint(operator, pipelines, "idle-e", [1, 1])  # the new object's epoch 1 resumed
    names = [c.metadata.name for c in core.list_namespaced_config_map(namespace).items]
    assert "idle-e-sparkcdc-state" not in names


def test_completed_driver_and_metrics(
    operator: RunningOperator, control_plane: ControlPlane, namespace: str, driver_account: str
) -> None:
    pipelines = Pipelines(control_plane, namespace)
    pipelines.create(manifest("done-a", operator.driver_image, startup={"mode": "snapshot-only"}))
    wait_until(lambda: pipelines.status("done-a").get("phase") == "Completed", timeout=60, what="Completed")
    url = f"http://127.0.0.1:{operator.metrics_port}/metrics"
    with urllib.request.urlopen(url, timeout=5) as response:
        text = response.read().decode()
    assert "sparkcdc_operator_reconciles_total" in text
    assert 'sparkcdc_operator_pipelines{phase="Completed"}' in text
    assert "sparkcdc_operator_driver_restarts_total" in text
    assert "sparkcdc_operator_reconcile_errors_total" in text


def test_a_refused_driver_pod_is_reported_and_retried_with_backoff(
    operator: RunningOperator, control_plane: ControlPlane, core: Any, namespace: str, driver_account: str
) -> None:
    """A ResourceQuota allowing no pods: the operator names the refusal in an event and the
    conditions, and backs off instead of raising the epoch every few seconds; once the quota is
    gone and the user asks for a restart, the driver runs and the refusal is cleared."""
    quota = {"metadata": {"name": "no-pods"}, "spec": {"hard": {"pods": "0"}}}
    core.create_namespaced_resource_quota(namespace, quota)
    # Admission counts against the quota once its controller has filled in the status.
    wait_until(
        lambda: (core.read_namespaced_resource_quota("no-pods", namespace).status.hard or {}).get("pods"),
        timeout=30,
        what="quota status",
    )
    pipelines = Pipelines(control_plane, namespace)
    policy = {"initialBackoffSeconds": 20, "maxBackoffSeconds": 40}
    pipelines.create(manifest("quota-a", operator.driver_image, restartPolicy=policy))

    def refused() -> dict[str, Any]:
        operator.assert_alive()
        driver = pipelines.status("quota-a").get("driver") or {}
        failure: dict[str, Any] = driver.get("createFailure") or {}
        return failure

    failure = wait_until(refused, timeout=30, what=f"createFailure (operator log: {operator.log})")
    assert failure["reason"] == "QuotaExceeded" and failure["attempts"] == 1
    assert "exceeded quota: no-pods" in failure["message"] and "ResourceQuota" in failure["message"]
    status = pipelines.status("quota-a")
    assert condition(status, "Ready")["reason"] == "QuotaExceeded"
    assert condition(status, "Stalled")["status"] == "True"
    assert condition(status, "Reconciling")["reason"] == "BackOff"

    def warnings() -> list[dict[str, Any]]:
        events = json.loads(core.list_namespaced_event(namespace, _preload_content=False).data)["items"]
        return [e for e in events if e["involvedObject"]["name"] == "quota-a" and e["type"] == "Warning"]

    (event,) = wait_until(warnings, timeout=10, what="Warning event")
    assert event["reason"] == "QuotaExceeded" and "quota-a-driver-1" in event["message"]
    assert SECRET_VALUE not in json.dumps(status) and SECRET_VALUE not in event["message"]

    # Reconciles keep coming (the resync is 5 s here): within the backoff none raises the epoch.
    time.sleep(12)
    status = pipelines.status("quota-a")
    assert status["driver"]["epoch"] == 1 and status["driver"]["createFailure"]["attempts"] == 1
    assert pods_of(core, namespace, "quota-a") == []

    core.delete_namespaced_resource_quota("no-pods", namespace)
    pipelines.patch("quota-a", {"spec": {"restartNonce": "quota-raised"}})
    wait_checkpoint(operator, pipelines, "quota-a", [2])
    assert "createFailure" not in pipelines.status("quota-a")["driver"]
    assert condition(pipelines.status("quota-a"), "Stalled")["status"] == "False"


def test_two_tables_into_one_target_are_refused_before_a_driver_starts(
    operator: RunningOperator, control_plane: ControlPlane, core: Any, namespace: str, driver_account: str
) -> None:
    """The apiserver cannot see the collision (it needs the resolved names); the operator refuses
    it as an invalid spec, naming both tables and the target, and starts no driver pod."""
    pipelines = Pipelines(control_plane, namespace)
    source = manifest("clash")["spec"]["source"] | {"tables": ["tenant_a.orders", "tenant_b.orders"]}
    sink = {"type": "jdbc", "url": "mysql://127.0.0.1:3306/replica", "user": "cdc",
            "passwordSecretRef": {"name": "mysql-cdc", "key": "password"}}  # fmt: skip
    pipelines.create(manifest("clash", operator.driver_image, source=source, sink=sink))

    def stalled() -> dict[str, Any]:
        found = condition(pipelines.status("clash"), "Stalled")
        return found if found.get("status") == "True" else {}

    found = wait_until(stalled, timeout=60, what="Stalled condition")
    assert found["reason"] == "InvalidSpec"
    assert "tenant_a.orders and tenant_b.orders" in found["message"] and "'orders'" in found["message"]
    assert pipelines.status("clash")["phase"] == "Failed"
    assert pods_of(core, namespace, "clash") == []
