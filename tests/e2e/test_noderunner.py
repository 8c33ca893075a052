"""The test node runner runs pods as containers of their images and reports back like a kubelet; in
host-process mode (``containers=False``, for load tests) it runs their commands on the host.

The pods here run Python in the spark image, with the securityContext the ``restricted`` Pod
Security Standard asks for (every test namespace enforces it)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e_images import E2EImages
from kubernetes.client.exceptions import ApiException

from sparkcdc.testing.containers import podman
from sparkcdc.testing.kube import ControlPlane, wait_until
from sparkcdc.testing.noderunner import NodeRunner
from sparkcdc.testing.pod_container import container_name

RESTRICTED_POD = {"runAsNonRoot": True, "runAsUser": 185, "seccompProfile": {"type": "RuntimeDefault"}}
RESTRICTED_CONTAINER = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


# A pod's program that ignores SIGTERM: only SIGKILL ends it.
IGNORES_SIGTERM = """
    import signal, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    print("started", flush=True)
    time.sleep(600)
"""

# One that survives SIGTERM and says so: that it got one, then that it still runs after it.
SURVIVES_SIGTERM = """
    import signal
    signal.signal(signal.SIGTERM, lambda signum, frame: print("SIGTERM ignored", flush=True))
    print("started", flush=True)
    while True:
        signal.pause()  # returns after a handler ran
        print("alive after SIGTERM", flush=True)
