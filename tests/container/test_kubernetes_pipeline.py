"""The README's pipeline on Kubernetes with every pod a container of the images ``make images`` builds.

The chart installs the operator (its image, restricted Pod Security Standard enforced in every
namespace); ``kubectl apply`` of the README's CdcPipeline makes the operator start the driver
container, whose Spark (the default in-cluster ``k8s://`` master) starts two executor pods from the
spark image under the pipeline's own service account. The snapshot runs on the executors while a
writer changes the source; an executor pod and then the driver pod are deleted mid-snapshot, the
driver again mid-stream; afterwards the replica equals the source, the old epochs' executors were
garbage-collected, and no container's log holds the password. An executor started without the
pipeline's Spark key cannot join the application.

The pods are deleted while the test holds a write lock on the source table, so the splits in
flight wait for it (reading is all they do there: a lock-free snapshot takes no lock of its own,
and the database holds the reads of a dead executor's connection back until it drops them). The
snapshot is mid-way for as long as the kills take, however loaded the machine, with a table a
few hundred splits smaller than a snapshot that had to outlast them by its length alone.
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.mariadb import unique_name
from harness.source_tables import Writer, create_table
from sparkcdc.core.checkpoint import decode
from sparkcdc.kube.client import KubeClient
from sparkcdc.kube.status_store import read_checkpoint
from sparkcdc.spark.session import LOCAL_JVM_OPTIONS
from sparkcdc.testing.containers import LIMITS, Images, podman
from sparkcdc.testing.kube import REPO_ROOT, ControlPlane, ensure_binaries, free_port, wait_until
from sparkcdc.testing.mariadb import MariaDBServer
from sparkcdc.testing.noderunner import NodeRunner

Obj = dict[str, Any]
CHART = REPO_ROOT / "charts" / "sparkcdc"
OPERATOR_NS, PIPELINE_NS, PIPELINE = "sparkcdc-system", "shop", "shop-replica"
EXECUTOR = f"app.kubernetes.io/component=executor,sparkcdc.io/pipeline={PIPELINE}"
DRIVER = f"app.kubernetes.io/component=driver,sparkcdc.io/pipeline={PIPELINE}"
ROWS = 40_000

# 490-660 s here beside the other lanes; 1,181 s once on CI's slower machine.
pytestmark = pytest.mark.timeout(2400)


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ControlPlane, NodeRunner]]:
    """A control plane whose one node runs every pod as a container; the node is also the
    cluster's (default) scheduler, as there is no kube-scheduler."""
    with ControlPlane(tmp_path_factory.mktemp("controlplane"), bin_dir=ensure_binaries()) as cp:
        workdir = tmp_path_factory.mktemp("node")
        with NodeRunner(
            cp.kubeconfig_path, workdir=workdir, containers=True, scheduler_name="default-scheduler"
        ) as runner:
            yield cp, runner


