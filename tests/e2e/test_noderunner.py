"""The test node runner runs pods as local processes and reports back like a kubelet."""

from __future__ import annotations

import json
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

from kubernetes.client.exceptions import ApiException

from sparkcdc.testing.kube import wait_until
from sparkcdc.testing.noderunner import NodeRunner

PY = sys.executable


def make_pod(name: str, code: str, *, restart: str = "Never", node: str | None = "sparkcdc-test-node",
             **container: Any) -> dict[str, Any]:  # fmt: skip
    spec: dict[str, Any] = {
        "restartPolicy": restart,
        "containers": [{"name": "main", "image": "python", "command": [PY, "-c", textwrap.dedent(code)],
                        **container}],
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


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie is dead, just not yet reaped


def gone(core: Any, ns: str, name: str) -> bool:
    try:
        read_pod(core, ns, name)
    except ApiException as e:
        return bool(e.status == 404)
    return False


def test_exit_code_and_termination_message_file(node_runner: NodeRunner, core: Any, namespace: str) -> None:
    core.create_namespaced_pod(namespace, make_pod("fail", """
        import os, sys
        print("some output")
        with open(os.environ["SPARKCDC_TERMINATION_MESSAGE_PATH"], "w") as f:
            f.write("snapshot failed: table t1 vanished")
        sys.exit(3)
    """))  # fmt: skip
    pod = wait_phase(core, namespace, "fail", "Failed")
    term = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert term["exitCode"] == 3
    assert term["reason"] == "Error"
    assert term["message"] == "snapshot failed: table t1 vanished"
    assert "some output" in node_runner.logs(namespace, "fail")


def test_termination_message_falls_back_to_output_tail(
    node_runner: NodeRunner, core: Any, namespace: str
) -> None:
    core.create_namespaced_pod(namespace, make_pod("ok", "print('line 1'); print('all rows copied')"))
    pod = wait_phase(core, namespace, "ok", "Succeeded")
    term = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (term["exitCode"], term["reason"]) == (0, "Completed")
    assert term["message"].rstrip().endswith("all rows copied")


def test_environment_from_values_secrets_configmaps_and_fields(
    node_runner: NodeRunner, core: Any, namespace: str
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
    pod = make_pod("env", code, env=env, envFrom=[{"configMapRef": {"name": "cfg"}, "prefix": "CM_"}])
    core.create_namespaced_pod(namespace, pod)
    wait_phase(core, namespace, "env", "Succeeded")
    got = json.loads(node_runner.logs(namespace, "env").strip().splitlines()[-1])
    assert got == {
        "PLAIN": "x-1", "PASSWORD": "s3cret", "FROM_CM": "2", "OPTIONAL": None, "POD_NAME": "env",
        "POD_NS": namespace, "CM_A": "1", "KUBECONFIG": None,
    }  # fmt: skip


def test_missing_secret_leaves_pod_pending_until_it_exists(
    node_runner: NodeRunner, core: Any, namespace: str
) -> None:
    env = [{"name": "P", "valueFrom": {"secretKeyRef": {"name": "later", "key": "p"}}}]
    core.create_namespaced_pod(namespace, make_pod("waits", "import os; print(os.environ['P'])", env=env))
    waiting = wait_until(
        lambda: container_status(core, namespace, "waits").get("state", {}).get("waiting"), what="waiting"
    )
    assert waiting == {"reason": "CreateContainerConfigError", "message": 'secret "later" not found'}
    assert read_pod(core, namespace, "waits")["status"]["phase"] == "Pending"
    core.create_namespaced_secret(namespace, {"metadata": {"name": "later"}, "stringData": {"p": "now"}})
    pod = wait_phase(core, namespace, "waits", "Succeeded")
    assert pod["status"]["containerStatuses"][0]["state"]["terminated"]["message"].strip() == "now"


def test_service_account_token_gives_the_pod_its_identity(
    node_runner: NodeRunner, core: Any, namespace: str
) -> None:
    core.create_namespaced_service_account(namespace, {"metadata": {"name": "driver"}})
    code = """
        import json, os
        from kubernetes import client
        from kubernetes.config.incluster_config import InClusterConfigLoader
        d = os.environ["SPARKCDC_SERVICEACCOUNT_DIR"]
        InClusterConfigLoader(token_filename=d + "/token", cert_filename=d + "/ca.crt").load_and_set()
        api = client.ApiClient()
        review = client.AuthenticationV1Api(api).create_self_subject_review(
            {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}, _preload_content=False)
        user = json.loads(review.data)["status"]["userInfo"]["username"]
        try:
            client.CoreV1Api(api).list_namespaced_secret(open(d + "/namespace").read())
            status = 200
        except client.exceptions.ApiException as e:
            status = e.status
        print(json.dumps({"user": user, "list_secrets": status}))
    """
    pod = make_pod("who", code)
    pod["spec"]["serviceAccountName"] = "driver"
    core.create_namespaced_pod(namespace, pod)
    pod = wait_phase(core, namespace, "who", "Succeeded", "Failed")
    out = node_runner.logs(namespace, "who")
    assert pod["status"]["phase"] == "Succeeded", out
    got = json.loads(out.strip().splitlines()[-1])
    assert got == {"user": f"system:serviceaccount:{namespace}:driver", "list_secrets": 403}


def test_deleting_the_pod_kills_its_process_group(node_runner: NodeRunner, core: Any, namespace: str) -> None:
    code = """
        import os, subprocess, sys, time
        child = subprocess.Popen(["sleep", "600"])
        print(os.getpid(), child.pid, flush=True)
        time.sleep(600)
    """
    core.create_namespaced_pod(namespace, make_pod("sleeper", code))
    wait_phase(core, namespace, "sleeper", "Running")
    line = wait_until(lambda: node_runner.logs(namespace, "sleeper").strip(), what="pids")
    pids = [int(p) for p in line.split()]
    assert all(alive(p) for p in pids)
    core.delete_namespaced_pod("sleeper", namespace)  # default grace: SIGTERM, which python dies of
    wait_until(lambda: gone(core, namespace, "sleeper"), what="pod removed")
    wait_until(lambda: not any(alive(p) for p in pids), timeout=10, what="processes gone")


def test_sigterm_ignoring_process_is_killed_after_grace(
    node_runner: NodeRunner, core: Any, namespace: str
) -> None:
    code = """
        import os, signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print(os.getpid(), flush=True)
        time.sleep(600)
    """
    core.create_namespaced_pod(namespace, make_pod("stubborn", code))
    wait_phase(core, namespace, "stubborn", "Running")
    pid = int(wait_until(lambda: node_runner.logs(namespace, "stubborn").strip(), what="pid"))
    t0 = time.monotonic()
    core.delete_namespaced_pod("stubborn", namespace, grace_period_seconds=2)
    wait_until(lambda: gone(core, namespace, "stubborn"), what="pod removed")
    assert time.monotonic() - t0 >= 1.5
    assert not alive(pid)


def test_restart_policy_on_failure_restarts_until_success(
    node_runner: NodeRunner, core: Any, namespace: str
) -> None:
    code = """
        import os, sys
        if not os.path.exists("attempted"):
            open("attempted", "w").close()
            sys.exit(1)
        print("second try")
    """
    core.create_namespaced_pod(namespace, make_pod("flaky", code, restart="OnFailure"))
    pod = wait_phase(core, namespace, "flaky", "Succeeded")
    cs = pod["status"]["containerStatuses"][0]
    assert cs["restartCount"] == 1
    assert cs["lastState"]["terminated"]["exitCode"] == 1
    assert cs["state"]["terminated"]["exitCode"] == 0


def test_binds_unscheduled_pods_of_the_test_scheduler(
    node_runner: NodeRunner, core: Any, namespace: str
) -> None:
    pod = make_pod("unbound", "print('hi')", node=None)
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
    control_plane: Any, core: Any, namespace: str, tmp_path: Path
) -> None:
    """Like a node reboot: the process dies with the runner and comes back with the next one."""
    code = "import os, time; print(os.getpid(), flush=True); time.sleep(600)"
    core.create_namespaced_pod(namespace, make_pod("survivor", code, node="reboot-node"))
    first = NodeRunner(control_plane.kubeconfig_path, "reboot-node", tmp_path / "one").start()
    try:
        wait_phase(core, namespace, "survivor", "Running")
        pid = int(wait_until(lambda: first.logs(namespace, "survivor").strip(), what="pid"))
    finally:
        first.stop()
    assert not alive(pid)
    with NodeRunner(control_plane.kubeconfig_path, "reboot-node", tmp_path / "two") as second:
        wait_until(lambda: second.process(namespace, "survivor"), what="restarted process")
        cs = wait_until(lambda: (c := container_status(core, namespace, "survivor")).get("started") and c)
        assert cs["restartCount"] == 1
        core.delete_namespaced_pod("survivor", namespace)
        wait_until(lambda: gone(core, namespace, "survivor"), what="pod removed")