"""


def make_pod(name: str, code: str, image: str, *, restart: str = "Never",
             node: str | None = "sparkcdc-test-node", **container: Any) -> dict[str, Any]:  # fmt: skip
    """A pod running ``code`` with the image's Python (the host's in host-process mode)."""
    python = "python3" if node != "host-node" else sys.executable
    spec: dict[str, Any] = {
        "restartPolicy": restart,
        "securityContext": RESTRICTED_POD,
        "containers": [{
            "name": "main", "image": image, "command": [python, "-c", textwrap.dedent(code)],
            "securityContext": RESTRICTED_CONTAINER, **container,
        }],
    }  # fmt: skip
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def read_pod(core: Any, ns: str, name: str) -> dict[str, Any]:
    pod: dict[str, Any] = json.loads(core.read_namespaced_pod(name, ns, _preload_content=False).data)
    return pod


def container_status(core: Any, ns: str, name: str) -> dict[str, Any]:
    statuses = read_pod(core, ns, name).get("status", {}).get("containerStatuses") or [{}]
    return dict(statuses[0])


def wait_phase(core: Any, ns: str, name: str, *phases: str, timeout: float = 60) -> dict[str, Any]:
    return wait_until(
        lambda: (p := read_pod(core, ns, name))["status"].get("phase") in phases and p,
        timeout=timeout, what=f"pod {name} in {phases}",
    )  # fmt: skip


def container_exists(pod: dict[str, Any]) -> bool:
    found = subprocess.run([*podman(), "container", "exists", container_name(pod)], check=False)
    return found.returncode == 0


def gone(core: Any, ns: str, name: str) -> bool:
    try:
        read_pod(core, ns, name)
    except ApiException as e:
        return bool(e.status == 404)
    return False


def test_exit_code_and_termination_message_file(
    node_runner: NodeRunner, images: E2EImages, core: Any, namespace: str
) -> None:
    core.create_namespaced_pod(namespace, make_pod("fail", """
        import sys
        print("some output")
        with open("/dev/termination-log", "w") as f:
            f.write("snapshot failed: table t1 vanished")
        sys.exit(3)
    """, images.spark))  # fmt: skip
    pod = wait_phase(core, namespace, "fail", "Failed")
    term = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert term["exitCode"] == 3
    assert term["reason"] == "Error"
    assert term["message"] == "snapshot failed: table t1 vanished"
    assert "some output" in node_runner.logs(namespace, "fail")
    assert pod["status"]["containerStatuses"][0]["containerID"].startswith("podman://")


def test_termination_message_falls_back_to_output_tail(
    node_runner: NodeRunner, images: E2EImages, core: Any, namespace: str
) -> None:
    pod = make_pod("ok", "print('line 1'); print('all rows copied')", images.spark)
    core.create_namespaced_pod(namespace, pod)
    pod = wait_phase(core, namespace, "ok", "Succeeded")
    term = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (term["exitCode"], term["reason"]) == (0, "Completed")
    assert term["message"].rstrip().endswith("all rows copied")


def test_environment_from_values_secrets_configmaps_and_fields(
    node_runner: NodeRunner, images: E2EImages, core: Any, namespace: str
) -> None:
    core.create_namespaced_secret(
        namespace, {"metadata": {"name": "db"}, "stringData": {"password": "s3cret"}}
    )
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "cfg"}, "data": {"A": "1", "B": "2"}})
    env = [
        {"name": "PLAIN", "value": "x-$(CM_A)"},
        {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}},
        {"name": "FROM_CM", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "B"}}},
        {"name": "OPTIONAL", "valueFrom": {"secretKeyRef": {"name": "nope", "key": "k", "optional": True}}},
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "POD_NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
    ]
    code = """
        import json, os
        keys = ["PLAIN", "PASSWORD", "FROM_CM", "OPTIONAL", "POD_NAME", "POD_NS", "CM_A", "KUBECONFIG"]
        print(json.dumps({k: os.environ.get(k) for k in keys}))
    """
    envfrom = [{"configMapRef": {"name": "cfg"}, "prefix": "CM_"}]
    core.create_namespaced_pod(namespace, make_pod("env", code, images.spark, env=env, envFrom=envfrom))
    wait_phase(core, namespace, "env", "Succeeded")
    got = json.loads(node_runner.logs(namespace, "env").strip().splitlines()[-1])
    assert got == {
        "PLAIN": "x-1", "PASSWORD": "s3cret", "FROM_CM": "2", "OPTIONAL": None, "POD_NAME": "env",
        "POD_NS": namespace, "CM_A": "1", "KUBECONFIG": None,
    }  # fmt: skip


def test_missing_secret_leaves_pod_pending_until_it_exists(
    node_runner: NodeRunner, images: E2EImages, core: Any, namespace: str
) -> None:
    env = [{"name": "P", "valueFrom": {"secretKeyRef": {"name": "later", "key": "p"}}}]
    pod = make_pod("waits", "import os; print(os.environ['P'])", images.spark, env=env)
    core.create_namespaced_pod(namespace, pod)
    waiting = wait_until(
        lambda: container_status(core, namespace, "waits").get("state", {}).get("waiting"), what="waiting"
    )
    assert waiting == {"reason": "CreateContainerConfigError", "message": 'secret "later" not found'}
    assert read_pod(core, namespace, "waits")["status"]["phase"] == "Pending"
    core.create_namespaced_secret(namespace, {"metadata": {"name": "later"}, "stringData": {"p": "now"}})
    pod = wait_phase(core, namespace, "waits", "Succeeded")
    assert pod["status"]["containerStatuses"][0]["state"]["terminated"]["message"].strip() == "now"


def test_service_account_token_gives_the_pod_its_identity(
    node_runner: NodeRunner, images: E2EImages, core: Any, namespace: str
) -> None:
    core.create_namespaced_service_account(namespace, {"metadata": {"name": "driver"}})
    code = """
        import json
        from kubernetes import client, config
        config.load_incluster_config()  # the token and CA at the in-cluster path, as in any pod
        review = client.AuthenticationV1Api().create_self_subject_review(
            {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}, _preload_content=False)
        user = json.loads(review.data)["status"]["userInfo"]["username"]
        namespace = open("/var/run/secrets/kubernetes.io/serviceaccount/namespace").read()
        try:
            client.CoreV1Api().list_namespaced_secret(namespace)
            status = 200
        except client.exceptions.ApiException as e:
            status = e.status
        print(json.dumps({"user": user, "list_secrets": status}))
    """
    pod = make_pod("who", code, images.spark)
    pod["spec"]["serviceAccountName"] = "driver"
    core.create_namespaced_pod(namespace, pod)
    pod = wait_phase(core, namespace, "who", "Succeeded", "Failed")
    out = node_runner.logs(namespace, "who")
    assert pod["status"]["phase"] == "Succeeded", out
    got = json.loads(out.strip().splitlines()[-1])
    assert got == {"user": f"system:serviceaccount:{namespace}:driver", "list_secrets": 403}


def test_deleting_the_pod_stops_its_container(
    node_runner: NodeRunner, images: E2EImages, core: Any, namespace: str
) -> None:
    """Deleting the pod SIGTERMs its container, which exits by its handler: ``podman run`` ends
    with the container's exit code 0, where the runner's SIGKILL after the grace period (30 s
    here, within the wait for the pod's removal) would have ended it with -9."""
    code = """
        import signal, subprocess, sys, time
        def stop(signum, frame):
            print("SIGTERM", flush=True)
            sys.exit(0)
        signal.signal(signal.SIGTERM, stop)  # as PID 1 of its container, nothing else would end it
        subprocess.Popen(["sleep", "600"])
        print("started", flush=True)
        time.sleep(600)
    """
    core.create_namespaced_pod(namespace, make_pod("sleeper", code, images.spark))
    pod = wait_phase(core, namespace, "sleeper", "Running")
    wait_until(lambda: "started" in node_runner.logs(namespace, "sleeper"), what="started")
    assert container_exists(pod)
    podman_run = node_runner.process(namespace, "sleeper")
    assert podman_run is not None
    core.delete_namespaced_pod("sleeper", namespace)  # default grace: SIGTERM, which it exits on
    wait_until(lambda: gone(core, namespace, "sleeper"), timeout=90, what="pod removed")
    assert "SIGTERM" in node_runner.logs(namespace, "sleeper")
    assert podman_run.wait(timeout=30) == 0, "it was killed after the grace period, not stopped by SIGTERM"
    assert not container_exists(pod)  # with every process in it, the `sleep` child too


def test_sigterm_ignoring_process_is_killed_after_grace(
    node_runner: NodeRunner, images: E2EImages, core: Any, namespace: str
) -> None:
    """A container that survives SIGTERM is SIGKILLed when the grace period is over. Told by the
    order of events, not by the time it took: the SIGTERM came first and the program went on
    running after it, then ``podman run`` ended by SIGKILL, and the container is gone."""
    core.create_namespaced_pod(namespace, make_pod("stubborn", SURVIVES_SIGTERM, images.spark))
    pod = wait_phase(core, namespace, "stubborn", "Running")
    wait_until(lambda: "started" in node_runner.logs(namespace, "stubborn"), what="started")
    podman_run = node_runner.process(namespace, "stubborn")
    assert podman_run is not None
    core.delete_namespaced_pod("stubborn", namespace, grace_period_seconds=2)
    wait_until(lambda: gone(core, namespace, "stubborn"), timeout=90, what="pod removed")
    log = node_runner.logs(namespace, "stubborn")
    assert "SIGTERM ignored\nalive after SIGTERM\n" in log, log  # not killed at the SIGTERM
    assert podman_run.wait(timeout=30) == -signal.SIGKILL  # but by the runner's SIGKILL
    assert not container_exists(pod)


def test_kill_ends_every_process_of_the_container_at_once(
    node_runner: NodeRunner, images: E2EImages, core: Any, namespace: str
) -> None:
    """``NodeRunner.kill``, a runtime's OOM kill: SIGKILL, no handler runs, exit code 137."""
    core.create_namespaced_pod(namespace, make_pod("victim", IGNORES_SIGTERM, images.spark))
    pod = wait_phase(core, namespace, "victim", "Running")
    wait_until(lambda: "started" in node_runner.logs(namespace, "victim"), what="started")
    node_runner.kill(namespace, "victim")
    done = wait_phase(core, namespace, "victim", "Failed", timeout=30)
    assert done["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 137
    assert not container_exists(pod)
    with pytest.raises(LookupError):
        node_runner.kill(namespace, "victim")


def test_restart_policy_on_failure_restarts_until_success(
    node_runner: NodeRunner, images: E2EImages, core: Any, namespace: str
) -> None:
    # A restarted container starts from its image again: only a volume keeps the first attempt.
    code = """
        import os, sys
        if not os.path.exists("/state/attempted"):
            open("/state/attempted", "w").close()
            sys.exit(1)
        print("second try")
    """
    pod = make_pod("flaky", code, images.spark, restart="OnFailure",
                   volumeMounts=[{"name": "state", "mountPath": "/state"}])  # fmt: skip
    pod["spec"]["volumes"] = [{"name": "state", "emptyDir": {}}]
    core.create_namespaced_pod(namespace, pod)
    pod = wait_phase(core, namespace, "flaky", "Succeeded")
    cs = pod["status"]["containerStatuses"][0]
    assert cs["restartCount"] == 1
    assert cs["lastState"]["terminated"]["exitCode"] == 1
    assert cs["state"]["terminated"]["exitCode"] == 0


def test_binds_unscheduled_pods_of_the_test_scheduler(
    node_runner: NodeRunner, images: E2EImages, core: Any, namespace: str
) -> None:
    pod = make_pod("unbound", "print('hi')", images.spark, node=None)
    pod["spec"]["schedulerName"] = node_runner.scheduler_name
    core.create_namespaced_pod(namespace, pod)
    done = wait_phase(core, namespace, "unbound", "Succeeded")
    assert done["spec"]["nodeName"] == node_runner.node_name


def test_node_is_registered_ready(node_runner: NodeRunner, core: Any) -> None:
    node = json.loads(core.read_node(node_runner.node_name, _preload_content=False).data)
    ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"]
    assert ready and ready[0]["status"] == "True"
    assert not node["spec"].get("taints")


def test_a_restarted_runner_restarts_the_pods_that_were_running(
    control_plane: ControlPlane, images: E2EImages, core: Any, namespace: str, tmp_path: Path
) -> None:
    """Like a node reboot: the container dies with the runner and comes back with the next one."""
    code = "import time; print('up', flush=True); time.sleep(600)"
    core.create_namespaced_pod(namespace, make_pod("survivor", code, images.spark, node="reboot-node"))
    first = NodeRunner(control_plane.kubeconfig_path, "reboot-node", tmp_path / "one").start()
    try:
        pod = wait_phase(core, namespace, "survivor", "Running")
        wait_until(lambda: "up" in first.logs(namespace, "survivor"), what="running")
    finally:
        first.stop()
    assert not container_exists(pod)
    with NodeRunner(control_plane.kubeconfig_path, "reboot-node", tmp_path / "two") as second:
        wait_until(lambda: second.process(namespace, "survivor"), what="restarted container")
        # Until the new runner reports, the status is still the first one's (started, no restart).
        cs = wait_until(
            lambda: (c := container_status(core, namespace, "survivor")).get("restartCount") and c,
            what="the restart reported",
        )
        assert cs["restartCount"] == 1 and cs["started"]
        wait_until(lambda: container_exists(pod), what="the container back")
        core.delete_namespaced_pod("survivor", namespace, grace_period_seconds=0)
        wait_until(lambda: gone(core, namespace, "survivor"), what="pod removed")


# -- host-process mode --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def host_runner(
    control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[NodeRunner]:
    workdir = tmp_path_factory.mktemp("host-node")
    with NodeRunner(control_plane.kubeconfig_path, "host-node", workdir, containers=False) as runner:
        yield runner


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie is dead, just not yet reaped


def test_host_mode_runs_the_command_with_the_pods_environment(
    host_runner: NodeRunner, core: Any, namespace: str
) -> None:
    """No image: the command runs on the host (as ``sleep`` stand-ins do in benchmarks), with the
    pod's environment and none of the runner's credentials; the output's tail is the message."""
    core.create_namespaced_secret(namespace, {"metadata": {"name": "db"}, "stringData": {"pw": "s3cret"}})
    env = [{"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "pw"}}}]
    code = "import os; print(os.environ['PASSWORD'], os.environ.get('KUBECONFIG')); raise SystemExit(4)"
    pod = make_pod("on-host", code, "no-image", node="host-node", env=env)
    core.create_namespaced_pod(namespace, pod)
    done = wait_phase(core, namespace, "on-host", "Failed")
    status = done["status"]["containerStatuses"][0]
    assert status["state"]["terminated"]["exitCode"] == 4
    assert status["state"]["terminated"]["message"].strip() == "s3cret None"
    assert status["containerID"].startswith("local-process://")


def test_host_mode_deleting_the_pod_kills_its_process_group(
    host_runner: NodeRunner, core: Any, namespace: str
) -> None:
    code = """
        import os, subprocess, time
        child = subprocess.Popen(["sleep", "600"])
        print(os.getpid(), child.pid, flush=True)
        time.sleep(600)
    """
    core.create_namespaced_pod(namespace, make_pod("sleeper", code, "no-image", node="host-node"))
    wait_phase(core, namespace, "sleeper", "Running")
    line = wait_until(lambda: host_runner.logs(namespace, "sleeper").strip(), what="pids")
    pids = [int(p) for p in line.split()]
    assert all(alive(p) for p in pids)
    core.delete_namespaced_pod("sleeper", namespace)  # default grace: SIGTERM, which python dies of
    wait_until(lambda: gone(core, namespace, "sleeper"), what="pod removed")
    wait_until(lambda: not any(alive(p) for p in pids), timeout=10, what="processes gone")
