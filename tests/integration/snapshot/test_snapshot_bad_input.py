"""Bad input stops ``sparkcdc run`` before anything is read or written: a non-zero exit, one
message on stderr naming the problem and its fix, no traceback, no password, no checkpoint and
no sink database.

The cases run as concurrent subprocesses (a Spark start each), started once for the module.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.mariadb import start_server, unique_name
from harness.runner import RunResult, SparkcdcProcess, jdbc_sink, pipeline_manifest
from sparkcdc.testing.mariadb import MariaDBServer, free_port

pytestmark = pytest.mark.integration

WRONG_PASSWORD = "Wr0ng-passw0rd-for-the-test"


@dataclass(frozen=True)
class Case:
    # fragments that must all be in stderr: the problem, then the fix
    expected: tuple[str, ...]
    password: str  # the password in the manifest: must not be echoed
    state_dir: Path
    sink_db: str
    server: MariaDBServer


@dataclass(frozen=True)
class Outcome:
    case: Case
    result: RunResult


@pytest.fixture(scope="module")
def outcomes(
    mariadb: MariaDBServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Outcome]]:
    work = tmp_path_factory.mktemp("bad-input")
    servers: dict[str, MariaDBServer] = {}
    runs: dict[str, SparkcdcProcess] = {}
    db = unique_name("bad")
    try:
        # Started from this thread: a test server stops when the thread that started it ends.
        for server_id, (name, option) in enumerate(
            [("statement", "--binlog-format=STATEMENT"), ("minimal", "--binlog-row-image=MINIMAL")], 31
        ):
            servers[name] = start_server(work / name, server_id=server_id, extra_options=[option])
        for server in (mariadb, *servers.values()):
            server.execute(f"CREATE DATABASE {db}")
            server.execute(f"CREATE TABLE {db}.t (id INT PRIMARY KEY, v INT)")
            server.execute(f"INSERT INTO {db}.t VALUES (1, 1), (2, 2)")
        mariadb.execute(f"CREATE TABLE {db}.nopk (a INT, b VARCHAR(10))")
        mariadb.execute(f"INSERT INTO {db}.nopk VALUES (1, 'x')")
        closed = free_port()
        cases: dict[str, tuple[Case, int, str]] = {}

        def case(
            name: str,
            expected: tuple[str, ...],
            *,
            server: MariaDBServer = mariadb,
            table: str = "t",
            source_port: int | None = None,
            password: str | None = None,
        ) -> None:
            assert server.cdc_password
            sink_db = f"{unique_name('bad')}_replica"
            c = Case(expected, password or server.cdc_password, work / name / "state", sink_db, server)
            cases[name] = (c, source_port or server.port, f"{db}.{table}")

        case(
            "unreachable",
            (f"cannot reach the source at 127.0.0.1:{closed}", "spec.source.host", "spec.source.port"),
            source_port=closed,
        )
        case(
            "wrong-password",
            ("refused user 'cdc'", "access denied", "passwordSecretRef"),
            password=WRONG_PASSWORD,
        )
        case(
            "missing-table", (f"table {db}.missing", "does not exist", "spec.source.tables"), table="missing"
        )
        case(
            "statement", ("binlog_format is STATEMENT", "set binlog_format=ROW"), server=servers["statement"]
        )
        case(
            "minimal", ("binlog_row_image is MINIMAL", "set binlog_row_image=FULL"), server=servers["minimal"]
        )
        case("no-primary-key", (f"{db}.nopk", "primary key", "chunkKeyColumns"), table="nopk")

        # All at once: each run starts Spark before it looks at the source.
        for name, (c, source_port, table) in cases.items():
            manifest = pipeline_manifest(
                work / f"{name}.yaml",
                name=name,
                host="127.0.0.1",
                port=source_port,
                password=c.password,
                tables=[table],
                sink=jdbc_sink(c.server.host, c.server.port, c.sink_db),
            )
            runs[name] = SparkcdcProcess(manifest, c.state_dir, work / name / "logs")
        yield {name: Outcome(cases[name][0], run.wait(180)) for name, run in runs.items()}
    finally:
        for run in runs.values():
            if run.poll() is None:
                run.kill()
        mariadb.execute(f"DROP DATABASE IF EXISTS {db}")
        for server in servers.values():
            server.cleanup()
        shutil.rmtree(work, ignore_errors=True)


@pytest.mark.parametrize(
    "name", ["unreachable", "wrong-password", "missing-table", "statement", "minimal", "no-primary-key"]
)
def test_bad_input_stops_before_reading(outcomes: dict[str, Outcome], name: str) -> None:
    outcome = outcomes[name]
    result, case = outcome.result, outcome.case
    assert result.returncode != 0, result.describe()
    for fragment in case.expected:
        assert fragment.lower() in result.stderr.lower(), f"{fragment!r} missing:\n{result.describe()}"
    assert "Traceback" not in result.stderr, result.describe()
    for secret in {case.password, case.server.cdc_password}:
        assert secret and secret not in result.stderr and secret not in result.stdout, "password leaked"
    # Nothing was planned, checkpointed or written.
    assert not case.state_dir.exists() or not any(case.state_dir.iterdir()), list(case.state_dir.iterdir())
    sink = case.server.execute("SHOW DATABASES LIKE %s", (case.sink_db,))
    assert sink == [], f"the sink database {case.sink_db} was created"
