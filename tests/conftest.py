"""Fixtures shared by all tests, and the unit / integration / e2e markers.

* ``mariadb`` (session): a real MariaDB from Debian's packages on a free loopback port, with
  ``log_bin``, ROW format, FULL row images and row metadata, server time zone ``+05:30``, and a
  ``cdc`` account (``mariadb.cdc_user`` / ``mariadb.cdc_password``). Removed at the end.
* ``source_config`` (session): a ``SourceConfig`` for that account.
* ``fresh_db`` (function): the name of a new empty database on it, dropped afterwards.
* ``spark`` (session): a local ``local[2]`` SparkSession whose workers run this interpreter.
* ``postgres`` (session, started on first use): a throwaway PostgreSQL from Debian's packages on a
  free loopback port (``sparkcdc.testing.postgres``) with a non-superuser ``cdc`` login.

Tests under ``tests/unit`` get the ``unit`` marker, ``tests/integration`` ``integration`` and
``tests/e2e`` ``e2e``, so ``pytest -m unit`` runs the fast ones.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.mariadb import source_config as _source_config
from harness.mariadb import start_server, unique_name
from harness.spark import local_session
from sparkcdc.mysql.connection import SourceConfig
from sparkcdc.options import SNAPSHOT_IN_DRIVER_ENV as IN_DRIVER_ENV
from sparkcdc.testing.mariadb import MariaDBServer
from sparkcdc.testing.postgres import PostgresServer

_TESTS_DIR = Path(__file__).parent

# Snapshot waves run as Spark tasks in the suite, in this process and in the ``sparkcdc`` runs it
# starts (they inherit the environment): with the default ``auto`` the small test tables would be
# read on the driver's threads and Spark's path would go untested. Tests of the driver's path set it
# themselves (tests/integration/snapshot/test_snapshot_wave_runner.py), and so do the binlog tests,
# which are about what is written (tests/integration/binlog/conftest.py). Driver pods, containers of
# their image, inherit nothing: the e2e pipelines say ``snapshot.readInDriver: never`` instead.
os.environ.setdefault(IN_DRIVER_ENV, "never")
_KINDS = ("unit", "integration", "e2e")
# Local tests that take minutes each (a Delta-enabled JVM, long kill loops) are marked ``heavy``.
# hack/test.sh runs the suite as several pytest processes side by side, one per lane: these mark
# the local lanes (the rest of the local tests form the last one). The Delta tests mostly wait for
# their MERGEs and batch intervals, so two lanes of them take half the time on the same cores.
_LANES: dict[str, tuple[tuple[str, ...], ...]] = {
    "lane_delta_stream": tuple(
        ("integration", "delta", f"test_delta_{name}.py")
        for name in ("ddl_follow", "pipeline", "rename_drop", "credentials")
    ),
    "lane_heavy": (("integration", "delta"), ("integration", "binlog", "test_chaos.py")),
    "lane_binlog": (("integration", "binlog"),),
}
_HEAVY_LANES = ("lane_delta_stream", "lane_heavy")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        try:
            parts = Path(str(item.path)).resolve().relative_to(_TESTS_DIR.resolve()).parts
        except ValueError:
            continue
        if parts[0] in _KINDS:
            item.add_marker(getattr(pytest.mark, parts[0]))
        lane = _lane(parts)
        if lane is not None:
            item.add_marker(getattr(pytest.mark, lane))
        if lane in _HEAVY_LANES:
            item.add_marker(pytest.mark.heavy)


def _lane(parts: tuple[str, ...]) -> str | None:
    """The first lane one of whose path prefixes ``parts`` starts with."""
    for lane, prefixes in _LANES.items():
        if any(parts[: len(prefix)] == prefix for prefix in prefixes):
            return lane
    return None


@pytest.fixture(scope="session")
def mariadb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MariaDBServer]:
    base = tmp_path_factory.mktemp("mariadb")
    server = start_server(base)
    try:
        yield server
    finally:
        server.cleanup()
        shutil.rmtree(base, ignore_errors=True)  # ~35 MB of data files per run


@pytest.fixture(scope="session")
def source_config(mariadb: MariaDBServer) -> SourceConfig:
    return _source_config(mariadb)


@pytest.fixture
def fresh_db(mariadb: MariaDBServer) -> Iterator[str]:
    name = unique_name("db")
    mariadb.execute(f"CREATE DATABASE `{name}`")
    try:
        yield name
    finally:
        mariadb.execute(f"DROP DATABASE IF EXISTS `{name}`")


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    session = local_session()
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    server = PostgresServer()
    try:
        server.start()
        server.create_cdc_user("cdc")
        yield server
    finally:
        server.cleanup()
