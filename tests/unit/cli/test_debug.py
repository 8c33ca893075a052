"""``--debug``: log lines of ``run`` and ``verify`` carry their source location only when asked."""

from __future__ import annotations

import pytest

from sparkcdc.cli import build_parser
from sparkcdc.driver.progress import stderr_console


def test_debug_is_a_global_flag() -> None:
    assert build_parser().parse_args(["--debug", "run", "p.yaml"]).debug is True
    assert build_parser().parse_args(["run", "p.yaml"]).debug is False


@pytest.mark.parametrize("debug", [False, True])
def test_source_locations_only_with_debug(debug: bool, capsys: pytest.CaptureFixture[str]) -> None:
    stderr_console(debug=debug).log("a line")
    shown = capsys.readouterr().err
    assert "a line" in shown
    assert ("test_debug.py:" in shown) is debug
