"""Helpers of the operator tests that run the real driver (``sparkcdc driver`` on Spark, in driver pods
of the spark image) against the ``mariadb`` fixture: the operator fixture, pipeline manifests, and
reading the checkpoint, the driver's log and its metrics."""

from __future__ import annotations

import contextlib
import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import pymysql
import pytest
from e2e_images import E2EImages
from operator_harness import Pipelines, RunningOperator, operator_running
from prometheus_client.parser import text_string_to_metric_families

from sparkcdc.core.checkpoint import Checkpoint, decode
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.kube.client import KubeClient
from sparkcdc.kube.status_store import read_checkpoint
from sparkcdc.spark.session import LOCAL_JVM_OPTIONS
from sparkcdc.testing.kube import ControlPlane, wait_until
from sparkcdc.testing.mariadb import MariaDBServer
from sparkcdc.testing.noderunner import NodeRunner

Obj = dict[str, Any]


@pytest.fixture(scope="module")
def real_operator(
    control_plane: ControlPlane,
    node_runner: NodeRunner,
    images: E2EImages,
    sparkcdc_crd: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[RunningOperator]:
    workdir = tmp_path_factory.mktemp("op")
    with operator_running(control_plane, node_runner, workdir, images.spark) as running:
        yield running


def real_spark(image: str) -> Obj:
    """``spec.spark`` of the tests' real drivers: the spark image (never pulled: the node has it),
    Spark in the driver pod (the operator's ``--spark-master local[2]``), and a JVM that starts
    quickly (C1 only, serial GC: what the product gives a local context's JVM)."""
    return {
        "image": image,
        "imagePullPolicy": "Never",
        "conf": {"spark.driver.extraJavaOptions": LOCAL_JVM_OPTIONS},
    }


def real_pipeline(
    name: str, mariadb: MariaDBServer, db: str, tables: list[str], image: str, **spec: Any
) -> Obj:
    """An ``initial`` pipeline from ``db`` into ``<db>_replica`` through the JDBC sink, its driver
    pods running ``image`` (``RunningOperator.driver_image``). Snapshot waves run on Spark unless
    ``spec`` says otherwise (as tests/conftest.py makes the suite's own runs do)."""
    ref = {"name": "mysql-cdc", "key": "password"}
    body: Obj = {
        "source": {
            "host": mariadb.host, "port": mariadb.port, "user": mariadb.cdc_user,
            "passwordSecretRef": ref, "tables": [f"{db}.{t}" for t in tables],
            "tls": {"mode": "disabled"},  # the test server offers no TLS
        },
        "startup": {"mode": "initial"},
        "snapshot": {"chunkSize": 50, "parallelism": 1, "splitsPerTask": 1},
        "binlog": {"batchIntervalMs": 300, "heartbeatIntervalSeconds": 1},
        "sink": {
            "type": "jdbc", "url": f"mysql://{mariadb.host}:{mariadb.port}/{db}_replica",
            "user": mariadb.cdc_user, "passwordSecretRef": ref,
        },
        "restartPolicy": {"initialBackoffSeconds": 1, "maxBackoffSeconds": 2, "maxRestarts": 100},
        "spark": real_spark(image),
    }  # fmt: skip
    body.update(spec)
    body["snapshot"] = {"readInDriver": "never", **body["snapshot"]}
    return {
        "apiVersion": "sparkcdc.io/v1alpha1",
        "kind": "CdcPipeline",
        "metadata": {"name": name},
        "spec": body,
    }


def table_rows(mariadb: MariaDBServer, db: str, table: str) -> list[tuple[Any, ...]]:
    return mariadb.execute(f"SELECT * FROM `{db}`.`{table}` ORDER BY 1")


def replica_equals(mariadb: MariaDBServer, db: str, table: str) -> bool:
    try:
        return table_rows(mariadb, db, table) == table_rows(mariadb, f"{db}_replica", table)
    except pymysql.err.ProgrammingError:  # the sink has not created the table yet
        return False


def checkpoint_of(cp: ControlPlane, core: Any, pipelines: Pipelines, name: str) -> Checkpoint | None:
    obj = pipelines.get(name) or {}
    document = read_checkpoint(KubeClient(cp.api_client()), obj) if obj else None
    return None if document is None else decode(document)


def wait_caught_up(
    op: RunningOperator, cp: ControlPlane, core: Any, pipelines: Pipelines, name: str,
    mariadb: MariaDBServer, timeout: float = 120,
) -> BinlogOffset:  # fmt: skip
    """Wait until the checkpointed binlog offset is at or past the source's current position."""
    file, pos = mariadb.binlog_position()
    target = BinlogOffset(file, pos)

    def reached() -> BinlogOffset | None:
        op.assert_alive()
        checkpoint = checkpoint_of(cp, core, pipelines, name)
        offset = checkpoint.binlog_offset if checkpoint else None
        return offset if offset is not None and offset >= target else None

    offset = wait_until(reached, timeout=timeout, every=0.5, what=f"checkpoint past {target}")
    assert offset is not None
    return offset


def epoch_of(pipelines: Pipelines, name: str) -> int:
    return int((pipelines.status(name).get("driver") or {}).get("epoch") or 0)


def driver_log(runner: NodeRunner, namespace: str, name: str, epoch: int) -> str:
    return runner.logs(namespace, f"{name}-driver-{epoch}")


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text: str = response.read().decode()
        return text


def metric(text: str, name: str, **labels: str) -> float | None:
    """The value of the series ``name{labels}`` in an exposition text (labels in any order)."""
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and sample.labels == labels:
                return float(sample.value)
    return None


def last_json_line(text: str) -> Obj:
    for line in reversed(text.splitlines()):
        with contextlib.suppress(ValueError):
            value = json.loads(line)
            if isinstance(value, dict):
                return value
    return {}
