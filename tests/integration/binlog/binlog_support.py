"""Helpers for the binlog-phase tests: a source database, its replicas, manifests, comparisons.

A ``Case`` is a fresh source database on a MariaDB server (the shared one, or a test's own
when it purges or rotates binlogs), sink databases named ``<db>_<suffix>_replica`` (the ``cdc``
account may write ``%_replica``), and a work directory for manifests, checkpoints, changelogs
and logs. ``sparkcdc run`` runs as a subprocess (tests/harness/runner.py); a writer beside the
pipeline is a ``harness.writer.RandomWriter``.
"""

from __future__ import annotations

import io
import json
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness.mariadb import unique_name
from harness.runner import RunResult, SparkcdcProcess, load_checkpoint, run_sparkcdc
from sparkcdc.core.checkpoint import Checkpoint
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.testing.mariadb import MariaDBServer
from sparkcdc.testing.postgres import PostgresServer
from sparkcdc.verify.report import PipelineReport

Row = tuple[Any, ...]


@dataclass
class Case:
    server: MariaDBServer
    db: str
    work: Path
    sink_dbs: list[str] = field(default_factory=list)

    @property
    def state_dir(self) -> Path:
        return self.work / "state"

    @property
    def log_dir(self) -> Path:
        return self.work / "logs"

    def changelog_dir(self, name: str) -> Path:
        return self.work / f"changelog-{name}"

    def sink_db(self, suffix: str) -> str:
        name = f"{self.db}_{suffix}_replica"
        if name not in self.sink_dbs:
            self.sink_dbs.append(name)
        return name

    # -- manifests --------------------------------------------------------------------------

    def pipeline(
        self,
        name: str,
        tables: Sequence[str],
        *,
        sink: str = "jdbc",
        startup: dict[str, Any] | None = None,
        snapshot: dict[str, Any] | None = None,
        binlog: dict[str, Any] | None = None,
        source: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """A CdcPipeline document for ``tables`` (names in the source database, or patterns
        starting with ``re:``); the JDBC sink writes ``<db>_<name>_replica``."""
        if sink == "jdbc":
            suffix = name.replace("-", "_")
            sink_spec: dict[str, Any] = {
                "type": "jdbc",
                "url": f"mysql://{self.server.host}:{self.server.port}/{self.sink_db(suffix)}",
                "user": "cdc",
                "passwordSecretRef": {"name": "sparkcdc-test", "key": "password"},
            }
        else:
            sink_spec = {"type": "changelog", "path": str(self.changelog_dir(name))}
        entries = [t[3:] if t.startswith("re:") else f"{self.db}.{t}" for t in tables]
        source_spec: dict[str, Any] = {
            "host": self.server.host,
            "port": self.server.port,
            "user": "cdc",
            "passwordSecretRef": {"name": "sparkcdc-test", "key": "password"},
            "tables": entries,
            "connectTimeoutSeconds": 3,
            "tls": {"mode": "disabled"},
        }
        source_spec.update(source or {})
        snapshot_spec = {"chunkSize": 200, "parallelism": 2, "splitsPerTask": 1}
        snapshot_spec.update(snapshot or {})
        binlog_spec = {"batchIntervalMs": 200, "heartbeatIntervalSeconds": 1}
        binlog_spec.update(binlog or {})
        return {
            "apiVersion": "sparkcdc.io/v1alpha1",
            "kind": "CdcPipeline",
            "metadata": {"name": name},
            "spec": {
                "source": source_spec,
                "startup": startup or {"mode": "initial"},
                "snapshot": snapshot_spec,
                "binlog": binlog_spec,
                "sink": sink_spec,
            },
        }

    def to_postgres(
        self, pipeline: dict[str, Any], postgres: PostgresServer, database: str | None = None
    ) -> tuple[str, dict[str, Any]]:
        """Point ``pipeline``'s JDBC sink at a new PostgreSQL database owned by ``cdc`` (default
        ``<db>_pg``); returns its name and the Secret document holding the ``cdc`` password, to
        pass to ``manifest`` with the pipelines."""
        assert postgres.cdc_user and postgres.cdc_password
        database = database or f"{self.db}_pg"
        postgres.execute(f'CREATE DATABASE "{database}" OWNER "{postgres.cdc_user}"', database="postgres")
        pipeline["spec"]["sink"].update(
            url=f"postgresql://{postgres.host}:{postgres.port}/{database}",
            user=postgres.cdc_user,
            passwordSecretRef={"name": "pg-test", "key": "password"},
        )
        secret = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "pg-test"},
            "stringData": {"password": postgres.cdc_password},
        }
        return database, secret

    def manifest(self, file: str, *pipelines: dict[str, Any]) -> Path:
        assert self.server.cdc_password
        secret = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "sparkcdc-test"},
            "stringData": {"password": self.server.cdc_password},
        }
        path = self.work / file
        path.write_text(yaml.safe_dump_all([secret, *pipelines], sort_keys=False), encoding="utf-8")
        return path

    # -- runs -------------------------------------------------------------------------------

    def run(self, manifest: Path, *, timeout: float = 240.0) -> RunResult:
        return run_sparkcdc(manifest, self.state_dir, self.log_dir, timeout=timeout)

    def run_ok(self, manifest: Path, *, timeout: float = 240.0) -> RunResult:
        result = self.run(manifest, timeout=timeout)
        assert result.returncode == 0, result.describe()
        return result

    def start(self, manifest: Path, *, exit_when_caught_up: bool = False) -> SparkcdcProcess:
        return SparkcdcProcess(
            manifest, self.state_dir, self.log_dir, exit_when_caught_up=exit_when_caught_up
        )

    def checkpoint(self, pipeline: str) -> Checkpoint | None:
        return load_checkpoint(self.state_dir, pipeline)

    def wait_offset(self, run: SparkcdcProcess, pipeline: str, target: BinlogOffset, timeout: float) -> None:
        """Until the pipeline has checkpointed ``target`` (or later)."""

        def reached() -> bool:
            cp = self.checkpoint(pipeline)
            return cp is not None and cp.binlog_offset is not None and cp.binlog_offset >= target

        if not run.wait_for(reached, timeout, interval=0.1):
            run.kill()
            raise AssertionError(f"{pipeline} did not reach {target}:\n{run.result().describe()}")

    # -- SQL --------------------------------------------------------------------------------

    def execute(self, sql: str, params: Any = None) -> list[Row]:
        return self.server.execute(sql, params)

    def position(self) -> BinlogOffset:
        file, pos = self.server.binlog_position()
        return BinlogOffset(file, pos)

    def rows(self, database: str, table: str) -> list[Row]:
        return self.execute(f"SELECT * FROM `{database}`.`{table}`")

    def columns(self, database: str, table: str) -> list[str]:
        rows = self.execute(
            "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s"
            " ORDER BY ORDINAL_POSITION",
            (database, table),
        )
        return [str(r[0]) for r in rows]

    def assert_replica(self, suffix: str, table: str, where: str = "") -> None:
        """The replica table holds exactly the source table's rows (optionally a subset)."""
        source = self.execute(f"SELECT * FROM `{self.db}`.`{table}` {where}")
        sink = self.rows(self.sink_db(suffix), table)
        assert_same_rows(source, sink, f"{self.db}.{table} -> {suffix}")

    def verify(self, spark: Any, manifest: Path) -> list[PipelineReport]:
        """``sparkcdc verify`` of ``manifest``'s pipelines in this process; asserts every chunk matched."""
        from rich.console import Console

        from sparkcdc.api.manifest import load_manifests
        from sparkcdc.driver.verify_local import verify_local
        from sparkcdc.verify.runner import VerifyOptions

        code, reports = verify_local(
            load_manifests([str(manifest)]), self.state_dir, VerifyOptions(),
            console=Console(file=io.StringIO()), spark=spark,
        )  # fmt: skip
        assert code == 0, [(t.table, t.differing) for r in reports for t in r.tables]
        return reports

    def cleanup(self) -> None:
        for name in [self.db, *self.sink_dbs]:
            self.execute(f"DROP DATABASE IF EXISTS `{name}`")


