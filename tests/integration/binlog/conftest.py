"""Fixtures of the binlog-phase tests (helpers in binlog_support.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from binlog_support import Case, new_case

from harness.mariadb import start_server
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
