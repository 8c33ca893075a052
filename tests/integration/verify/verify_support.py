"""Helpers for the verification tests: a source database with its replica, manifests, running a
pipeline's snapshot in process, and verifying.

The ``replica`` fixture (conftest.py) gives each test a ``Replica``: a fresh source database on
the shared MariaDB, a MariaDB sink database ``<source>_replica`` on the same server and, with
``use_postgres``, a PostgreSQL sink database.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console

from sparkcdc.api.manifest import load_manifests
from sparkcdc.driver.local import runtimes_of
from sparkcdc.driver.verify_local import verify_local
from sparkcdc.engine.enumerator import SplitEnumerator
from sparkcdc.engine.listener import PipelineListener
from sparkcdc.state.file_store import FileCheckpointStore
from sparkcdc.testing.mariadb import MariaDBServer
from sparkcdc.testing.postgres import PostgresServer
from sparkcdc.verify.recheck import RecheckSettings
from sparkcdc.verify.report import ChunkDiff, PipelineReport, TableReport
from sparkcdc.verify.runner import VerifyOptions

Row = tuple[Any, ...]


@dataclass
class Replica:
    server: MariaDBServer
    db: str
    sink_db: str
    work: Path
    pg_server: PostgresServer | None = None
    pg_db: str | None = None

    @property
    def state_dir(self) -> Path:
        return self.work / "state"

    @property
    def log_dir(self) -> Path:
        return self.work / "logs"

    def use_postgres(self, server: PostgresServer, database: str) -> None:
        self.pg_server, self.pg_db = server, database

    # -- manifests ---------------------------------------------------------------------------

    def manifest(
        self,
        name: str,
        tables: Sequence[str],
        *,
        sink: str = "mariadb",
        mode: str = "initial",
        chunk_size: int = 50,
        parallelism: int = 2,
    ) -> Path:
        """A Secret per database and one CdcPipeline capturing ``tables`` of the source database."""
        assert self.server.cdc_password
        secrets: list[dict[str, Any]] = [_secret("source", self.server.cdc_password)]
        if sink == "postgresql":
            assert self.pg_server is not None and self.pg_server.cdc_password
            secrets.append(_secret("pg", self.pg_server.cdc_password))
            url = f"postgresql://{self.pg_server.host}:{self.pg_server.port}/{self.pg_db}"
            secret = "pg"
        else:
            url = f"mysql://{self.server.host}:{self.server.port}/{self.sink_db}"
            secret = "source"
        pipeline = {
            "apiVersion": "sparkcdc.io/v1alpha1",
            "kind": "CdcPipeline",
            "metadata": {"name": name},
            "spec": {
                "source": {
                    "host": self.server.host,
                    "port": self.server.port,
                    "user": "cdc",
                    "passwordSecretRef": {"name": "source", "key": "password"},
                    "tables": [f"{self.db}.{t}" for t in tables],
                    "connectTimeoutSeconds": 3,
                    "tls": {"mode": "disabled"},  # the test server offers no TLS
                },
                "startup": {"mode": mode},
                "snapshot": {"chunkSize": chunk_size, "parallelism": parallelism, "splitsPerTask": 1},
                "binlog": {"batchIntervalMs": 200, "heartbeatIntervalSeconds": 1},
                "sink": {
                    "type": "jdbc",
                    "url": url,
                    "user": "cdc",
                    "passwordSecretRef": {"name": secret, "key": "password"},
                },
            },
        }
        path = self.work / f"{name}.yaml"
        path.write_text(yaml.safe_dump_all([*secrets, pipeline], sort_keys=False), encoding="utf-8")
        return path

    # -- running -----------------------------------------------------------------------------

    def snapshot(self, spark: Any, manifest: Path) -> None:
        """Snapshot the pipeline's tables into its sink in this process, then stream the binlog up
        to the position where the snapshot ended (``--exit-when-caught-up``)."""
        (runtime,) = runtimes_of(load_manifests([str(manifest)]))
        store = FileCheckpointStore(self.state_dir, runtime.name)
        SplitEnumerator(runtime, store, spark, PipelineListener()).run(exit_when_caught_up=True)

    def verify(
        self, spark: Any, manifest: Path, *, repair: bool = False, wait_seconds: float = 60.0
    ) -> tuple[int, PipelineReport]:
        options = VerifyOptions(repair=repair, recheck=RecheckSettings(wait_seconds=wait_seconds))
        console = Console(file=io.StringIO(), width=200)
        code, reports = verify_local(
            load_manifests([str(manifest)]), self.state_dir, options, console=console, spark=spark
        )
        (report,) = reports
        return code, report

    # -- SQL ---------------------------------------------------------------------------------

    def execute(self, sql: str, params: Any = None) -> list[Row]:
        return self.server.execute(sql, params)

    def pg_execute(self, sql: str, params: Any = None) -> list[Row]:
        assert self.pg_server is not None
        return self.pg_server.execute(sql, params, database=self.pg_db)


def _secret(name: str, password: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name},
        "stringData": {"password": password},
    }


def table_report(report: PipelineReport, table: str) -> TableReport:
    (found,) = [t for t in report.tables if t.table.table == table]
    return found


def chunk_holding(diffs: Sequence[ChunkDiff], key: Any) -> ChunkDiff:
    """The one differing chunk whose range holds the single-column key ``key``."""

    def holds(diff: ChunkDiff) -> bool:
        start, end = diff.split.start, diff.split.end
        return (start is None or start[0] <= key) and (end is None or key < end[0])

    found = [d for d in diffs if holds(d)]
    assert len(found) == 1, f"{len(found)} differing chunks hold key {key!r}: {diffs}"
    return found[0]
