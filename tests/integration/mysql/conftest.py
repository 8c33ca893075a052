"""The built Go decoder, for the tests that hold it to python-mysql-replication."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.decoder import built_decoder


@pytest.fixture
def binary() -> Path:
    found = built_decoder()
    assert found is not None, "build the Go decoder first: bash binlogdec/build.sh"
    return found
