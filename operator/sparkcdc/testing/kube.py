"""A real Kubernetes control plane on loopback for tests: etcd, kube-apiserver, kube-controller-manager.

Binaries come from ``hack/k8s-bin.sh`` (built from Go modules, cached under ``.cache/k8s-bin``). The control
plane has its own CA, serving cert, service-account key pair and an admin (``system:masters``) kubeconfig;
RBAC is on. There is no kubelet: see :mod:`sparkcdc.testing.noderunner` for running pods.

From pytest::

    with ControlPlane(tmp_path) as cp:
        core = kubernetes.client.CoreV1Api(cp.api_client())
        cp.kubectl("get", "ns")

From a shell::

    python -m sparkcdc.testing.kube up      # prints `export KUBECONFIG=...`
    eval "$(python -m sparkcdc.testing.kube env)"
    python -m sparkcdc.testing.kube down
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from sparkcdc.testing.pki import make_pki, write_kubeconfig

REPO_ROOT = Path(__file__).resolve().parents[3]
K8S_BIN_SCRIPT = REPO_ROOT / "hack" / "k8s-bin.sh"
DEFAULT_DIR = REPO_ROOT / ".cache" / "controlplane"
SERVICE_CIDR = "10.0.0.0/24"
T = TypeVar("T")
ISSUER = "https://kubernetes.default.svc.cluster.local"
# Controllers a kubelet-less, cloud-less, storage-less test cluster does not want. Notably nodelifecycle:
# it would taint the test node unreachable and evict its pods; the node runner does not send heartbeats.
DISABLED_CONTROLLERS = (
    "node-ipam", "node-lifecycle", "taint-eviction", "device-taint-eviction", "cloud-node-lifecycle",
    "node-route", "service-lb", "certificatesigningrequest-signing", "certificatesigningrequest-approving",
    "certificatesigningrequest-cleaner", "persistentvolume-attach-detach", "persistentvolume-binder",
    "persistentvolume-expander", "ephemeral-volume", "ttl", "horizontal-pod-autoscaler",
    "storage-version-migrator", "kube-apiserver-serving-clustertrustbundle-publisher",
)  # fmt: skip


def ensure_binaries() -> Path:
    """The directory with kube-apiserver, kube-controller-manager, kubectl, etcd and helm.

    ``$SPARKCDC_K8S_BIN_DIR`` wins; otherwise ``hack/k8s-bin.sh`` reuses or builds them (a cold build
    takes a while, a warm call returns at once).
    """
    override = os.environ.get("SPARKCDC_K8S_BIN_DIR")
    if override:
        return Path(override)
    if not K8S_BIN_SCRIPT.exists():
        raise RuntimeError(f"{K8S_BIN_SCRIPT} not found; set SPARKCDC_K8S_BIN_DIR to prebuilt binaries")
    out = subprocess.run(
        ["bash", str(K8S_BIN_SCRIPT)], stdout=subprocess.PIPE, stderr=None, text=True, check=True
    )
    return Path(out.stdout.strip().splitlines()[-1])


def wait_until(
    check: Callable[[], T], timeout: float = 30.0, what: str = "condition", every: float = 0.1
) -> T:
    """Poll ``check`` until it returns something truthy (returned); exceptions count as "not yet"."""
    deadline, last = time.monotonic() + timeout, None
    while True:
        try:
            result = check()
            if result:
                return result
        except Exception as e:
            last = e
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:g}s waiting for {what} (last error: {last!r})")
        time.sleep(every)


# PodSecurity admission (on by default) refuses any pod of such a namespace that is not restricted.
RESTRICTED = {"pod-security.kubernetes.io/enforce": "restricted"}


def create_namespace(core: Any, name: str) -> str:
    """Namespace ``name`` enforcing the ``restricted`` Pod Security Standard, once its ``default``
    ServiceAccount exists (pods are refused until the service-account controller has made it)."""
    core.create_namespace({"metadata": {"name": name, "labels": RESTRICTED}})
    wait_until(lambda: core.read_namespaced_service_account("default", name), what=f"{name}'s default SA")
    return name


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def set_pdeathsig() -> None:
    """preexec_fn: SIGKILL this child when the thread that started it dies (a crashed pytest)."""
    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)


def kill_group(pid: int, timeout: float = 10.0) -> None:
    """SIGTERM the process group led by ``pid``, SIGKILL it if still alive after ``timeout``."""
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            with contextlib.suppress(ChildProcessError):  # reap our own child, or it stays a zombie
                if os.waitpid(pid, os.WNOHANG)[0] == pid:
                    return
            try:
                os.killpg(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.05)


class ControlPlane:
    """etcd + kube-apiserver + kube-controller-manager under ``base_dir`` on free loopback ports."""

    def __init__(self, base_dir: Path | str, *, bin_dir: Path | None = None, die_with_parent: bool = True):
        self.base_dir = Path(base_dir).resolve()
        self.bin_dir = bin_dir
        self.die_with_parent = die_with_parent
        self.pki = self.base_dir / "pki"
        self.logs = self.base_dir / "logs"
        self.kubeconfig_path = self.base_dir / "kubeconfig"
        self.state_path = self.base_dir / "state.json"
        self.server = ""
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self, timeout: float = 120.0) -> ControlPlane:
        if self.bin_dir is None:
            self.bin_dir = ensure_binaries()
        self.base_dir.mkdir(parents=True, exist_ok=True)
        self.logs.mkdir(exist_ok=True)
        make_pki(self.pki)
        deadline = time.monotonic() + timeout
        for attempt in range(3):  # a "free" port can be taken before the component binds it
            try:
                self._start_etcd(deadline)
                self._start_apiserver(deadline)
                self._start_controller_manager(deadline)
                return self
            except BaseException as e:
                self.stop()
                if attempt == 2 or "address already in use" not in str(e):
                    raise
                shutil.rmtree(self.base_dir / "etcd", ignore_errors=True)
        raise AssertionError("unreachable")

    def stop(self) -> None:
        for name in ("kube-controller-manager", "kube-apiserver", "etcd"):
            proc = self.procs.pop(name, None)
            if proc is not None:
                kill_group(proc.pid)
                proc.wait()
        with contextlib.suppress(FileNotFoundError):
            self.state_path.unlink()

    def __enter__(self) -> ControlPlane:
        return self.start()

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -- clients -----------------------------------------------------------------------------------
    def api_client(self) -> Any:
        """A fresh ``kubernetes.client.ApiClient`` with admin credentials."""
        from kubernetes import config

        return config.new_client_from_config(config_file=str(self.kubeconfig_path))  # type: ignore[no-untyped-call]

    def env(self) -> dict[str, str]:
        """Environment for subprocesses: KUBECONFIG, and kubectl/helm first on PATH."""
        path = f"{self.bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
        return {**os.environ, "KUBECONFIG": str(self.kubeconfig_path), "PATH": path}

    def kubectl(
        self, *args: str, check: bool = True, input: str | None = None, timeout: float = 60.0
    ) -> subprocess.CompletedProcess[str]:
        """Run kubectl against this cluster; ``check`` raises with kubectl's stderr on failure."""
        cmd = [str(self._bin("kubectl")), "--kubeconfig", str(self.kubeconfig_path), *args]
        res = subprocess.run(cmd, input=input, capture_output=True, text=True, timeout=timeout)
        if check and res.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)} failed ({res.returncode}): {res.stderr.strip()}")
        return res

    # -- internals ---------------------------------------------------------------------------------
    def _bin(self, name: str) -> Path:
        assert self.bin_dir is not None, "start() first"
        return self.bin_dir / name

    def _spawn(self, name: str, args: list[str]) -> None:
        log = open(self.logs / f"{name}.log", "ab")  # noqa: SIM115 - handed to the child
        proc = subprocess.Popen(
            [str(self._bin(name)), *args], stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True, preexec_fn=set_pdeathsig if self.die_with_parent else None,
        )  # fmt: skip
        log.close()
        self.procs[name] = proc
        self._save_state()

    def _save_state(self) -> None:
        state = {
            "pids": {n: p.pid for n, p in self.procs.items()},
            "server": self.server,
            "kubeconfig": str(self.kubeconfig_path),
            "bin_dir": str(self.bin_dir),
        }
        self.state_path.write_text(json.dumps(state, indent=2))

    def _alive(self, name: str) -> None:
        if self.procs[name].poll() is None:
            return
        tail = (self.logs / f"{name}.log").read_text(errors="replace")[-3000:]
        del self.procs[name]
        raise RuntimeError(f"{name} exited during startup; log tail:\n{tail}")

    def _wait(self, name: str, deadline: float, ready: Any) -> None:
        while time.monotonic() < deadline:
            self._alive(name)
            with contextlib.suppress(Exception):
                if ready():
                    return
            time.sleep(0.2)
        tail = (self.logs / f"{name}.log").read_text(errors="replace")[-3000:]
        raise TimeoutError(f"{name} not ready in time; log tail:\n{tail}")

    def _start_etcd(self, deadline: float) -> None:
        client, peer = free_port(), free_port()
        curl, purl = f"http://127.0.0.1:{client}", f"http://127.0.0.1:{peer}"
        self.etcd_url = curl
        self._spawn("etcd", [
            "--name=test", f"--data-dir={self.base_dir / 'etcd'}", f"--listen-client-urls={curl}",
            f"--advertise-client-urls={curl}", f"--listen-peer-urls={purl}",
            f"--initial-advertise-peer-urls={purl}", f"--initial-cluster=test={purl}",
            "--unsafe-no-fsync", "--log-level=warn", "--quota-backend-bytes=2147483648",
        ])  # fmt: skip

        def ready() -> bool:
            with urllib.request.urlopen(f"{curl}/health", timeout=2) as r:
                return bool(json.load(r).get("health") == "true")

        self._wait("etcd", deadline, ready)

    def _start_apiserver(self, deadline: float) -> None:
        port = free_port()
        self.server = f"https://127.0.0.1:{port}"
        p = self.pki
        self._spawn("kube-apiserver", [
            f"--etcd-servers={self.etcd_url}", "--bind-address=127.0.0.1", f"--secure-port={port}",
            "--advertise-address=127.0.0.1", "--endpoint-reconciler-type=none",
            f"--cert-dir={p}", f"--tls-cert-file={p / 'apiserver.crt'}",
            f"--tls-private-key-file={p / 'apiserver.key'}", f"--client-ca-file={p / 'ca.crt'}",
            "--authorization-mode=Node,RBAC", f"--service-account-issuer={ISSUER}",
            f"--service-account-key-file={p / 'sa.pub'}",
            f"--service-account-signing-key-file={p / 'sa.key'}",
            f"--service-cluster-ip-range={SERVICE_CIDR}", "--allow-privileged=true", "--profiling=false",
            "--enable-priority-and-fairness=false", "--v=1",
        ])  # fmt: skip
        write_kubeconfig(
            self.kubeconfig_path, self.server, p / "ca.crt", p / "admin.crt", p / "admin.key", "admin"
        )
        self._save_state()
        ctx = ssl.create_default_context(cafile=str(p / "ca.crt"))
        ctx.load_cert_chain(str(p / "admin.crt"), str(p / "admin.key"))

        def ready() -> bool:
            with urllib.request.urlopen(f"{self.server}/readyz", context=ctx, timeout=5) as r:
                return bool(r.status == 200)

        self._wait("kube-apiserver", deadline, ready)

    def _start_controller_manager(self, deadline: float) -> None:
        p = self.pki
        kubeconfig = self.base_dir / "controller-manager.kubeconfig"
        write_kubeconfig(
            kubeconfig, self.server, p / "ca.crt", p / "controller-manager.crt",
            p / "controller-manager.key", "system:kube-controller-manager",
        )  # fmt: skip
        disabled = ",".join(f"-{c}-controller" for c in DISABLED_CONTROLLERS)
        self._spawn("kube-controller-manager", [
            f"--kubeconfig={kubeconfig}", f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}", "--secure-port=0", "--leader-elect=false",
            "--use-service-account-credentials=true", f"--controllers=*,{disabled}",
            f"--service-account-private-key-file={p / 'sa.key'}", f"--root-ca-file={p / 'ca.crt'}",
            f"--service-cluster-ip-range={SERVICE_CIDR}", "--v=1",
        ])  # fmt: skip
        # Ready once the serviceaccount controller made `default` (pods are refused without it).
        self._wait("kube-controller-manager", deadline, lambda: self.kubectl(
            "get", "serviceaccount", "default", "-n", "default", timeout=10).returncode == 0)  # fmt: skip


