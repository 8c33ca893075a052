"""The ``scenario`` fixture of the snapshot tests (helpers in snapshot_support.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from snapshot_support import Scenario

from sparkcdc.testing.mariadb import MariaDBServer


@pytest.fixture
def scenario(mariadb: MariaDBServer, fresh_db: str, tmp_path: Path) -> Iterator[Scenario]:
    sink_db = f"{fresh_db}_replica"
    try:
        yield Scenario(mariadb, fresh_db, sink_db, tmp_path)
    finally:
        mariadb.execute(f"DROP DATABASE IF EXISTS `{sink_db}`")
