"""The operator's driver pod, as it builds it, run as a podman container by the pod translation of the
test node runner (sparkcdc.testing.pod_container): security context, volumes, environment, the
service-account token at the in-cluster path, the termination message and the pod's own address."""

from __future__ import annotations

import socket
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from sparkcdc.api import CdcPipeline
from sparkcdc.controller.builders import SPARK_LOCAL_DIR, SPARK_UID, driver_pod
from sparkcdc.testing.containers import Images, image_config, podman
from sparkcdc.testing.pod_container import (
    SERVICE_ACCOUNT_PATH,
    PodFiles,
    make_empty_dir,
    podman_run_args,
    write_volume_files,
)
from sparkcdc.testing.pod_env import ConfigError
from unit.deploy.deploy_support import EXAMPLES

SECRET_VALUE = "s3cr3t-never-in-argv"
POD_IP = "127.0.1.23"

# What the container reports about itself, one fact a line (sh: the image has no other tools needed).
PROBE = r"""
id -u; id -g
grep '^CapEff' /proc/self/status | tr -d '\t'
grep '^NoNewPrivs' /proc/self/status | tr -d '\t'
touch /opt/spark/x 2>/dev/null && echo root-writable || echo root-read-only
echo tmp >/tmp/t && cat /tmp/t
echo local >"$SPARK_LOCAL/l" && cat "$SPARK_LOCAL/l"
cat /etc/sparkcdc-secret/password; echo
cat "$SA/namespace"; echo; test -s "$SA/token" && test -s "$SA/ca.crt" && echo token-and-ca
echo "$SPARKCDC_PIPELINE_NAME $SPARKCDC_POD_NAME $MY_IP"
test "$DB_PASSWORD" = "$(cat /etc/sparkcdc-secret/password)" && echo env-secret-matches
python3 -c "import socket, sys; socket.socket().bind((sys.argv[1], int(sys.argv[2]))); print('bound')" \
  "$MY_IP" "$PORT"
echo "exiting on purpose" >/dev/termination-log
exit 3
"""


def _pipeline() -> CdcPipeline:
    docs = yaml.safe_load_all((EXAMPLES / "minimal.yaml").read_text())
    doc: dict[str, Any] = next(d for d in docs if d["kind"] == "CdcPipeline")
    doc["metadata"].update(namespace="shop", uid=str(uuid.uuid4()))
    return CdcPipeline.from_k8s(doc)


