"""Helpers for the snapshot tests: a source database with its replica, manifests, comparisons.

The ``scenario`` fixture (conftest.py) gives every test a ``Scenario``: a fresh source database
on the shared MariaDB, a sink database ``<source>_replica`` on the same server (the ``cdc``
account may write ``%_replica`` databases), a work directory for manifests, checkpoints,
changelogs and run logs, and ways to run ``sparkcdc run`` as a subprocess
(tests/harness/runner.py).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from harness.runner import (
    RunResult,
    SparkcdcProcess,
    changelog_sink,
    jdbc_sink,
    load_checkpoint,
    pipeline_manifest,
    run_sparkcdc,
)
from sparkcdc.core.checkpoint import Checkpoint
from sparkcdc.core.splits import Key
from sparkcdc.testing.mariadb import MariaDBServer

Row = tuple[Any, ...]


def int_key(key: Key) -> int:
    """The first value of an integer split key or boundary."""
    value = key[0]
    assert isinstance(value, (int, Decimal)), f"not an integer key: {key!r}"
    return int(value)


@dataclass
class Scenario:
    server: MariaDBServer
    db: str
    sink_db: str
    work: Path

    @property
    def state_dir(self) -> Path:
        return self.work / "state"

    @property
    def changelog_dir(self) -> Path:
        return self.work / "changelog"

    @property
    def log_dir(self) -> Path:
        return self.work / "logs"

    def manifest(
        self,
        name: str,
        tables: Sequence[str],
        *,
        sink: str = "jdbc",
        file: str | None = None,
        **options: Any,
    ) -> Path:
        """A manifest for ``tables`` (names in the source database) into the JDBC or changelog sink."""
        sink_spec = (
            jdbc_sink(self.server.host, self.server.port, self.sink_db)
            if sink == "jdbc"
            else changelog_sink(self.changelog_dir)
        )
        assert self.server.cdc_password
        return pipeline_manifest(
            self.work / (file or f"{name}.yaml"),
            name=name,
            host=self.server.host,
            port=self.server.port,
            password=self.server.cdc_password,
            tables=[f"{self.db}.{t}" for t in tables],
            sink=sink_spec,
            **options,
        )

    def run(self, manifest: Path, *, timeout: float = 240.0) -> RunResult:
        return run_sparkcdc(manifest, self.state_dir, self.log_dir, timeout=timeout)

    def start(self, manifest: Path) -> SparkcdcProcess:
        return SparkcdcProcess(manifest, self.state_dir, self.log_dir)

    def run_ok(self, manifest: Path, *, timeout: float = 240.0) -> RunResult:
        """Run to the end; it must exit 0 without a single failed Spark task on the way (a task
        retried by Spark hides the failure from the exit code, not from the log)."""
        result = self.run(manifest, timeout=timeout)
        assert result.returncode == 0, result.describe()
        assert_no_task_failures(result)
        return result

    def checkpoint(self, pipeline: str) -> Checkpoint | None:
        return load_checkpoint(self.state_dir, pipeline)

    # -- SQL ------------------------------------------------------------------------------------

    def execute(self, sql: str, params: Any = None) -> list[Row]:
        return self.server.execute(sql, params)

    def rows(self, database: str, table: str) -> list[Row]:
        return self.execute(f"SELECT * FROM `{database}`.`{table}`")

    def count(self, database: str, table: str) -> int:
        return int(self.execute(f"SELECT COUNT(*) FROM `{database}`.`{table}`")[0][0])

    def sink_count(self, table: str) -> int:
        """Rows in the replica table, 0 while it does not exist yet."""
        found = self.execute(
            "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s",
            (self.sink_db, table),
        )
        return self.count(self.sink_db, table) if found[0][0] else 0

    def assert_replica_equal(self, table: str) -> None:
        """The replica table holds exactly the source table's rows (full rows, as multisets)."""
        assert_same_rows(self.rows(self.db, table), self.rows(self.sink_db, table), f"{self.db}.{table}")

    # -- changelog ------------------------------------------------------------------------------

    def changelog_records(self, table: str) -> list[dict[str, Any]]:
        directory = self.changelog_dir / f"{self.db}.{table}"
        records: list[dict[str, Any]] = []
        for path in sorted(directory.glob("*.jsonl")):
            with path.open(encoding="utf-8") as lines:
                records.extend(json.loads(line) for line in lines if line.strip())
        return records

    def changelog_files(self, table: str) -> list[Path]:
        directory = self.changelog_dir / f"{self.db}.{table}"
        return sorted(directory.glob("*.jsonl")) if directory.is_dir() else []


def assert_no_task_failures(result: RunResult) -> None:
    failures = [line for line in result.stderr.splitlines() if "Exception in task" in line]
    if failures:
        causes = [line for line in result.stderr.splitlines() if line.startswith(("pymysql.", "sparkcdc."))]
        raise AssertionError(
            f"{len(failures)} Spark task(s) failed and were retried: {failures[:3]}; causes: {causes[:5]}"
        )


def assert_same_rows(source: Sequence[Row], sink: Sequence[Row], what: str, key_len: int = 1) -> None:
    """Equal as multisets of full rows; on failure, a readable diff by key."""
    if Counter(source) == Counter(sink):
        return
    missing = Counter(source) - Counter(sink)
    extra = Counter(sink) - Counter(source)
    by_key_source = {r[:key_len]: r for r in missing}
    by_key_sink = {r[:key_len]: r for r in extra}
    lines = [f"{what}: source has {len(source)} rows, sink {len(sink)}"]
    keys = set(by_key_source) | set(by_key_sink)
    try:
        ordered = sorted(keys)
    except TypeError:  # NULLs or mixed types
        ordered = sorted(keys, key=repr)
    for key in ordered[:30]:
        lines.append(f"  key {key!r}: source {by_key_source.get(key)!r} / sink {by_key_sink.get(key)!r}")
    dup = [r for r, n in Counter(sink).items() if n > 1]
    if dup:
        lines.append(f"  duplicated in sink: {dup[:10]!r}")
    raise AssertionError("\n".join(lines))