def new_case(server: MariaDBServer, work: Path) -> Case:
    """A new source database on ``server``; ``cleanup()`` drops it and its replicas."""
    db = unique_name("bl")
    server.execute(f"CREATE DATABASE `{db}`")
    return Case(server, db, work)


def assert_same_rows(source: Sequence[Row], sink: Sequence[Row], what: str) -> None:
    """Equal as multisets of full rows; on failure, a readable diff by first column."""
    if Counter(source) == Counter(sink):
        return
    missing = Counter(source) - Counter(sink)
    extra = Counter(sink) - Counter(source)
    lines = [f"{what}: source has {len(source)} rows, sink {len(sink)}"]
    by_key_source = {r[:1]: r for r in missing}
    by_key_sink = {r[:1]: r for r in extra}
    for key in sorted(set(by_key_source) | set(by_key_sink), key=repr)[:30]:
        lines.append(f"  key {key!r}: source {by_key_source.get(key)!r} / sink {by_key_sink.get(key)!r}")
    raise AssertionError("\n".join(lines))


# -- changelog replay -----------------------------------------------------------------------------


def _file_order(path: Path) -> tuple[int, int, int, str]:
    """Snapshot files first (by split), then binlog batch files by their first offset."""
    name = path.stem
    if name.startswith("snapshot-"):
        return (0, 0, 0, name)
    _, _, rest = name.partition("binlog-")
    file, _, pos = rest.rpartition("-")
    return (1, BinlogOffset(file, int(pos)).sort_key()[0], int(pos), name)


def changelog_records(directory: Path) -> Iterator[dict[str, Any]]:
    for path in sorted(directory.glob("*.jsonl"), key=_file_order):
        with path.open(encoding="utf-8") as lines:
            for line in lines:
                if line.strip():
                    yield json.loads(line)


def replay_changelog(directory: Path, key: Callable[[dict[str, Any]], Any]) -> dict[Any, dict[str, Any]]:
    """The table a consumer rebuilds from the changelog: +I/+U upsert, -U/-D delete the key
    (a key-changing update is -U of the old key then +U of the new one); ``truncate`` empties it,
    ``schema`` renames and drops the columns of the rows it holds (sinks/changelog.py)."""
    table: dict[Any, dict[str, Any]] = {}
    for record in changelog_records(directory):
        data = record["data"]
        if record["op"] in ("+I", "+U"):
            table[key(data)] = data
        elif record["op"] == "truncate":
            table.clear()
        elif record["op"] == "schema":
            renamed, dropped = record.get("renamed", {}), set(record.get("dropped", []))
            rows = [{renamed.get(c, c): v for c, v in r.items() if c not in dropped} for r in table.values()]
            table = {key(row): row for row in rows}
        else:
            table.pop(key(data), None)
    return table
