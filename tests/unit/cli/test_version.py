"""``sparkcdc --version`` names the installed release (what a bug report needs first)."""

from __future__ import annotations

import pytest

import sparkcdc
from sparkcdc.cli import main


def test_version_prints_the_release(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"sparkcdc {sparkcdc.__version__}\n"
