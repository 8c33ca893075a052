"""Helpers of the operator tests that run the real driver (``sparkcdc driver`` on Spark) against the
``mariadb`` fixture: the operator fixture, pipeline manifests, a concurrent writer, killing a driver
pod like a container runtime does, and reading the checkpoint and the driver's log."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymysql
import pytest
from operator_harness import REAL_DRIVER, Pipelines, RunningOperator, operator_running
from prometheus_client.parser import text_string_to_metric_families

from sparkcdc.core.checkpoint import Checkpoint, decode
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.state.status_store import read_checkpoint
from sparkcdc.testing.kube import ControlPlane, wait_until
from sparkcdc.testing.mariadb import MariaDBServer
from sparkcdc.testing.noderunner import NodeRunner

Obj = dict[str, Any]


@pytest.fixture(scope="module")
def real_operator(
    control_plane: ControlPlane,
    node_runner: NodeRunner,
    sparkcdc_crd: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[RunningOperator]:
    with operator_running(control_plane, node_runner, tmp_path_factory.mktemp("op"), REAL_DRIVER) as running:
        yield running


def real_pipeline(name: str, mariadb: MariaDBServer, db: str, tables: list[str], **spec: Any) -> Obj:
    """An ``initial`` pipeline from ``db`` into ``<db>_replica`` through the JDBC sink."""
    ref = {"name": "mysql-cdc", "key": "password"}
    body: Obj = {
        "source": {
            "host": mariadb.host, "port": mariadb.port, "user": mariadb.cdc_user,
            "passwordSecretRef": ref, "tables": [f"{db}.{t}" for t in tables],
        },
        "startup": {"mode": "initial"},
        "snapshot": {"chunkSize": 50, "parallelism": 1, "splitsPerTask": 1},
        "binlog": {"batchIntervalMs": 300, "heartbeatIntervalSeconds": 1},
        "sink": {
            "type": "jdbc", "url": f"mysql://{mariadb.host}:{mariadb.port}/{db}_replica",
            "user": mariadb.cdc_user, "passwordSecretRef": ref,
        },
        "restartPolicy": {"initialBackoffSeconds": 1, "maxBackoffSeconds": 2, "maxRestarts": 100},
    }  # fmt: skip
    body.update(spec)
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
    document = read_checkpoint(core, obj) if obj else None
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


# -- killing a driver like a container runtime ---------------------------------------------------


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError, ValueError):
            stat = (entry / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def kill_tree(pid: int) -> None:
    """Freeze, then SIGKILL a process and all its descendants (the Spark JVM and the PySpark
    daemon, which leaves the process group): nothing of it can commit afterwards, as when a
    container's cgroup is killed."""
    tree, found, todo = _children(), [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(tree.get(current, []))
    for sig in (signal.SIGSTOP, signal.SIGKILL):
        for each in found:
            with contextlib.suppress(ProcessLookupError):
                os.kill(each, sig)


def process_env(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    return dict(item.split("=", 1) for item in raw.decode().split("\0") if "=" in item)


def last_json_line(text: str) -> Obj:
    for line in reversed(text.splitlines()):
        with contextlib.suppress(ValueError):
            value = json.loads(line)
            if isinstance(value, dict):
                return value
    return {}
