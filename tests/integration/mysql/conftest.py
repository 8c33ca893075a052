"""Fixtures of the source-side tests: a connection to the suite's MariaDB, and the built Go
decoder for the tests that hold it to python-mysql-replication."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.decoder import built_decoder
from sparkcdc.mysql.connection import SourceConfig, connect


@pytest.fixture
def conn(source_config: SourceConfig) -> Iterator[Any]:
    """A connection to the source server, closed after the test."""
    connection = connect(source_config)
    try:
        yield connection
    finally:
        connection.close()


@pytest.fixture
def binary() -> Path:
    found = built_decoder()
    assert found is not None, "build the Go decoder first: bash binlogdec/build.sh"
    return found