def _pod(image: str, port: int) -> dict[str, Any]:
    """The operator's driver pod, plus what admission and a test add: the service-account token volume
    (ServiceAccount admission), a secret volume, env values and the probe as its command."""
    pod = driver_pod(
        _pipeline(), 3, image=image, spark_master="local[1]", service_account="sparkcdc-driver",
        spec_hash="abc",
    )  # fmt: skip
    pod["metadata"]["uid"] = str(uuid.uuid4())
    spec, c = pod["spec"], pod["spec"]["containers"][0]
    c["command"] = ["sh", "-c", PROBE]  # the probe in place of `sparkcdc driver`
    spec["volumes"] += [
        {"name": "kube-api-access", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}},
        {"name": "db", "secret": {"secretName": "db", "items": [{"key": "pw", "path": "password"}]}},
    ]
    c["volumeMounts"] += [
        {"name": "kube-api-access", "mountPath": SERVICE_ACCOUNT_PATH, "readOnly": True},
        {"name": "db", "mountPath": "/etc/sparkcdc-secret", "readOnly": True},
    ]
    c["env"] += [
        {"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "pw"}}},
        {"name": "MY_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": "SPARK_LOCAL", "value": SPARK_LOCAL_DIR},
        {"name": "SA", "value": SERVICE_ACCOUNT_PATH},
        {"name": "PORT", "value": str(port)},
    ]
    return pod


def _resolve(pod: dict[str, Any]) -> dict[str, str]:
    """The env the node runner's PodEnvironment would resolve (the API parts given here)."""
    fields = {"metadata.name": pod["metadata"]["name"], "status.podIP": POD_IP}
    env: dict[str, str] = {}
    for var in pod["spec"]["containers"][0]["env"]:
        src = var.get("valueFrom")
        if src is None:
            env[var["name"]] = var["value"]
        elif "secretKeyRef" in src:
            env[var["name"]] = SECRET_VALUE
        elif "fieldRef" in src:
            env[var["name"]] = fields[src["fieldRef"]["fieldPath"]]
    return env


def _files(pod: dict[str, Any], root: Path) -> PodFiles:
    sa = root / "serviceaccount"
    sa.mkdir(parents=True)
    (sa / "token").write_text("a-token")
    (sa / "ca.crt").write_text("a-ca")
    (sa / "namespace").write_text(pod["metadata"]["namespace"])
    message = root / "termination-log"
    message.touch()
    message.chmod(0o666)
    files = PodFiles(pod_dir=root, service_account_dir=sa, message_path=message)
    for volume in pod["spec"]["volumes"]:
        if "emptyDir" in volume:
            make_empty_dir(files.volume_dir(volume["name"]))
        elif "secret" in volume:
            write_volume_files(volume, {"pw": SECRET_VALUE.encode()}, files.volume_dir(volume["name"]))
    return files


def test_the_driver_pod_runs_as_a_restricted_container(images: Images, tmp_path: Path) -> None:
    with socket.socket() as held:
        # The host holds the port on 127.0.0.1; the pod binds the same port on its own address.
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = int(held.getsockname()[1])
        pod = _pod(images.spark, port)
        env = _resolve(pod)
        user = image_config(images.spark, "{{.Config.User}}")
        args = podman_run_args(
            pod, pod["spec"]["containers"][0], env, _files(pod, tmp_path), pod_ip=POD_IP, image_user=user
        )
        assert SECRET_VALUE not in " ".join(args)  # values come from podman's environment
        result = subprocess.run(
            [*podman(), *args], env=env, capture_output=True, text=True, timeout=120, check=False
        )
    assert result.returncode == 3, result.stderr
    lines = result.stdout.splitlines()
    assert lines == [
        str(SPARK_UID), str(SPARK_UID),
        "CapEff:0000000000000000",
        "NoNewPrivs:1",
        "root-read-only",
        "tmp", "local",
        SECRET_VALUE,
        "shop", "token-and-ca",
        f"{env['SPARKCDC_PIPELINE_NAME']} {pod['metadata']['name']} {POD_IP}",
        "env-secret-matches",
        "bound",
    ], result.stderr  # fmt: skip
    assert (tmp_path / "termination-log").read_text() == "exiting on purpose\n"


def test_run_as_non_root_is_enforced_like_the_kubelet(images: Images, tmp_path: Path) -> None:
    pod = _pod(images.spark, 1)
    c = pod["spec"]["containers"][0]
    files = _files(pod, tmp_path)
    c["securityContext"]["runAsUser"] = 0
    with pytest.raises(ConfigError, match="non-root"):
        podman_run_args(pod, c, {}, files, pod_ip=POD_IP, image_user="185")
    del c["securityContext"]["runAsUser"], pod["spec"]["securityContext"]["runAsUser"]
    with pytest.raises(ConfigError, match="image will run as root"):
        podman_run_args(pod, c, {}, files, pod_ip=POD_IP, image_user="0")
    with pytest.raises(ConfigError, match="non-numeric user"):
        podman_run_args(pod, c, {}, files, pod_ip=POD_IP, image_user="spark")
    # The image's own numeric non-root user passes, as with the spark image.
    args = podman_run_args(
        pod, c, {}, files, pod_ip=POD_IP, image_user=image_config(images.spark, "{{.Config.User}}")
    )
    assert "--user" not in args
