"""A test "kubelet": runs the Pods bound to one Node, in a background thread.

Pods with ``spec.nodeName == node_name`` (and unscheduled pods with ``schedulerName == scheduler_name``,
which it binds) get their first container run from its image with podman (``sparkcdc.testing.
pod_container``): ``command``/``args``, the environment (``env``, ``envFrom``, Secret/ConfigMap/field
refs), security context, volumes, the service-account token at the in-cluster path and the termination
message at ``terminationMessagePath``, on a loopback address of its own reported as ``status.podIP``.
The code in the images runs unchanged, as on a real node. Phase, container state, exit code and
termination message are reported back; deleting the pod stops its container. See docs/testing.md.

``containers=False`` runs the container's ``command + args`` as a host process instead, with the pod's
environment but no image, volumes, token or termination-message file: for load tests whose pods are
cheap stand-ins (``benchmarks/operator_scale.py``: hundreds of ``sleep``s).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException

from sparkcdc.testing.containers import image_config, podman
from sparkcdc.testing.kube import set_pdeathsig
from sparkcdc.testing.node_status import MERGE, now, pod_status, register_node
from sparkcdc.testing.pod_container import (
    PodFiles,
    container_name,
    podman_run_args,
    prepare_volumes,
)
from sparkcdc.testing.pod_env import ConfigError, Obj, PodEnvironment, PodProcess, expand


def _kill(proc: subprocess.Popen[bytes], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


def _container(p: PodProcess) -> str:
    return container_name({"metadata": {"namespace": p.namespace, "name": p.name, "uid": p.uid}})


class NodeRunner:
    """Registers ``node_name`` and runs its pods until :meth:`stop`. Also a context manager."""

    def __init__(
        self,
        kubeconfig: Path | str,
        node_name: str = "sparkcdc-test-node",
        workdir: Path | str | None = None,
        *,
        scheduler_name: str | None = "sparkcdc-test-scheduler",
        restart_backoff: float = 1.0,
        max_grace: float = 30.0,
        base_env: dict[str, str] | None = None,
        containers: bool = True,
    ):
        self.node_name = node_name
        self.scheduler_name = scheduler_name
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="sparkcdc-node-")).resolve()
        self.restart_backoff = restart_backoff
        self.max_grace = max_grace
        # Host processes inherit the runner's environment (PATH, ...) minus anything that would give
        # them credentials; containers get only the pod's (podman runs with this PATH).
        env = dict(os.environ if base_env is None else base_env)
        for k in [k for k in env if k == "KUBECONFIG" or k.startswith("KUBERNETES_")]:
            del env[k]
        self.base_env = env
        cfg = client.Configuration()
        config.load_kube_config(config_file=str(kubeconfig), client_configuration=cfg)  # type: ignore[no-untyped-call]
        self._cfg = cfg
        url = urlparse(cfg.host)
        self.api_host, self.api_port = url.hostname or "127.0.0.1", str(url.port or 443)
        ca_pem = Path(cfg.ssl_ca_cert).read_bytes() if cfg.ssl_ca_cert else b""
        self.containers = containers
        self.environment = PodEnvironment(
            node_name, self.api_host, self.api_port, ca_pem, containers=containers
        )
        self._pods_seen = 0  # numbers the pods' loopback addresses
        self.pods: dict[str, PodProcess] = {}
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._threads: list[threading.Thread] = []

    def _core(self) -> Any:
        return client.CoreV1Api(client.ApiClient(self._cfg))

    # -- public ------------------------------------------------------------------------------------
    def start(self) -> NodeRunner:
        self.workdir.mkdir(parents=True, exist_ok=True)
        core = self._core()
        register_node(core, self.node_name)
        for target in (lambda: self._loop(core), self._watch):
            t = threading.Thread(target=target, name=f"noderunner-{self.node_name}", daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def stop(self) -> None:
        """Kill every pod process (like a node going down); pod objects stay in the API."""
        self._stop.set()
        self._wake.set()
        for t in self._threads:
            t.join(timeout=15)
        self._threads.clear()

    def __enter__(self) -> NodeRunner:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def process(self, namespace: str, name: str) -> subprocess.Popen[bytes] | None:
        """The current local process of a pod (``podman run`` in container mode), if it has one."""
        live = self._live(namespace, name)
        return live.proc if live else None

    def kill(self, namespace: str, name: str) -> None:
        """SIGKILL every process of the pod's container at once, as a container runtime does (an OOM
        kill): nothing of it runs on, and the pod ends like any container killed (exit code 137)."""
        self._signal(namespace, name, ["kill", "--signal", "KILL"], signal.SIGKILL)

    def pause(self, namespace: str, name: str) -> None:
        """Freeze every process of the pod's container (``podman pause``), as a stalled node would."""
        self._signal(namespace, name, ["pause"], signal.SIGSTOP)

    def unpause(self, namespace: str, name: str) -> None:
        self._signal(namespace, name, ["unpause"], signal.SIGCONT)

    def logs(self, namespace: str, name: str) -> str:
        """Stdout and stderr of the newest pod of that name, also after deletion (no ``kubectl logs``)."""
        logs = sorted(
            self.workdir.glob(f"{namespace}_{name}_*/container.log"), key=lambda f: f.stat().st_mtime
        )
        return logs[-1].read_text(errors="replace") if logs else ""

    def _live(self, namespace: str, name: str) -> PodProcess | None:
        live = [
            p
            for p in list(self.pods.values())
            if (p.namespace, p.name, p.deleted) == (namespace, name, False) and p.proc is not None
        ]
        return live[0] if live else None

    def _signal(self, namespace: str, name: str, podman_args: list[str], sig: int) -> None:
        p = self._live(namespace, name)
        if p is None or p.proc is None:
            raise LookupError(f"pod {namespace}/{name} has no running container on {self.node_name}")
        if self.containers:
            command = [*podman(), *podman_args, _container(p)]
            subprocess.run(command, capture_output=True, check=True, timeout=60)
        else:
            _kill(p.proc, sig)

    # -- loops -------------------------------------------------------------------------------------
    def _watch(self) -> None:
        """Wake the sync loop on any pod event (the loop also syncs every second on its own)."""
        core = self._core()
        while not self._stop.is_set():
            try:
                events = watch.Watch().stream(core.list_pod_for_all_namespaces, timeout_seconds=5)  # type: ignore[no-untyped-call]
                for _ in events:
                    self._wake.set()
                    if self._stop.is_set():
                        return
            except Exception:
                self._stop.wait(0.5)

    def _loop(self, core: Any) -> None:
        while not self._stop.is_set():
            try:
                self._sync(core)
            except Exception as e:  # API hiccups and races: the next sync fixes things
                print(f"noderunner: sync failed: {e!r}", flush=True)
            busy = any(p.kill_deadline is not None for p in self.pods.values())
            self._wake.wait(0.1 if busy else 1.0)
            self._wake.clear()
        for p in self.pods.values():
            if p.proc is not None and p.proc.poll() is None:
                self._hard_kill(p)

    @staticmethod
    def _list(core: Any, selector: str) -> list[Obj]:
        return list(
            json.loads(
                core.list_pod_for_all_namespaces(field_selector=selector, _preload_content=False).data
            )["items"]
        )

    def _sync(self, core: Any) -> None:
        if self.scheduler_name:
            sel = f"spec.nodeName=,spec.schedulerName={self.scheduler_name}"
            for pod in self._list(core, sel):
                md = pod["metadata"]
                body = {"metadata": {"name": md["name"]}, "target": {"kind": "Node", "name": self.node_name}}
                with contextlib.suppress(ApiException):  # 409: bound meanwhile
                    core.create_namespaced_binding(md["namespace"], body, _preload_content=False)
        seen = set()
        for pod in self._list(core, f"spec.nodeName={self.node_name}"):
            md = pod["metadata"]
            seen.add(md["uid"])
            p = self.pods.get(md["uid"])
            if p is None:
                p = self._track(pod)
            if md.get("deletionTimestamp"):
                self._terminate(core, pod, p)
            elif p.done or p.deleted:
                continue
            elif p.proc is None:
                if time.monotonic() >= p.backoff_until:
                    self._launch(core, pod, p)
            elif p.proc.poll() is not None:
                self._exited(core, pod, p)
        for uid in [u for u in self.pods if u not in seen]:  # force-deleted behind our back
            p = self.pods[uid]
            if p.proc is not None and p.proc.poll() is None:
                self._hard_kill(p)
            del self.pods[uid]

    def _track(self, pod: Obj) -> PodProcess:
        md, status = pod["metadata"], pod.get("status", {})
        pod_dir = self.workdir / f"{md['namespace']}_{md['name']}_{md['uid'][:8]}"
        pod_dir.mkdir(parents=True, exist_ok=True)
        p = PodProcess(md["namespace"], md["name"], md["uid"], pod_dir)
        if self.containers:
            # 127.1.x.y: apart from 127.0.0.1, where the API server, databases and the host listen.
            n, self._pods_seen = self._pods_seen, self._pods_seen + 1
            p.pod_ip = f"127.1.{n // 250}.{n % 250 + 2}"
        prev = (status.get("containerStatuses") or [{}])[0]
        if status.get("phase") in ("Succeeded", "Failed"):
            p.done = True  # finished before this runner started
        elif prev.get("state", {}).get("running") or prev.get("restartCount"):
            # Was running under an earlier runner (a node restart): the container restarts.
            p.restart_count = int(prev.get("restartCount", 0)) + int("running" in prev.get("state", {}))
        self.pods[md["uid"]] = p
        return p

    # -- pod lifecycle -----------------------------------------------------------------------------
    def _launch(self, core: Any, pod: Obj, p: PodProcess) -> None:
        c = pod["spec"]["containers"][0]
        try:
            env = self.environment.resolve(core, pod, p, c)
            if self.containers:
                cmd = self._container_command(core, pod, p, c, env)
                env = {"PATH": self.base_env.get("PATH", os.defpath), **env}
            else:
                cmd = [expand(a, env) for a in (c.get("command") or []) + (c.get("args") or [])]
            if not cmd:
                raise ConfigError("host-process mode has no images: the container needs a command")
        except ConfigError as e:
            p.backoff_until = time.monotonic() + 1.0
            state = {"waiting": {"reason": "CreateContainerConfigError", "message": str(e)}}
            self._report(core, pod, p, "Pending", state, ready=False)
            return
        wd = c.get("workingDir")
        cwd = wd if wd and Path(wd).is_dir() and not self.containers else str(p.pod_dir)
        proc_env = env if self.containers else {**self.base_env, **env}
        with open(p.log_path, "ab") as log:
            p.proc = subprocess.Popen(
                cmd, env=proc_env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=set_pdeathsig,
            )  # fmt: skip
        p.started_at, p.kill_deadline = now(), None
        proc = p.proc
        threading.Thread(target=self._reap, args=(proc,), daemon=True).start()
        self._report(core, pod, p, "Running", {"running": {"startedAt": p.started_at}}, ready=True)

    def _container_command(
        self, core: Any, pod: Obj, p: PodProcess, c: Obj, env: dict[str, str]
    ) -> list[str]:
        """``podman run ...`` of container ``c``, its volumes prepared under the pod's directory."""
        files = PodFiles(p.pod_dir, p.sa_dir, p.message_path)
        prepare_volumes(
            pod,
            files,
            lambda kind, name, optional: self.environment.data(core, kind, p.namespace, name, optional),
        )
        # A fresh, empty termination message file the container's user can write.
        p.message_path.write_bytes(b"")
        p.message_path.chmod(0o666)
        image_user = image_config(c["image"], "{{.Config.User}}")
        args = podman_run_args(
            pod, {**c, "args": [expand(a, env) for a in c.get("args") or []],
                  "command": [expand(a, env) for a in c.get("command") or []]},
            env, files, pod_ip=p.pod_ip, image_user=image_user,
            grace_seconds=int(pod["spec"].get("terminationGracePeriodSeconds", 30)),
        )  # fmt: skip
        return [*podman(), *args]

    def _exited(self, core: Any, pod: Obj, p: PodProcess) -> None:
        assert p.proc is not None
        code = p.proc.returncode
        _kill(p.proc, signal.SIGKILL)  # like a container: the rest of its process group goes too
        code = 128 - code if code < 0 else code  # killed by signal N -> 128+N, as runtimes report
        terminated = {
            "exitCode": code, "reason": "Completed" if code == 0 else "Error",
            "message": self._termination_message(p), "startedAt": p.started_at, "finishedAt": now(),
        }  # fmt: skip
        p.proc = None
        policy = pod["spec"].get("restartPolicy", "Always")
        if policy == "Always" or (policy == "OnFailure" and code != 0):
            p.restart_count += 1
            p.last_state = {"terminated": terminated}
            delay = min(self.restart_backoff * 2 ** (p.restart_count - 1), 10 * self.restart_backoff)
            p.backoff_until = time.monotonic() + delay
            msg = f"back-off {delay:g}s restarting failed container"
            self._report(core, pod, p, "Running", {"waiting": {"reason": "CrashLoopBackOff", "message": msg}})
        else:
            p.done = True
            phase = "Succeeded" if code == 0 else "Failed"
            self._report(core, pod, p, phase, {"terminated": terminated})

    def _terminate(self, core: Any, pod: Obj, p: PodProcess) -> None:
        """Pod has a deletionTimestamp: SIGTERM, SIGKILL after the grace period, then remove the pod."""
        if p.deleted:
            return
        if p.proc is not None and p.proc.poll() is None:
            if p.kill_deadline is None:
                grace = pod["metadata"].get("deletionGracePeriodSeconds")
                p.kill_deadline = time.monotonic() + min(
                    float(30 if grace is None else grace), self.max_grace
                )
                _kill(p.proc, signal.SIGTERM)
            if time.monotonic() < p.kill_deadline:
                return
        if p.proc is not None:
            self._hard_kill(p)  # also whatever is left of its process group
        p.deleted = True
        opts = {"gracePeriodSeconds": 0, "preconditions": {"uid": p.uid}}
        try:
            core.delete_namespaced_pod(p.name, p.namespace, body=opts, _preload_content=False)
        except ApiException as e:
            if e.status not in (404, 409):
                p.deleted = False
                raise

    def _reap(self, proc: subprocess.Popen[bytes]) -> None:
        proc.wait()
        self._wake.set()

    def _hard_kill(self, p: PodProcess) -> None:
        assert p.proc is not None
        _kill(p.proc, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.proc.wait(timeout=10)
        if self.containers:
            # Killing `podman run` leaves its container running: remove it as the kubelet would.
            remove = [*podman(), "rm", "-f", "-t", "0", _container(p)]
            subprocess.run(remove, capture_output=True, check=False)

    def _termination_message(self, p: PodProcess) -> str:
        with contextlib.suppress(OSError):
            msg = p.message_path.read_bytes()[-4096:]
            if msg.strip():
                return msg.decode(errors="replace")
        with contextlib.suppress(OSError), open(p.log_path, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - 2048))
            return f.read().decode(errors="replace")
        return ""

    def _report(
        self, core: Any, pod: Obj, p: PodProcess, phase: str, state: Obj, ready: bool = False
    ) -> None:
        key = json.dumps([phase, state, ready, p.restart_count, p.last_state], sort_keys=True)
        if key == p.last_report:
            return
        status = pod_status(pod, p, phase, state, ready, "podman" if self.containers else "local-process")
        try:
            core.patch_namespaced_pod_status(
                p.name, p.namespace, {"status": status}, _content_type=MERGE, _preload_content=False
            )
        except ApiException as e:
            if e.status != 404:
                raise
        p.last_report = key
