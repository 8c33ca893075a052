"""A test pod's container environment, resolved like the kubelet does: ``env``, ``envFrom``,
Secret/ConfigMap/field refs, ``$(VAR)`` expansion, and the service-account token on disk for the
container to mount at the in-cluster path."""

from __future__ import annotations

import base64
import json
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes.client.exceptions import ApiException

Obj = dict[str, Any]
_VAR = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")
_FIELD = re.compile(r"metadata\.(labels|annotations)\['(.+)'\]")


class ConfigError(Exception):
    """The container cannot be configured yet (missing Secret/ConfigMap/key); retried like the kubelet."""


def expand(s: str, env: dict[str, str]) -> str:
    """Kubernetes ``$(VAR)`` expansion: known names are replaced, ``$$`` escapes, others stay."""
    return _VAR.sub(lambda m: "$" if m.group(0) == "$$" else env.get(m.group(1), m.group(0)), s)


@dataclass
class PodProcess:
    """What the runner knows about one pod."""

    namespace: str
    name: str
    uid: str
    pod_dir: Path
    proc: subprocess.Popen[bytes] | None = None
    restart_count: int = 0
    started_at: str = ""
    last_state: Obj = field(default_factory=dict)
    backoff_until: float = 0.0
    kill_deadline: float | None = None
    done: bool = False  # terminal: will not run again
    deleted: bool = False  # we already asked the API server to remove it
    sa_dir: Path | None = None
    last_report: str = ""
    pod_ip: str = "127.0.0.1"  # its own loopback address when the runner runs containers

    def __post_init__(self) -> None:
        self.log_path, self.message_path = self.pod_dir / "container.log", self.pod_dir / "termination-log"


def _wants_token(pod: Obj) -> bool:
    """ServiceAccount admission adds a projected token volume unless automounting is off."""
    vols = pod["spec"].get("volumes") or []
    projected = [s for v in vols for s in (v.get("projected") or {}).get("sources") or []]
    if any("serviceAccountToken" in s for s in projected):
        return True
    return pod["spec"].get("automountServiceAccountToken") is not False and not vols


@dataclass(frozen=True)
class PodEnvironment:
    """Resolves containers' environments for pods on one test node."""

    node_name: str
    api_host: str
    api_port: str
    ca_pem: bytes
    # Only a container can see its token at the in-cluster path (one path for every pod of a
    # host): host processes get none.
    containers: bool = True

    def resolve(self, core: Any, pod: Obj, p: PodProcess, c: Obj) -> dict[str, str]:
        md, ns = pod["metadata"], pod["metadata"]["namespace"]
        env: dict[str, str] = {
            "HOSTNAME": md["name"],
            "KUBERNETES_SERVICE_HOST": self.api_host,
            "KUBERNETES_SERVICE_PORT": self.api_port,
            "KUBERNETES_SERVICE_PORT_HTTPS": self.api_port,
        }
        if self.containers and _wants_token(pod):
            self._service_account(core, pod, p)
        for src in c.get("envFrom") or []:
            prefix = src.get("prefix", "")
            for kind, key in (("ConfigMap", "configMapRef"), ("Secret", "secretRef")):
                if key in src:
                    ref = src[key]
                    data = self.data(core, kind, ns, ref["name"], bool(ref.get("optional")))
                    env.update({prefix + k: v.decode(errors="replace") for k, v in (data or {}).items()})
        for var in c.get("env") or []:
            value = self._env_value(core, pod, var, env, p.pod_ip)
            if value is not None:
                env[var["name"]] = value
        return env

    def _env_value(self, core: Any, pod: Obj, var: Obj, env: dict[str, str], pod_ip: str) -> str | None:
        if "valueFrom" not in var:
            return expand(var.get("value", ""), env)
        src, ns = var["valueFrom"], pod["metadata"]["namespace"]
        for kind, key in (("ConfigMap", "configMapKeyRef"), ("Secret", "secretKeyRef")):
            if key in src:
                ref, optional = src[key], bool(src[key].get("optional"))
                data = self.data(core, kind, ns, ref["name"], optional)
                if data is not None and ref["key"] in data:
                    return data[ref["key"]].decode(errors="replace")
                if optional:
                    return None
                raise ConfigError(f"couldn't find key {ref['key']} in {kind} {ns}/{ref['name']}")
        if "fieldRef" in src:
            path = src["fieldRef"]["fieldPath"]
            simple = {
                "metadata.name": pod["metadata"]["name"], "metadata.namespace": ns,
                "metadata.uid": pod["metadata"]["uid"], "spec.nodeName": self.node_name,
                "spec.serviceAccountName": pod["spec"].get("serviceAccountName", "default"),
                "status.podIP": pod_ip, "status.hostIP": "127.0.0.1",
            }  # fmt: skip
            if path in simple:
                return str(simple[path])
            m = _FIELD.fullmatch(path)
            if m:
                return str(pod["metadata"].get(m.group(1), {}).get(m.group(2), ""))
            raise ConfigError(f"unsupported fieldRef {path!r} in the test node runner")
        raise ConfigError(f"unsupported valueFrom for env {var['name']} in the test node runner")

    def data(self, core: Any, kind: str, ns: str, name: str, optional: bool) -> dict[str, bytes] | None:
        """The data of a Secret or ConfigMap as bytes (a Secret's may be any bytes, e.g. a key)."""
        read = core.read_namespaced_secret if kind == "Secret" else core.read_namespaced_config_map
        try:
            obj = json.loads(read(name, ns, _preload_content=False).data)
        except ApiException as e:
            if e.status == 404:
                if optional:
                    return None
                raise ConfigError(f'{kind.lower()} "{name}" not found') from e
            raise
        if kind == "Secret":
            return {k: base64.b64decode(v) for k, v in (obj.get("data") or {}).items()}
        binary = {k: base64.b64decode(v) for k, v in (obj.get("binaryData") or {}).items()}
        return {**{k: v.encode() for k, v in (obj.get("data") or {}).items()}, **binary}

    def _service_account(self, core: Any, pod: Obj, p: PodProcess) -> Path:
        if p.sa_dir is not None:
            return p.sa_dir
        md = pod["metadata"]
        sa = pod["spec"].get("serviceAccountName") or "default"
        body = {"spec": {"audiences": [], "expirationSeconds": 86400,
                         "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": md["name"],
                                            "uid": md["uid"]}}}  # fmt: skip
        try:
            resp = core.create_namespaced_service_account_token(
                sa, md["namespace"], body, _preload_content=False
            )
        except ApiException as e:
            raise ConfigError(f"failed to fetch token for serviceaccount {sa!r}: {e.reason}") from e
        sa_dir = p.pod_dir / "serviceaccount"
        sa_dir.mkdir(exist_ok=True)
        (sa_dir / "token").write_text(json.loads(resp.data)["status"]["token"])
        (sa_dir / "ca.crt").write_bytes(self.ca_pem)
        (sa_dir / "namespace").write_text(md["namespace"])
        p.sa_dir = sa_dir
        return sa_dir
