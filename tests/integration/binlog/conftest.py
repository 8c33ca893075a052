"""Fixtures of the binlog-phase tests (helpers in binlog_support.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from binlog_support import Case, new_case

from harness.mariadb import start_server
from sparkcdc.options import SNAPSHOT_IN_DRIVER_ENV as IN_DRIVER_ENV
from sparkcdc.testing.mariadb import MariaDBServer


@pytest.fixture
def case(mariadb: MariaDBServer, tmp_path: Path) -> Iterator[Case]:
    """A fresh database on the shared server."""
    created = new_case(mariadb, tmp_path)
    try:
        yield created
    finally:
        created.cleanup()


@pytest.fixture(scope="module")
def own_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MariaDBServer]:
    """A server of this test module's own, for tests that rotate, purge or age binlogs."""
    server = start_server(tmp_path_factory.mktemp("own-mariadb"))
    try:
        yield server
    finally:
        server.cleanup()


@pytest.fixture(autouse=True)
def waves_in_the_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    """``sparkcdc run`` reads snapshot waves as the product does by default (``auto``, not the
    suite's ``never``): small tables on the driver's threads, with the same task code as on Spark,
    and no JVM start per run — the binlog tests are about what is written, not where it is read,
    and their many runs (kill loops) each started a JVM before. The Spark path is covered by the
    snapshot tests; a test here that needs it sets ``never`` itself."""
    monkeypatch.setenv(IN_DRIVER_ENV, "auto")


@pytest.fixture
def waves_on_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every snapshot wave on Spark, which starts at once (``never``): for tests that need a
    snapshot that lasts (kills landing in it, a warning before it ends)."""
    monkeypatch.setenv(IN_DRIVER_ENV, "never")
