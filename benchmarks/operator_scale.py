"""The operator at scale: 200 CdcPipelines held with steady memory, a new one acted on quickly.

Starts its own control plane (etcd, kube-apiserver, kube-controller-manager from
``sparkcdc.testing.kube``) and a test node runner, then ``sparkcdc operator`` as a subprocess with
its production resync interval. The node runner runs the driver pods as host processes (not 200
containers) with a ``sparkcdc`` first on their PATH whose ``driver`` is ``sleep``, so that every
pipeline has a running driver pod and the figures are the operator's own, not 200 Spark drivers'.

1. creates ``--pipelines`` CdcPipelines and waits until each has its running driver pod and phase;
2. samples the operator's resident memory for ``--steady-seconds`` (at least two resyncs of every
   pipeline), and its CPU time;
3. creates ``--probes`` more pipelines, one at a time, and times each from the create call until
   the operator has created its driver pod.

Targets (issue 6): steady RSS under 200 MiB; reaction within 2 s. Prints the figures, writes them to
``benchmarks/results/operator_scale.json``, exits 1 when a target is missed.

    .venv/bin/python benchmarks/operator_scale.py [--pipelines 200] [--steady-seconds 70]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "operator"))

from kubernetes import client  # noqa: E402
from kubernetes.client.exceptions import ApiException  # noqa: E402

from sparkcdc.testing.kube import RESTRICTED, ControlPlane, ensure_binaries, free_port  # noqa: E402
from sparkcdc.testing.noderunner import NodeRunner  # noqa: E402

GROUP, VERSION, PLURAL = "sparkcdc.io", "v1alpha1", "cdcpipelines"
NAMESPACES = ("team-a", "team-b", "team-c", "team-d")
RSS_TARGET_MIB, REACTION_TARGET_S = 200.0, 2.0


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for {pid}")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait(predicate: Callable[[], Any], timeout: float, what: str, every: float = 0.5) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")


def pipeline(name: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "CdcPipeline",
        "metadata": {"name": name},
        "spec": {
            "source": {
                "host": "db.example", "user": "cdc", "tables": ["shop.orders"],
                "passwordSecretRef": {"name": "mysql-cdc", "key": "password"},
            },
            "sink": {"type": "console"},
        },
    }  # fmt: skip


def established(cp: ControlPlane) -> bool:
    """Polled: ``kubectl wait`` right after the apply fails while the CRD has no conditions yet."""
    out = cp.kubectl("get", "crd", "cdcpipelines.sparkcdc.io", "-o", "json", check=False)
    conditions = (json.loads(out.stdout).get("status") or {}).get("conditions") or [] if out.stdout else []
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)


class Cluster:
    def __init__(self, cp: ControlPlane) -> None:
        api = cp.api_client()
        self.core: Any = client.CoreV1Api(api)
        self.custom: Any = client.CustomObjectsApi(api)

    def prepare(self, namespace: str) -> None:
        self.core.create_namespace({"metadata": {"name": namespace, "labels": RESTRICTED}})
        wait(lambda: self._exists(self.core.read_namespaced_service_account, "default", namespace), 60, "SA")
        self.core.create_namespaced_service_account(namespace, {"metadata": {"name": "sparkcdc-driver"}})
        secret = {"metadata": {"name": "mysql-cdc"}, "stringData": {"password": "not-used"}}
        self.core.create_namespaced_secret(namespace, secret)

    def create(self, namespace: str, name: str) -> None:
        self.custom.create_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, pipeline(name), _preload_content=False
        )

    def running_pipelines(self) -> int:
        """Pipelines whose driver pod runs and whose status says so (phase set by the operator)."""
        response = self.custom.list_cluster_custom_object(GROUP, VERSION, PLURAL, _preload_content=False)
        items = json.loads(response.data)["items"]
        return sum(1 for i in items if (i.get("status") or {}).get("phase") == "Snapshotting")

    def pod_exists(self, namespace: str, name: str) -> bool:
        return self._exists(self.core.read_namespaced_pod, name, namespace)

    @staticmethod
    def _exists(read: Callable[..., Any], name: str, namespace: str) -> bool:
        try:
            read(name, namespace, _preload_content=False)
            return True
        except ApiException as err:
            if err.status == 404:
                return False
            raise


def start_operator(cp: ControlPlane, runner: NodeRunner, workdir: Path, args: argparse.Namespace) -> Any:
    env = cp.env()
    env.update({
        "SPARKCDC_SCHEDULER_NAME": str(runner.scheduler_name),
        "SPARKCDC_METRICS_PORT": str(free_port()),
        "SPARKCDC_RESYNC_SECONDS": str(args.resync_seconds),
        "PYTHONPATH": str(REPO / "operator"),
    })  # fmt: skip
    code = "from sparkcdc.controller.main import operator_main; raise SystemExit(operator_main())"
    log = (workdir / "operator.log").open("wb")
    return subprocess.Popen([sys.executable, "-c", code], env=env, stdout=log, stderr=subprocess.STDOUT)


def measure(cp: ControlPlane, runner: NodeRunner, workdir: Path, args: argparse.Namespace) -> dict[str, Any]:
    cluster = Cluster(cp)
    for namespace in NAMESPACES:
        cluster.prepare(namespace)
    cp.kubectl("apply", "--server-side", "-f", str(REPO / "crds" / "cdcpipelines.sparkcdc.io.yaml"))
    wait(lambda: established(cp), 60, "the CRD Established")
    proc = start_operator(cp, runner, workdir, args)
    try:
        time.sleep(3)
        baseline = rss_mib(proc.pid)
        started = time.monotonic()
        for i in range(args.pipelines):
            cluster.create(NAMESPACES[i % len(NAMESPACES)], f"p{i:03d}")
        created = time.monotonic() - started
        wait(lambda: cluster.running_pipelines() >= args.pipelines, 600, "every pipeline running", every=2)
        converged = time.monotonic() - started
        print(f"{args.pipelines} pipelines created in {created:.1f}s, all running after {converged:.1f}s")

        samples, cpu0, t0 = [], cpu_seconds(proc.pid), time.monotonic()
        while time.monotonic() - t0 < args.steady_seconds:
            assert proc.poll() is None, "the operator exited"
            samples.append(rss_mib(proc.pid))
            time.sleep(2)
        cpu = (cpu_seconds(proc.pid) - cpu0) / (time.monotonic() - t0)
        half = len(samples) // 2
        drift = statistics.mean(samples[half:]) - statistics.mean(samples[:half])
        print(f"steady RSS over {args.steady_seconds:.0f}s: min {min(samples):.1f} / max {max(samples):.1f} "
              f"MiB, second half vs first {drift:+.1f} MiB; CPU {cpu * 100:.1f}% of a core")  # fmt: skip

        reactions = []
        for i in range(args.probes):
            name = f"probe{i}"
            t = time.monotonic()
            cluster.create(NAMESPACES[0], name)
            pod = f"{name}-driver-1"
            wait(lambda: cluster.pod_exists(NAMESPACES[0], pod), 30, name, every=0.02)  # noqa: B023
            reactions.append(time.monotonic() - t)
            time.sleep(1)
        print("reaction to a new pipeline (create -> driver pod): "
              + ", ".join(f"{r:.2f}s" for r in reactions))  # fmt: skip
        return {
            "pipelines": args.pipelines,
            "create_seconds": round(created, 1),
            "converge_seconds": round(converged, 1),
            "rss_mib": {
                "before_pipelines": round(baseline, 1), "steady_min": round(min(samples), 1),
                "steady_max": round(max(samples), 1), "steady_drift": round(drift, 1),
                "after_probes": round(rss_mib(proc.pid), 1),
            },
            "cpu_fraction_steady": round(cpu, 3),
            "reaction_seconds": [round(r, 3) for r in reactions],
        }  # fmt: skip
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


def stand_in_env(workdir: Path) -> dict[str, str]:
    """The node's environment: a ``sparkcdc`` first on PATH whose ``driver`` (the driver pods'
    command) only sleeps."""
    bin_dir = workdir / "stand-in"
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "sparkcdc"
    script.write_text('#!/bin/sh\n[ "$1" = driver ] && exec sleep infinity\nexit 2\n')
    script.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pipelines", type=int, default=200)
    parser.add_argument("--steady-seconds", type=float, default=70.0)
    parser.add_argument("--resync-seconds", type=float, default=30.0)
    parser.add_argument("--probes", type=int, default=5)
    parser.add_argument("--no-results", action="store_true", help="do not write the results file")
    parser.add_argument("--keep", type=Path, help="keep the logs (operator.log, the control plane's) here")
    args = parser.parse_args(argv)
    bin_dir = ensure_binaries()
    with tempfile.TemporaryDirectory(prefix="sparkcdc-scale-") as tmp:
        workdir = args.keep or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        with (
            ControlPlane(workdir / "cp", bin_dir=bin_dir) as cp,
            NodeRunner(
                cp.kubeconfig_path, workdir=workdir / "node", containers=False, base_env=stand_in_env(workdir)
            ) as runner,
        ):
            results = measure(cp, runner, workdir, args)
    rss, worst = results["rss_mib"], max(results["reaction_seconds"])
    ok = max(rss["steady_max"], rss["after_probes"]) < RSS_TARGET_MIB and worst <= REACTION_TARGET_S
    results.update(
        targets={"rss_mib": RSS_TARGET_MIB, "reaction_seconds": REACTION_TARGET_S},
        ok=ok,
        machine={"cpus": os.cpu_count(), "python": platform.python_version(),
                 "load_average": [round(x, 2) for x in os.getloadavg()]},
    )  # fmt: skip
    peak = max(rss["steady_max"], rss["after_probes"])
    verdict = "OK" if ok else "MISSED"
    print(f"RSS max {peak:.1f} MiB (target < {RSS_TARGET_MIB:.0f}); slowest reaction {worst:.2f}s "
          f"(target <= {REACTION_TARGET_S:.0f}s): {verdict}")  # fmt: skip
    if not args.no_results:
        path = REPO / "benchmarks" / "results" / "operator_scale.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(results, indent=2) + "\n")
        print(f"results: {path.relative_to(REPO)}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
