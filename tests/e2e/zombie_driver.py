"""A driver pod's container started once more outside the node runner, for the stale-epoch tests: the
same image, command, user, security settings, volumes and environment as the pod's container (read
from the pod and its running container), but a service-account token that outlives the pod (a
TokenRequest not bound to it). Deleting the pod does not stop it, as a driver on a node cut off from
the cluster goes on: a zombie of its epoch."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sparkcdc.testing.containers import podman
from sparkcdc.testing.kube import ControlPlane
from sparkcdc.testing.pod_container import PodFiles, container_name, podman_run_args, prepare_volumes

Obj = dict[str, Any]


class ZombieDriver:
    def __init__(self, command: list[str], env: dict[str, str], name: str, workdir: Path) -> None:
        self.command, self.env, self.name, self.workdir = command, env, name, workdir
        self.proc: subprocess.Popen[bytes] | None = None

    @classmethod
    def of(cls, cp: ControlPlane, core: Any, namespace: str, pod_name: str, workdir: Path) -> ZombieDriver:
        """The zombie of ``pod_name``, whose container must be running (its environment is read)."""
        pod: Obj = json.loads(core.read_namespaced_pod(pod_name, namespace, _preload_content=False).data)
        container = pod["spec"]["containers"][0]
        env = _container_env(container_name(pod), {e["name"] for e in container.get("env") or []})
        env["SPARKCDC_DRIVER_METRICS_PORT"] = "0"  # the pod's driver of the next epoch serves there
        token = _service_account_dir(cp, core, namespace, pod["spec"]["serviceAccountName"], workdir)
        md = {**pod["metadata"], "name": f"{pod_name}-zombie", "uid": uuid.uuid4().hex}
        zombie = {**pod, "metadata": md}
        files = PodFiles(workdir / "zombie", token, workdir / "termination-log")
        # Only emptyDirs: a driver of a local master mounts no Secret.
        prepare_volumes(zombie, files, lambda kind, name, optional: None)
        files.message_path.write_bytes(b"")
        files.message_path.chmod(0o666)  # written by the container's user
        args = podman_run_args(zombie, container, env, files, pod_ip="127.0.0.1", image_user="")
        return cls([*podman(), *args], env, container_name(zombie), workdir)

    @contextlib.contextmanager
    def running(self) -> Iterator[ZombieDriver]:
        """Started for the block; removed (with every process of it) afterwards."""
        with (self.workdir / "zombie.log").open("wb") as out:
            env = {"PATH": os.environ["PATH"], **self.env}  # the values reach podman only this way
            self.proc = subprocess.Popen(self.command, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            yield self
        finally:
            subprocess.run([*podman(), "rm", "-f", "-t", "0", self.name], capture_output=True, check=False)
            self.proc.wait(timeout=60)

    def wait(self, timeout: float) -> int:
        """The container's exit code."""
        assert self.proc is not None
        return self.proc.wait(timeout=timeout)

    def pause(self) -> None:
        subprocess.run([*podman(), "pause", self.name], capture_output=True, check=True)

    def unpause(self) -> None:
        subprocess.run([*podman(), "unpause", self.name], capture_output=True, check=True)

    def log(self) -> str:
        return (self.workdir / "zombie.log").read_text(errors="replace")

    def message(self) -> str:
        """What it wrote to its ``/dev/termination-log``."""
        return (self.workdir / "termination-log").read_text(errors="replace")


def _container_env(container: str, names: set[str]) -> dict[str, str]:
    """The values of the pod's variables (``names``, and those the node adds) in its container."""
    out = subprocess.run(
        [*podman(), "inspect", "--format", "{{json .Config.Env}}", container],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    pairs = [item.split("=", 1) for item in json.loads(out.stdout) if "=" in item]
    return {k: v for k, v in pairs if k in names or k == "HOSTNAME" or k.startswith("KUBERNETES_")}


def _service_account_dir(cp: ControlPlane, core: Any, namespace: str, account: str, workdir: Path) -> Path:
    """A token of ``account`` valid for an hour whatever happens to the pod, with the CA and the
    namespace, as the in-cluster directory has them."""
    request = {"spec": {"expirationSeconds": 3600}}
    response = core.create_namespaced_service_account_token(
        account, namespace, request, _preload_content=False
    )
    directory = workdir / "serviceaccount"
    directory.mkdir()
    files = {
        "token": json.loads(response.data)["status"]["token"].encode(),
        "ca.crt": (cp.pki / "ca.crt").read_bytes(),
        "namespace": namespace.encode(),
    }
    for name, data in files.items():
        (directory / name).write_bytes(data)
        (directory / name).chmod(0o644)  # the container's user reads them
    return directory