def kubectl(cp: ControlPlane, *args: str, stdin: str | None = None) -> str:
    res = subprocess.run(
        ["kubectl", *args], env=cp.env(), input=stdin, capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0, f"kubectl {' '.join(args)}: {res.stderr}"
    return res.stdout


def get(cp: ControlPlane, *args: str) -> Any:
    return json.loads(kubectl(cp, "get", *args, "-o", "json"))


def pods(cp: ControlPlane, selector: str, namespace: str = PIPELINE_NS) -> list[Obj]:
    items: list[Obj] = get(cp, "pods", "-n", namespace, "-l", selector)["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def running(cp: ControlPlane, selector: str, namespace: str = PIPELINE_NS) -> list[str]:
    found = pods(cp, selector, namespace)
    return sorted(p["metadata"]["name"] for p in found if p["status"].get("phase") == "Running")


def install_operator(cp: ControlPlane, images: Images) -> None:
    for ns in (OPERATOR_NS, PIPELINE_NS):
        kubectl(cp, "create", "namespace", ns)
        kubectl(cp, "label", "namespace", ns, "pod-security.kubernetes.io/enforce=restricted")
        wait_until(lambda ns=ns: get(cp, "serviceaccount", "default", "-n", ns), 60, "default SA")
    repository, tag = images.operator.rsplit(":", 1)
    values = {
        "image": {"repository": repository, "tag": tag, "pullPolicy": "Never"},
        "driver": {"namespaces": [PIPELINE_NS], "metricsPort": free_port()},
        "metrics": {"port": free_port()},
        "health": {"port": free_port()},
    }
    values_file = Path(cp.base_dir) / "values.yaml"
    values_file.write_text(yaml.safe_dump(values))
    res = subprocess.run(
        ["helm", "install", "sparkcdc", str(CHART), "-n", OPERATOR_NS, "-f", str(values_file)],
        env=cp.env(), capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr


def readme_pipeline(mariadb: MariaDBServer, db: str, images: Images) -> str:
    """The README's Secret and CdcPipeline, pointed at the test's database."""
    text = (REPO_ROOT / "README.md").read_text()
    block = next(b for b in re.findall(r"```yaml\n(.*?)```", text, re.S) if "kind: CdcPipeline" in b)
    secret, pipeline = [d for d in yaml.safe_load_all(block) if d]
    assert secret["kind"] == "Secret" and pipeline["metadata"]["name"] == PIPELINE
    secret["stringData"]["password"] = mariadb.cdc_password
    spec = pipeline["spec"]
    source = {"host": mariadb.host, "port": mariadb.port, "user": mariadb.cdc_user}
    source["tables"] = [f"{db}.orders"]
    source["tls"] = {"mode": "disabled"}  # the README's CA Secret is the user's; this server has no TLS
    spec["source"].update(source)
    spec["sink"].update(url=f"mysql://{mariadb.host}:{mariadb.port}/{db}_replica", user=mariadb.cdc_user)
    # Small splits on the executors from the start: some commit before the test's table lock,
    # the rest wait for it (see the module docstring).
    spec["snapshot"].update(chunkSize=400, parallelism=2, splitsPerTask=1, readInDriver="never")
    # JVMs that live minutes, not days: the C1 compiler alone and the serial collector, as the
    # product gives a local context's JVM, spend less of a shared test machine's CPU.
    jvm = {f"spark.{role}.extraJavaOptions": LOCAL_JVM_OPTIONS for role in ("driver", "executor")}
    spec["spark"] = {"image": images.spark, "imagePullPolicy": "Never", "conf": jvm}
    spec["restartPolicy"] = {"initialBackoffSeconds": 1, "maxBackoffSeconds": 2}
    return yaml.safe_dump_all([secret, pipeline])


def status(cp: ControlPlane) -> Obj:
    return dict(get(cp, "cdcpipeline", PIPELINE, "-n", PIPELINE_NS).get("status") or {})


def epoch(cp: ControlPlane) -> int:
    return int((status(cp).get("driver") or {}).get("epoch") or 0)


def splits_finished(cp: ControlPlane) -> int:
    return int((status(cp).get("progress") or {}).get("splitsFinished") or 0)


def snapshot_done(cp: ControlPlane) -> bool:
    obj = get(cp, "cdcpipeline", PIPELINE, "-n", PIPELINE_NS)
    document = read_checkpoint(KubeClient(cp.api_client()), obj)
    return document is not None and decode(document).snapshot_done


def executors_up(cp: ControlPlane, runner: NodeRunner, count: int = 2) -> list[str]:
    """Running executor pods whose JVM registered with the driver."""
    names = running(cp, EXECUTOR)
    joined = [n for n in names if "Successfully registered with driver" in runner.logs(PIPELINE_NS, n)]
    return joined if len(joined) >= count else []


def test_the_readme_pipeline_runs_on_executor_pods_and_survives_their_loss(
    images: Images, kube: tuple[ControlPlane, NodeRunner], mariadb: MariaDBServer
) -> None:
    cp, runner = kube
    install_operator(cp, images)
    wait_until(lambda: running(cp, "app.kubernetes.io/component=operator", OPERATOR_NS), 240, "operator")
    db = unique_name("k8s")
    mariadb.execute(f"CREATE DATABASE `{db}`")
    create_table(mariadb, db, "orders", ROWS)
    writer = Writer(mariadb, db, "orders", ROWS, seed=16)
    writer.start()
    kubectl(cp, "apply", "-n", PIPELINE_NS, "-f", "-", stdin=readme_pipeline(mariadb, db, images))

    # Two executors join the first driver; one is deleted while splits are read.
    first = wait_until(lambda: executors_up(cp, runner), 420, "two executors registered with the driver")
    wait_until(lambda: splits_finished(cp) > 0, 300, "splits committed by the first driver", every=0.05)
    with splits_held(mariadb, db):
        assert_executor_pods(cp, mariadb.cdc_password or "")
        assert not snapshot_done(cp), "the snapshot ended before an executor could be deleted"
        kubectl(cp, "delete", "pod", "-n", PIPELINE_NS, first[0], "--wait=false")
        wait_until(lambda: set(executors_up(cp, runner)) - set(first), 300, "a replacement executor")

        # The driver is deleted mid-snapshot: its executors go with it, a new epoch resumes.
        assert not snapshot_done(cp), "the snapshot ended before the driver could be deleted"
        old_epoch, old_executors = epoch(cp), set(running(cp, EXECUTOR))
        kubectl(cp, "delete", "pod", "-n", PIPELINE_NS, "-l", DRIVER, "--wait=false")
        wait_until(lambda: not set(running(cp, EXECUTOR)) & old_executors, 180, "old executors collected")
        wait_until(lambda: epoch(cp) > old_epoch, 180, "a new driver epoch")
        wait_until(lambda: executors_up(cp, runner), 420, "the new driver's executors")
        assert_intruders_refused(cp, runner, images)
        assert 0 < splits_finished(cp) < int(status(cp)["progress"]["splitsTotal"])

    # Mid-stream: the snapshot finishes, then the driver is deleted once more.
    wait_until(lambda: snapshot_done(cp) and status(cp).get("phase") == "Streaming", 900, "streaming")
    streaming_epoch, streaming_executors = epoch(cp), set(running(cp, EXECUTOR))
    assert streaming_executors, "the driver that finished the snapshot keeps its executors"
    kubectl(cp, "delete", "pod", "-n", PIPELINE_NS, "-l", DRIVER, "--wait=false")
    wait_until(lambda: epoch(cp) > streaming_epoch, 180, "a new driver epoch while streaming")
    # Its executors go with it; the new driver streams without Spark, so it starts none.
    wait_until(lambda: not set(running(cp, EXECUTOR)) & streaming_executors, 180, "executors collected")

    time.sleep(3)
    writer.stop()
    wait_until(lambda: replica_equals(mariadb, db), 300, "the replica to equal the source", every=2)
    assert writer.ops["delete"] and writer.ops["rekey"], writer.ops
    assert_no_password_in_logs(runner, mariadb.cdc_password or "")
    assert_no_password_in_objects(cp, mariadb.cdc_password or "")


@contextmanager
def splits_held(mariadb: MariaDBServer, db: str) -> Iterator[None]:
    """The source table write-locked: split reads (and the writer) wait until the block ends."""
    conn = mariadb.root_connection()
    try:
        with conn.cursor() as cur:
            cur.execute(f"LOCK TABLES `{db}`.`orders` WRITE")
        yield
        with conn.cursor() as cur:
            cur.execute("UNLOCK TABLES")
    finally:
        conn.close()


def replica_equals(mariadb: MariaDBServer, db: str) -> bool:
    source = mariadb.execute(f"SELECT * FROM `{db}`.`orders` ORDER BY id")
    try:
        return source == mariadb.execute(f"SELECT * FROM `{db}_replica`.`orders` ORDER BY id")
    except Exception:
        return False


def assert_executor_pods(cp: ControlPlane, password: str) -> None:
    """Executors run as the pipeline's account without an API token, owned by the driver pod, with
    its labels; the database password only by secretKeyRef and the Spark key only as a file."""
    (driver,) = [p for p in pods(cp, DRIVER) if p["status"].get("phase") == "Running"]
    key = base64.b64decode(
        get(cp, "secret", f"{PIPELINE}-sparkcdc-spark-auth", "-n", PIPELINE_NS)["data"]["spark-auth-key"]
    )
    for pod in pods(cp, EXECUTOR):
        spec, text = pod["spec"], json.dumps(pod)
        assert spec["serviceAccountName"] == f"{PIPELINE}-sparkcdc-driver"
        assert spec["automountServiceAccountToken"] is False
        (owner,) = pod["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["name"]) == ("Pod", driver["metadata"]["name"])
        env = {e["name"]: e for e in spec["containers"][0]["env"]}
        refs = [
            e["valueFrom"]["secretKeyRef"] for e in env.values() if "secretKeyRef" in e.get("valueFrom", {})
        ]
        assert any((r["name"], r["key"]) == ("mysql-cdc", "password") for r in refs), refs
        assert "_SPARK_AUTH_SECRET" not in env
        assert password not in text and base64.b64encode(key).decode() not in text


def assert_no_password_in_logs(runner: NodeRunner, password: str) -> None:
    files = runner.workdir.glob("*/container.log")
    logs = {log.parent.name: log.read_text(errors="replace") for log in files}
    assert password and any("-exec-" in name for name in logs) and any("_sparkcdc-" in name for name in logs)
    leaked = [name for name, text in logs.items() if password in text]
    assert not leaked, f"the password is in the logs of {leaked}"


def assert_no_password_in_objects(cp: ControlPlane, password: str) -> None:
    """Status, events and ConfigMaps of every namespace, and the pods: the password in none."""
    kinds = ("cdcpipelines", "events", "configmaps", "pods")
    leaked = [kind for kind in kinds if password in json.dumps(get(cp, kind, "--all-namespaces"))]
    assert not leaked, f"the password is in {leaked}"


def assert_intruders_refused(cp: ControlPlane, runner: NodeRunner, images: Images) -> None:
    """Executor JVMs pointed at the live driver without the pipeline's key, and with a wrong one,
    cannot fetch the application's settings, so never register: the driver refuses both."""
    (driver,) = [p for p in pods(cp, DRIVER) if p["status"].get("phase") == "Running"]
    driver_ip, driver_name = driver["status"]["podIP"], driver["metadata"]["name"]
    refusals = {
        "no-key": ([], "Expected SaslMessage, received something else"),
        "wrong-key": (
            ["-Dspark.authenticate=true", "-Dspark.authenticate.secret=not-the-key"],
            "Mismatched response",
        ),
    }
    for name, (java_opts, refusal) in refusals.items():
        before = runner.logs(PIPELINE_NS, driver_name).count(refusal)
        log = intruder(images, driver_ip, f"intruder-{name}-{uuid.uuid4().hex[:6]}", java_opts)
        assert "Successfully registered with driver" not in log, log
        assert runner.logs(PIPELINE_NS, driver_name).count(refusal) > before, (name, log[-2000:])


def intruder(images: Images, driver_ip: str, name: str, java_opts: list[str]) -> str:
    env = {
        "SPARK_DRIVER_URL": f"spark://CoarseGrainedScheduler@{driver_ip}:7078",
        "SPARK_EXECUTOR_ID": "99", "SPARK_EXECUTOR_CORES": "1", "SPARK_EXECUTOR_MEMORY": "512m",
        "SPARK_APPLICATION_ID": "spark-intruder", "SPARK_EXECUTOR_POD_IP": "127.1.250.250",
        "SPARK_RESOURCE_PROFILE_ID": "0", "SPARK_EXECUTOR_POD_NAME": name,
        **{f"SPARK_JAVA_OPT_{i}": opt for i, opt in enumerate(java_opts)},
    }  # fmt: skip
    args = [*podman(), "run", "--rm", "--pull=never", "--network", "host", *LIMITS, "--name", name]
    for key, value in env.items():
        args += ["--env", f"{key}={value}"]
    res = subprocess.run([*args, images.spark, "executor"], capture_output=True, text=True, timeout=180)
    assert res.returncode != 0, res.stdout + res.stderr
    return res.stdout + res.stderr
