"""Helpers of the failover tests: a source pair, a writer that follows the primary, manifests.

The pipeline's sink lives on the shared server (``mariadb`` fixture), which outlives every
source server a test kills; the pair's CDC account has the shared server's password, so one
Secret serves source and sink.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from binlog_support import assert_same_rows

from harness.mariadb import unique_name
from harness.runner import RunResult, SparkcdcProcess, load_checkpoint, run_sparkcdc
from sparkcdc.core.checkpoint import Checkpoint
from sparkcdc.testing.mariadb import MariaDBServer

TABLE = "items"


class Writer:
    """Inserts, updates and deletes rows of ``db.items`` on whichever server is the primary."""

    def __init__(self, server: MariaDBServer, db: str, first_id: int = 10_000, seed: int = 7) -> None:
        self.server, self.db = server, db
        self._next = first_id
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.operations = 0

    def step(self) -> None:
        with self._lock:
            choice = self._random.random()
            table = f"`{self.db}`.{TABLE}"
            if choice < 0.5:
                self._next += 1
                self.server.execute(f"INSERT INTO {table} VALUES ({self._next}, 0, 'w')")
            elif choice < 0.85:
                key = self._random.randrange(1, self._next)
                self.server.execute(f"UPDATE {table} SET v = v + 1, note = 'u' WHERE id = {key}")
            else:
                key = self._random.randrange(1, self._next)
                self.server.execute(f"DELETE FROM {table} WHERE id = {key}")
            self.operations += 1

    def write(self, count: int) -> None:
        for _ in range(count):
            self.step()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.step()
            time.sleep(0.005)

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def switch_to(self, server: MariaDBServer) -> None:
        with self._lock:
            self.server = server


def create_source(server: MariaDBServer, rows: int) -> str:
    db = unique_name("fo")
    server.execute(f"CREATE DATABASE `{db}`")
    server.execute(f"CREATE TABLE `{db}`.{TABLE} (id INT PRIMARY KEY, v INT NOT NULL, note VARCHAR(20))")
    for start in range(1, rows + 1, 500):
        values = ", ".join(f"({i}, {i % 7}, 'r{i}')" for i in range(start, min(start + 500, rows + 1)))
        server.execute(f"INSERT INTO `{db}`.{TABLE} VALUES {values}")
    return db


@dataclass
class FailoverCase:
    sink: MariaDBServer  # the shared server
    db: str
    work: Path
    sink_db: str = field(init=False)

    def __post_init__(self) -> None:
        self.sink_db = f"{self.db}_replica"
        self.work.mkdir(parents=True, exist_ok=True)

    @property
    def state_dir(self) -> Path:
        return self.work / "state"

    def manifest(self, source: MariaDBServer, file: str = "pipeline.yaml", **startup: Any) -> Path:
        """``sparkcdc run`` manifest reading ``db.items`` from ``source`` into the shared server."""
        secret = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "sparkcdc-test"},
            "stringData": {"password": self.sink.cdc_password},
        }
        ref = {"name": "sparkcdc-test", "key": "password"}
        pipeline = {
            "apiVersion": "sparkcdc.io/v1alpha1",
            "kind": "CdcPipeline",
            "metadata": {"name": "failover"},
            "spec": {
                "source": {
                    "host": source.host,
                    "port": source.port,
                    "user": "cdc",
                    "passwordSecretRef": ref,
                    "tables": [f"{self.db}.{TABLE}"],
                    "connectTimeoutSeconds": 3,
                    "tls": {"mode": "disabled"},
                },
                "startup": {"mode": "initial", **startup},
                "snapshot": {"chunkSize": 100, "parallelism": 1, "splitsPerTask": 1},
                "binlog": {"batchIntervalMs": 200, "heartbeatIntervalSeconds": 1},
                "sink": {
                    "type": "jdbc",
                    "url": f"mysql://{self.sink.host}:{self.sink.port}/{self.sink_db}",
                    "user": "cdc",
                    "passwordSecretRef": ref,
                },
            },
        }
        path = self.work / file
        path.write_text(yaml.safe_dump_all([secret, pipeline], sort_keys=False), encoding="utf-8")
        return path

    def run(self, manifest: Path, timeout: float = 240.0) -> RunResult:
        return run_sparkcdc(manifest, self.state_dir, self.work / "logs", timeout=timeout)

    def run_ok(self, manifest: Path) -> RunResult:
        result = self.run(manifest)
        assert result.returncode == 0, result.describe()
        return result

    def start(self, manifest: Path) -> SparkcdcProcess:
        return SparkcdcProcess(manifest, self.state_dir, self.work / "logs", exit_when_caught_up=False)

    def checkpoint(self) -> Checkpoint | None:
        return load_checkpoint(self.state_dir, "failover")

    def sink_rows(self) -> list[tuple[Any, ...]]:
        return self.sink.execute(f"SELECT * FROM `{self.sink_db}`.{TABLE}")

    def assert_sink_equals(self, source: MariaDBServer) -> None:
        rows = source.execute(f"SELECT * FROM `{self.db}`.{TABLE}")
        assert_same_rows(rows, self.sink_rows(), f"{source} -> sink")

    def cleanup(self) -> None:
        self.sink.execute(f"DROP DATABASE IF EXISTS `{self.sink_db}`")
