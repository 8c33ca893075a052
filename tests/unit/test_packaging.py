"""The package layout keeps the standard library's ``operator`` module reachable."""

from __future__ import annotations

import importlib
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]


def test_import_operator_is_the_standard_library() -> None:
    import operator

    stdlib = Path(sysconfig.get_paths()["stdlib"]).resolve()
    assert Path(operator.__file__).resolve().parent == stdlib
    assert operator.add(2, 3) == 5


def test_operator_dir_is_not_a_package() -> None:
    assert not (REPO / "operator" / "__init__.py").exists()


def test_import_operator_from_the_repo_root_still_gives_the_standard_library() -> None:
    # The source root is named operator/; running from the repo root must not shadow the stdlib.
    out = subprocess.run(
        [sys.executable, "-c", "import operator, sparkcdc; print(operator.__file__, operator.itemgetter)"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "operator/" not in out.split()[0].replace(str(REPO), "")
    assert "itemgetter" in out


def test_console_script_entry_point_resolves() -> None:
    module = importlib.import_module("sparkcdc.cli")
    assert callable(module.main)


def test_the_operator_does_not_load_the_data_stack() -> None:
    """The operator holds hundreds of pipelines in one process (issue 6: under 200 MiB); Spark,
    Arrow, NumPy and the MySQL drivers belong to drivers, and importing them costs ~50 MiB."""
    heavy = ("pyspark", "pyarrow", "numpy", "pymysql", "pymysqlreplication", "delta")
    code = (
        f"import sys, sparkcdc.controller.handlers\nprint(sorted(m for m in {heavy!r} if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO / "operator"
    )
    assert out.stdout.strip() == "[]", out.stdout
