"""The real control plane serves kubectl, the Python client and kopf, enforces RBAC and collects garbage."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from sparkcdc.testing.kube import ControlPlane, wait_until


def test_kubectl_and_python_client(control_plane: ControlPlane, core: Any, namespace: str) -> None:
    version = client.VersionApi(control_plane.api_client()).get_code()
    assert version.git_version.startswith("v1.34.")
    names = {ns.metadata.name for ns in core.list_namespace().items}
    assert {"default", "kube-system", namespace} <= names
    manifest = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"}, "data": {"k": "v"}}
    out = control_plane.kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(manifest)).stdout
    assert "configmap/applied created" in out
    assert core.read_namespaced_config_map("applied", namespace).data == {"k": "v"}
    got = json.loads(
        control_plane.kubectl("get", "configmap", "applied", "-n", namespace, "-o", "json").stdout
    )
    assert got["data"] == {"k": "v"}


def test_rbac_denies_a_service_account_without_a_role(
    control_plane: ControlPlane, core: Any, namespace: str
) -> None:
    core.create_namespaced_service_account(namespace, {"metadata": {"name": "nobody"}})
    token = json.loads(
        core.create_namespaced_service_account_token(
            "nobody", namespace, {"spec": {"audiences": []}}, _preload_content=False
        ).data
    )["status"]["token"]
    cfg = client.Configuration()
    cfg.host = control_plane.server
    cfg.ssl_ca_cert = str(control_plane.pki / "ca.crt")
    cfg.api_key = {"BearerToken": f"Bearer {token}"}
    as_nobody = client.CoreV1Api(client.ApiClient(cfg))
    with pytest.raises(ApiException) as err:
        as_nobody.list_namespaced_config_map(namespace)
    assert err.value.status == 403
    who = f"system:serviceaccount:{namespace}:nobody"
    can_i = ["auth", "can-i", "list", "configmaps", "-n", namespace, "--as", who]
    denied = control_plane.kubectl(*can_i, check=False)
    assert (denied.returncode, denied.stdout.strip()) == (1, "no")

    rbac = client.RbacAuthorizationV1Api(control_plane.api_client())
    rules = [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]
    rbac.create_namespaced_role(namespace, {"metadata": {"name": "reader"}, "rules": rules})
    rbac.create_namespaced_role_binding(namespace, {
        "metadata": {"name": "reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "nobody", "namespace": namespace}],
    })  # fmt: skip
    assert control_plane.kubectl(*can_i).stdout.strip() == "yes"
    wait_until(lambda: as_nobody.list_namespaced_config_map(namespace), what="RBAC grant to apply")


def test_owner_reference_garbage_collection(core: Any, namespace: str) -> None:
    owner = core.create_namespaced_config_map(namespace, {"metadata": {"name": "owner"}})
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner.metadata.uid}
    core.create_namespaced_config_map(
        namespace, {"metadata": {"name": "dependent", "ownerReferences": [ref]}}
    )
    core.delete_namespaced_config_map("owner", namespace)

    def dependent_gone() -> bool:
        try:
            core.read_namespaced_config_map("dependent", namespace)
        except ApiException as e:
            return bool(e.status == 404)
        return False

    wait_until(dependent_gone, timeout=60, what="garbage collection of the dependent")


def test_kopf_operator_runs_against_it(
    control_plane: ControlPlane, core: Any, namespace: str, tmp_path: Path
) -> None:
    script = tmp_path / "smoke_operator.py"
    script.write_text(textwrap.dedent("""
        import kopf

        @kopf.on.create("configmaps", labels={"kopf-smoke": "yes"})
        def created(patch, **_):
            patch.metadata.annotations["kopf-smoke/seen"] = "yes"
    """))  # fmt: skip
    cmd = [sys.executable, "-m", "kopf", "run", "--standalone", "--namespace", namespace, str(script)]
    log = (tmp_path / "kopf.log").open("w")
    proc = subprocess.Popen(cmd, env=control_plane.env(), stdout=log, stderr=subprocess.STDOUT)
    try:
        body = {"metadata": {"name": "watched", "labels": {"kopf-smoke": "yes"}}}
        core.create_namespaced_config_map(namespace, body)

        def seen() -> bool:
            assert proc.poll() is None, (tmp_path / "kopf.log").read_text()
            annotations = core.read_namespaced_config_map("watched", namespace).metadata.annotations or {}
            return annotations.get("kopf-smoke/seen") == "yes"

        wait_until(seen, timeout=60, what=f"kopf handler (log: {tmp_path / 'kopf.log'})")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def test_cli_up_env_down(tmp_path: Path, control_plane: ControlPlane) -> None:
    """`python -m sparkcdc.testing.kube up|env|down` manages a detached control plane."""
    base = tmp_path / "cli"
    cli = [sys.executable, "-m", "sparkcdc.testing.kube"]
    env = control_plane.env()
    env["SPARKCDC_K8S_BIN_DIR"] = str(control_plane.bin_dir)
    up = subprocess.run(
        [*cli, "up", "--dir", str(base)], env=env, capture_output=True, text=True, timeout=180
    )
    try:
        assert up.returncode == 0, up.stderr
        assert f"export KUBECONFIG={base / 'kubeconfig'}" in up.stdout
        shown = subprocess.run([*cli, "env", "--dir", str(base)], capture_output=True, text=True, check=True)
        assert shown.stdout == up.stdout
        pids = json.loads((base / "state.json").read_text())["pids"]
        kubectl = [
            str(Path(str(control_plane.bin_dir)) / "kubectl"),
            "--kubeconfig",
            str(base / "kubeconfig"),
        ]
        out = subprocess.run([*kubectl, "get", "ns", "default", "-o", "name"], capture_output=True, text=True)
        assert out.stdout.strip() == "namespace/default", out.stderr
    finally:
        down = subprocess.run([*cli, "down", "--dir", str(base)], capture_output=True, text=True, timeout=60)
    assert down.returncode == 0, down.stderr
    assert not base.exists()
    for pid in pids.values():
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]
