"""The real driver (``driver_main`` with the snapshot engine) run by the operator against a real
MariaDB: the replica equals the source, also when the driver pod is deleted mid-snapshot."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from e2e_images import E2EImages
from operator_harness import Pipelines, RunningOperator, create_driver_account, operator_running
from operator_realdriver import real_spark

from harness.mariadb import unique_name
from sparkcdc.testing.kube import ControlPlane, wait_until
from sparkcdc.testing.mariadb import MariaDBServer
from sparkcdc.testing.noderunner import NodeRunner

ROWS = 3000
SPARK_STARTED = "Using Spark's default log4j profile"  # the first line a starting JVM logs


@pytest.fixture(scope="module")
def engine_operator(
    control_plane: ControlPlane,
    node_runner: NodeRunner,
    images: E2EImages,
    sparkcdc_crd: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[RunningOperator]:
    workdir = tmp_path_factory.mktemp("op")
    with operator_running(control_plane, node_runner, workdir, images.spark) as running:
        yield running


@pytest.fixture
def source(mariadb: MariaDBServer) -> Iterator[str]:
    db = unique_name("op")
    mariadb.execute(f"CREATE DATABASE `{db}`")
    mariadb.execute(f"CREATE TABLE `{db}`.items (id INT PRIMARY KEY, name VARCHAR(40), price DECIMAL(10,2))")
    values = ",".join(f"({i}, 'item {i}', {i % 997}.25)" for i in range(1, ROWS + 1))
    mariadb.execute(f"INSERT INTO `{db}`.items VALUES {values}")
    try:
        yield db
    finally:
        mariadb.execute(f"DROP DATABASE IF EXISTS `{db}`")
        mariadb.execute(f"DROP DATABASE IF EXISTS `{db}_replica`")


def pipeline(
    name: str, mariadb: MariaDBServer, db: str, image: str, read_in_driver: str = "never"
) -> dict[str, Any]:
    """Snapshot waves on Spark (``never``: the suite's choice) unless ``read_in_driver`` says."""
    ref = {"name": "mysql-cdc", "key": "password"}
    return {
        "apiVersion": "sparkcdc.io/v1alpha1",
        "kind": "CdcPipeline",
        "metadata": {"name": name},
        "spec": {
            "source": {
                "host": mariadb.host, "port": mariadb.port, "user": mariadb.cdc_user,
                "passwordSecretRef": ref, "tables": [f"{db}.items"],
                "tls": {"mode": "disabled"},  # the test server offers no TLS
            },
            "startup": {"mode": "snapshot-only"},
            "snapshot": {
                "chunkSize": 100, "parallelism": 1, "splitsPerTask": 1, "readInDriver": read_in_driver,
            },
            "sink": {
                "type": "jdbc", "url": f"mysql://{mariadb.host}:{mariadb.port}/{db}_replica",
                "user": mariadb.cdc_user, "passwordSecretRef": ref,
            },
            "restartPolicy": {"initialBackoffSeconds": 1, "maxBackoffSeconds": 2},
            "spark": real_spark(image),
        },
    }  # fmt: skip


def assert_replica_equal(mariadb: MariaDBServer, db: str) -> None:
    source = mariadb.execute(f"SELECT id, name, price FROM `{db}`.items ORDER BY id")
    replica = mariadb.execute(f"SELECT id, name, price FROM `{db}_replica`.items ORDER BY id")
    assert len(source) == ROWS
    assert replica == source


def wait_completed(
    op: RunningOperator, pipelines: Pipelines, name: str, node_runner: NodeRunner
) -> dict[str, Any]:
    def completed() -> dict[str, Any]:
        op.assert_alive()
        status = pipelines.status(name)
        assert status.get("phase") != "Failed", status
        return status if status.get("phase") == "Completed" else {}

    try:
        result: dict[str, Any] = wait_until(completed, timeout=480, what="phase Completed")
        return result
    except TimeoutError:
        epoch = (pipelines.status(name).get("driver") or {}).get("epoch", 1)
        log = node_runner.logs(pipelines.namespace, f"{name}-driver-{epoch}")
        raise AssertionError(f"not Completed; driver log tail:\n{log[-4000:]}") from None


def test_snapshot_through_the_operator(
    engine_operator: RunningOperator, control_plane: ControlPlane, core: Any, namespace: str,
    mariadb: MariaDBServer, source: str, node_runner: NodeRunner,
) -> None:  # fmt: skip
    create_driver_account(control_plane, core, namespace, str(mariadb.cdc_password))
    pipelines = Pipelines(control_plane, namespace)
    pipelines.create(pipeline("snap", mariadb, source, engine_operator.driver_image))
    status = wait_completed(engine_operator, pipelines, "snap", node_runner)
    assert_replica_equal(mariadb, source)
    assert status["progress"]["splitsFinished"] == status["progress"]["splitsTotal"] > 1
    assert status["driver"]["epoch"] == 1
    # The waves ran on Spark (readInDriver: never): the driver started it.
    assert SPARK_STARTED in node_runner.logs(namespace, "snap-driver-1")


def test_a_small_snapshot_through_the_operator_never_starts_spark(
    engine_operator: RunningOperator, control_plane: ControlPlane, core: Any, namespace: str,
    mariadb: MariaDBServer, source: str, node_runner: NodeRunner,
) -> None:  # fmt: skip
    # The product's default (readInDriver: auto): the driver reads the waves itself while Spark is
    # not worth starting (engine/wave_runner.py), and its session is started on first use only
    # (driver/main.py), so on Kubernetes no executor pod is requested for it.
    create_driver_account(control_plane, core, namespace, str(mariadb.cdc_password))
    pipelines = Pipelines(control_plane, namespace)
    pipelines.create(pipeline("small", mariadb, source, engine_operator.driver_image, "auto"))
    status = wait_completed(engine_operator, pipelines, "small", node_runner)
    assert_replica_equal(mariadb, source)
    assert status["progress"]["splitsFinished"] == status["progress"]["splitsTotal"] > 1
    assert SPARK_STARTED not in node_runner.logs(namespace, "small-driver-1")


def test_driver_pod_deleted_mid_snapshot_resumes_without_loss(
    engine_operator: RunningOperator, control_plane: ControlPlane, core: Any, namespace: str,
    mariadb: MariaDBServer, source: str, node_runner: NodeRunner,
) -> None:  # fmt: skip
    create_driver_account(control_plane, core, namespace, str(mariadb.cdc_password))
    pipelines = Pipelines(control_plane, namespace)
    pipelines.create(pipeline("kill", mariadb, source, engine_operator.driver_image))

    def some_splits_done() -> bool:
        engine_operator.assert_alive()
        progress = pipelines.status("kill").get("progress") or {}
        return bool(0 < progress.get("splitsFinished", 0) < progress.get("splitsTotal", 0))

    wait_until(some_splits_done, timeout=300, every=0.05, what="a partly finished snapshot")
    core.delete_namespaced_pod("kill-driver-1", namespace, grace_period_seconds=0)
    status = wait_completed(engine_operator, pipelines, "kill", node_runner)
    assert status["driver"]["epoch"] == 2
    assert_replica_equal(mariadb, source)
