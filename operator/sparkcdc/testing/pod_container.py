"""A pod's container as a podman container: the ``podman run`` arguments a kubelet would amount to.

The test node runner (``noderunner``) runs pods with the arguments built here, kept pure (no API calls,
no podman) so they can be checked piece by piece:

* ``command``/``args`` replace the image's entry point and arguments as Kubernetes defines it (``args``
  alone keep the entry point).
* Environment values are passed by name only (``--env NAME``; podman takes the value from its own
  environment): resolved Secret values never appear in a process list.
* ``securityContext``: ``runAsUser``/``runAsGroup`` (container over pod), ``runAsNonRoot`` checked
  against the effective user like the kubelet does, ``readOnlyRootFilesystem`` without podman's extra
  tmpfs mounts, ``capabilities``, ``allowPrivilegeEscalation: false`` as no-new-privileges.
* Volumes, from host directories the caller fills: ``emptyDir`` (``medium: Memory`` as tmpfs),
  ``secret``/``configMap`` files (read-only), and the projected service-account token at the real
  in-cluster path; the termination message file at ``terminationMessagePath``.
* Host network: each pod gets its own loopback address (the caller's ``pod_ip``) as ``status.podIP``,
  so two pods binding the same port on their own address do not collide.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparkcdc.testing.containers import LIMITS
from sparkcdc.testing.pod_env import ConfigError

SERVICE_ACCOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
DEFAULT_TERMINATION_MESSAGE_PATH = "/dev/termination-log"

Obj = dict[str, Any]


@dataclass(frozen=True)
class PodFiles:
    """Host paths of one pod's volumes: ``volumes/<name>`` directories under ``pod_dir`` (emptyDir,
    secret and configMap contents), the service-account directory and the termination message file."""

    pod_dir: Path
    service_account_dir: Path | None
    message_path: Path

    def volume_dir(self, name: str) -> Path:
        return self.pod_dir / "volumes" / name


def container_name(pod: Obj) -> str:
    md = pod["metadata"]
    return f"k8s_{md['namespace']}_{md['name']}_{md['uid'][:8]}"


def _effective_user(pod: Obj, c: Obj, image_user: str) -> tuple[int | None, int | None]:
    pod_sc, sc = pod["spec"].get("securityContext") or {}, c.get("securityContext") or {}
    uid = sc.get("runAsUser", pod_sc.get("runAsUser"))
    gid = sc.get("runAsGroup", pod_sc.get("runAsGroup"))
    non_root = sc.get("runAsNonRoot", pod_sc.get("runAsNonRoot"))
    if non_root:
        if uid is None:
            # Like the kubelet: the image's user must be numeric to be verified as non-root.
            name = image_user.split(":", 1)[0]
            if not name.isdigit():
                raise ConfigError(
                    f"container has runAsNonRoot and image has non-numeric user ({name or 'root'}), "
                    "cannot verify user is non-root"
                )
            if int(name) == 0:
                raise ConfigError("container has runAsNonRoot and image will run as root")
        elif int(uid) == 0:
            raise ConfigError("container's runAsUser breaks non-root policy")
    return (None if uid is None else int(uid), None if gid is None else int(gid))


def podman_run_args(
    pod: Obj,
    c: Obj,
    env: Mapping[str, str],
    files: PodFiles,
    *,
    pod_ip: str,
    image_user: str,
    grace_seconds: int = 30,
) -> list[str]:
    """The arguments after ``podman`` for container ``c`` of ``pod`` (values of ``env`` are not in them:
    run podman with ``env`` in its environment)."""
    # --replace: a restarted pod's container takes the name even while the old one is still removed.
    args = ["run", "--rm", "--replace", "--pull=never", "--name", container_name(pod), "--network", "host"]
    args += LIMITS
    args += ["--stop-timeout", str(grace_seconds)]
    uid, gid = _effective_user(pod, c, image_user)
    if uid is not None:
        args += ["--user", f"{uid}:{gid}" if gid is not None else str(uid)]
    elif gid is not None:
        args += ["--group-add", str(gid)]
    sc = c.get("securityContext") or {}
    if sc.get("readOnlyRootFilesystem"):
        args += ["--read-only", "--read-only-tmpfs=false"]
    if sc.get("privileged"):
        raise ConfigError("privileged containers are not run by the test node runner")
    for cap in (sc.get("capabilities") or {}).get("drop") or []:
        args += ["--cap-drop", cap]
    for cap in (sc.get("capabilities") or {}).get("add") or []:
        args += ["--cap-add", cap]
    if sc.get("allowPrivilegeEscalation") is False:
        args += ["--security-opt", "no-new-privileges"]
    args += _volume_args(pod, c, files)
    message = c.get("terminationMessagePath") or DEFAULT_TERMINATION_MESSAGE_PATH
    args += ["-v", f"{files.message_path}:{message}"]
    for name in env:
        args += ["--env", name]
    if c.get("workingDir"):
        args += ["--workdir", c["workingDir"]]
    command: Sequence[str] = c.get("command") or []
    if command:
        args += ["--entrypoint", json.dumps(list(command))]
    args.append(c["image"])
    args += c.get("args") or []
    return args


def _volume_args(pod: Obj, c: Obj, files: PodFiles) -> list[str]:
    volumes = {v["name"]: v for v in pod["spec"].get("volumes") or []}
    args: list[str] = []
    for mount in c.get("volumeMounts") or []:
        volume = volumes.get(mount["name"])
        if volume is None:
            raise ConfigError(f"volume {mount['name']!r} of a volumeMount is not in the pod")
        target = mount["mountPath"]
        ro = ":ro" if mount.get("readOnly") else ""
        if "emptyDir" in volume:
            if (volume["emptyDir"] or {}).get("medium") == "Memory":
                args += ["--tmpfs", f"{target}:rw,mode=1777"]
            else:
                args += ["-v", f"{files.volume_dir(mount['name'])}:{target}{ro}"]
        elif "secret" in volume or "configMap" in volume:
            args += ["-v", f"{files.volume_dir(mount['name'])}:{target}:ro"]
        elif "projected" in volume and _is_token_volume(volume):
            if files.service_account_dir is None:
                raise ConfigError("the service-account token was not fetched")
            args += ["-v", f"{files.service_account_dir}:{target}:ro"]
        else:
            kinds = sorted(set(volume) - {"name"})
            raise ConfigError(f"volume {mount['name']!r} ({', '.join(kinds)}) is not supported")
    return args


def _is_token_volume(volume: Obj) -> bool:
    sources = (volume.get("projected") or {}).get("sources") or []
    return any("serviceAccountToken" in s for s in sources)


def write_volume_files(volume: Obj, data: Mapping[str, bytes], into: Path, group: int | None = None) -> None:
    """The files of a secret or configMap volume (``items`` pick keys and paths; ``defaultMode``),
    owned by ``group`` (the pod's ``fsGroup``) as the kubelet does, so a mode like 0440 lets the
    pod's user read them."""
    source = volume.get("secret") or volume.get("configMap") or {}
    into.mkdir(parents=True, exist_ok=True)
    items = source.get("items")
    chosen = [(i["key"], i["path"]) for i in items] if items else [(k, k) for k in data]
    mode = int(source.get("defaultMode", 0o644))
    for key, path in chosen:
        if key not in data:
            raise ConfigError(f"couldn't find key {key} in the volume {volume['name']!r}")
        target = into / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data[key])
        target.chmod(mode)
        if group is not None:
            os.chown(target, -1, group)


def make_empty_dir(into: Path) -> None:
    """An emptyDir writable by any uid, as the kubelet makes it (mode 0777)."""
    into.mkdir(parents=True, exist_ok=True)
    into.chmod(0o777)


def prepare_volumes(
    pod: Obj, files: PodFiles, read: Callable[[str, str, bool], Mapping[str, bytes] | None]
) -> None:
    """The pod's ``emptyDir``, secret and configMap volumes as directories under its own, the
    data read with ``read(kind, name, optional)`` (the API server's, as a kubelet would)."""
    group = (pod["spec"].get("securityContext") or {}).get("fsGroup")
    for volume in pod["spec"].get("volumes") or []:
        into = files.volume_dir(volume["name"])
        if "emptyDir" in volume:
            make_empty_dir(into)
        for kind, key, name_key in (("Secret", "secret", "secretName"), ("ConfigMap", "configMap", "name")):
            if key in volume:
                source = volume[key]
                data = read(kind, source[name_key], bool(source.get("optional")))
                write_volume_files(volume, data or {}, into, group)
