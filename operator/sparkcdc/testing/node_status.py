"""What the test node runner (``noderunner``) tells the API server: its Node, and each pod's status
as a kubelet reports it (phase, conditions, the container's state, the pod's address)."""

from __future__ import annotations

import contextlib
import time
from typing import Any

from kubernetes.client.exceptions import ApiException

from sparkcdc.testing.pod_env import Obj, PodProcess

MERGE = "application/merge-patch+json"


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def register_node(core: Any, node_name: str) -> None:
    """A Ready, untainted Node with room for any test's pods."""
    labels = {"kubernetes.io/hostname": node_name, "kubernetes.io/os": "linux"}
    with contextlib.suppress(ApiException):  # 409: already registered by an earlier runner
        core.create_node({"metadata": {"name": node_name, "labels": labels}})
    res = {"cpu": "16", "memory": "64Gi", "pods": "110", "ephemeral-storage": "100Gi"}
    ready = {"type": "Ready", "status": "True", "reason": "KubeletReady", "lastHeartbeatTime": now()}
    info = {"kubeletVersion": "sparkcdc-noderunner", "operatingSystem": "linux", "architecture": "amd64"}
    status = {
        "capacity": res, "allocatable": res, "conditions": [ready], "nodeInfo": info,
        "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
    }  # fmt: skip
    core.patch_node_status(node_name, {"status": status}, _content_type=MERGE)
    # Admission tainted the new node not-ready; no node lifecycle controller will lift it.
    core.patch_node(node_name, {"spec": {"taints": None}}, _content_type=MERGE)


def pod_status(pod: Obj, p: PodProcess, phase: str, state: Obj, ready: bool, scheme: str) -> Obj:
    """The pod's ``status`` with its first container in ``state`` (``scheme``: of the container ID)."""
    c = pod["spec"]["containers"][0]
    cond = "True" if ready else "False"
    cs: Obj = {
        "name": c["name"], "image": c.get("image", ""), "imageID": "", "ready": ready,
        "started": "running" in state, "restartCount": p.restart_count, "state": state,
        "lastState": p.last_state,
    }  # fmt: skip
    if "running" in state or "terminated" in state:
        cs["containerID"] = f"{scheme}://{p.uid}-{p.restart_count}"
    types = {"PodScheduled": "True", "Initialized": "True", "ContainersReady": cond, "Ready": cond}
    conditions = [{"type": t, "status": s, "lastTransitionTime": now()} for t, s in types.items()]
    return {
        "phase": phase, "conditions": conditions, "containerStatuses": [cs], "hostIP": "127.0.0.1",
        "podIP": p.pod_ip, "podIPs": [{"ip": p.pod_ip}], "startTime": p.started_at or now(),
    }  # fmt: skip
