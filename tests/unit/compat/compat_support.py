"""What the compat tests read from the repository."""

from __future__ import annotations

import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the project's venv is 3.11+
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[3]


def dependencies() -> list[str]:
    """pyproject.toml's ``project.dependencies``, as written."""
    found: list[str] = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    return found