def _load_state(base: Path) -> dict[str, Any] | None:
    try:
        state: dict[str, Any] = json.loads((base / "state.json").read_text())
    except FileNotFoundError:
        return None
    return state


def _env_lines(state: dict[str, Any]) -> str:
    return f"export KUBECONFIG={state['kubeconfig']}\nexport PATH={state['bin_dir']}:$PATH\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m sparkcdc.testing.kube", description=__doc__.split("\n")[0])
    ap.add_argument("command", choices=["up", "down", "env"])
    ap.add_argument("--dir", type=Path, default=Path(os.environ.get("SPARKCDC_KUBE_DIR", DEFAULT_DIR)))
    ns = ap.parse_args(argv)
    base: Path = ns.dir.resolve()
    state = _load_state(base)
    if ns.command == "up":
        if state is not None:
            print(f"# control plane already up in {base} ({state['server']})", file=sys.stderr)
        else:
            shutil.rmtree(base, ignore_errors=True)
            t0 = time.monotonic()
            cp = ControlPlane(base, die_with_parent=False).start()
            print(f"# control plane up at {cp.server} in {time.monotonic() - t0:.1f}s", file=sys.stderr)
            state = _load_state(base)
        assert state is not None
        sys.stdout.write(_env_lines(state))
    elif ns.command == "env":
        if state is None:
            print(f"no control plane in {base}; run `up` first", file=sys.stderr)
            return 1
        sys.stdout.write(_env_lines(state))
    else:
        if state is None:
            print(f"no control plane in {base}", file=sys.stderr)
            return 0
        for name in ("kube-controller-manager", "kube-apiserver", "etcd"):
            if name in state["pids"]:
                kill_group(int(state["pids"][name]))
        shutil.rmtree(base, ignore_errors=True)
        print(f"# control plane in {base} stopped", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
