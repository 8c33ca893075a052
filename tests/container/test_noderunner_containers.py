"""The test node runner in container mode: a pod on the real control plane runs from its image with podman,
with its securityContext, volumes, env (values, secretKeyRef, fieldRef), the service-account token that
admission mounts, at the in-cluster path, and a loopback address of its own as ``status.podIP``."""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest

from sparkcdc.testing.containers import Images
from sparkcdc.testing.kube import ControlPlane, create_namespace, ensure_binaries, wait_until
from sparkcdc.testing.noderunner import NodeRunner

SECRET_VALUE = "pw-from-a-secret"

# The pod asks the API server who it is with the mounted token, as in-cluster clients do.
PROBE = r"""
id -u
grep '^CapEff' /proc/self/status | tr -d '\t'
touch /x 2>/dev/null && echo root-writable || echo root-read-only
echo "$MY_IP $DB_PASSWORD $(cat /etc/db/password)"
python3 - <<'EOF'
from kubernetes import client, config
config.load_incluster_config()
review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
print(client.AuthenticationV1Api().create_self_subject_review(review).status.user_info.username)
EOF
echo "done on $MY_IP" >/dev/termination-log
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ControlPlane, NodeRunner]]:
    with ControlPlane(tmp_path_factory.mktemp("controlplane"), bin_dir=ensure_binaries()) as cp:
        node = tmp_path_factory.mktemp("node")
        with NodeRunner(cp.kubeconfig_path, workdir=node, containers=True) as runner:
            yield cp, runner


def _pod(image: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "probe"},
        "spec": {
            "schedulerName": "sparkcdc-test-scheduler",
            "restartPolicy": "Never",
            "securityContext": {
                "runAsNonRoot": True,
                "runAsUser": 185,
                "runAsGroup": 185,
                "seccompProfile": {"type": "RuntimeDefault"},
            },
            "containers": [
                {
                    "name": "probe",
                    "image": image,
                    "command": ["sh", "-c", PROBE],
                    "env": [
                        {"name": "MY_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                        {"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "pw"}}},
                        {"name": "HOME", "value": "/tmp"},
                    ],
                    "securityContext": {
                        "allowPrivilegeEscalation": False,
                        "readOnlyRootFilesystem": True,
                        "capabilities": {"drop": ["ALL"]},
                    },
                    "volumeMounts": [
                        {"name": "tmp", "mountPath": "/tmp"},
                        {"name": "db", "mountPath": "/etc/db", "readOnly": True},
                    ],
                }
            ],
            "volumes": [
                {"name": "tmp", "emptyDir": {}},
                {"name": "db", "secret": {"secretName": "db", "items": [{"key": "pw", "path": "password"}]}},
            ],
        },
    }


def test_a_pod_runs_as_a_container_on_its_own_address(
    images: Images, cluster: tuple[ControlPlane, NodeRunner], tmp_path: Path
) -> None:
    cp, runner = cluster
    core: Any = kubernetes.client.CoreV1Api(cp.api_client())
    ns = create_namespace(core, f"c-{uuid.uuid4().hex[:8]}")  # enforcing `restricted`: the pod passes
    secret = {"metadata": {"name": "db"}, "data": {"pw": base64.b64encode(SECRET_VALUE.encode()).decode()}}
    core.create_namespaced_secret(ns, secret)
    core.create_namespaced_pod(ns, _pod(images.spark))

    def finished() -> Any:
        pod: dict[str, Any] = json.loads(core.read_namespaced_pod("probe", ns, _preload_content=False).data)
        return pod if pod["status"].get("phase") in ("Succeeded", "Failed") else None

    pod = wait_until(finished, 180, "the probe pod to finish") or {}
    logs = runner.logs(ns, "probe")
    assert pod["status"]["phase"] == "Succeeded", logs
    ip = pod["status"]["podIP"]
    assert ip.startswith("127.1.") and pod["status"]["podIPs"] == [{"ip": ip}]
    assert logs.splitlines() == [
        "185",
        "CapEff:0000000000000000",
        "root-read-only",
        f"{ip} {SECRET_VALUE} {SECRET_VALUE}",
        f"system:serviceaccount:{ns}:default",
    ], logs
    terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert terminated["message"] == f"done on {ip}\n"
