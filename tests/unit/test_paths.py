"""One cache directory for Python and the scripts: with ``XDG_CACHE_HOME`` set, the Go decoder the
scripts build lands where Python looks for it (else catch-up silently decodes in Python)."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from sparkcdc.mysql.binlog.native import decoder_path, decoder_version
from sparkcdc.options import EngineOptions
from sparkcdc.paths import BINLOGDEC_DIR, cache_dir

REPO = Path(__file__).resolve().parents[2]
CACHE_SCRIPT = REPO / "hack" / "cache-dir.sh"
SCRIPTS = [*sorted((REPO / "hack").glob("*.sh")), REPO / "binlogdec" / "build.sh"]


def _run(command: list[str], env: dict[str, str]) -> str:
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def _env(tmp_path: Path, **variables: str) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "HOME": str(tmp_path / "home"), **variables}


@pytest.mark.parametrize(
    "variables",
    [
        {"XDG_CACHE_HOME": "xdg"},
        {"XDG_CACHE_HOME": "xdg", "SPARKCDC_CACHE_DIR": "own"},
        {"SPARKCDC_CACHE_DIR": "own"},
        {},
        {"XDG_CACHE_HOME": "", "SPARKCDC_CACHE_DIR": ""},  # empty counts as unset
    ],
    ids=["xdg", "both", "own", "default", "empty"],
)
def test_python_and_the_scripts_agree_on_the_cache(tmp_path: Path, variables: dict[str, str]) -> None:
    env = _env(tmp_path, **{k: str(tmp_path / v) if v else "" for k, v in variables.items()})
    assert Path(_run(["bash", str(CACHE_SCRIPT)], env)) == cache_dir(env)


def test_xdg_cache_home_is_honoured(tmp_path: Path) -> None:
    assert cache_dir(_env(tmp_path, XDG_CACHE_HOME=str(tmp_path / "xdg"))) == tmp_path / "xdg" / "sparkcdc"


def test_every_script_takes_the_cache_from_the_shared_function() -> None:
    for script in SCRIPTS:
        text = script.read_text()
        assert "XDG_CACHE_HOME:-" not in text or script == CACHE_SCRIPT, (
            f"{script.name} resolves the cache itself"
        )
        if "CACHE=" in text:
            assert '. "$ROOT/hack/cache-dir.sh"' in text and "CACHE=$(sparkcdc_cache_dir)" in text, (
                script.name
            )


def test_the_decoder_is_built_where_python_looks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = _env(tmp_path, XDG_CACHE_HOME=str(tmp_path / "xdg"))
    built = Path(_run(["bash", str(REPO / "binlogdec" / "build.sh"), "--path"], env))
    assert built.is_relative_to(tmp_path / "xdg" / "sparkcdc")
    built.parent.mkdir(parents=True)
    built.write_bytes(b"")
    built.chmod(built.stat().st_mode | stat.S_IXUSR)
    options = EngineOptions.from_environment({"HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "xdg")})
    assert decoder_path(options.binlog_decoder, options.cache_dir) == built


def test_one_version_file_for_python_and_the_build() -> None:
    version = (BINLOGDEC_DIR / "VERSION").read_text().strip()
    assert BINLOGDEC_DIR == REPO / "binlogdec"
    assert decoder_version() == version
    assert (
        Path(_run(["bash", str(REPO / "binlogdec" / "build.sh"), "--path"], dict(os.environ))).parent.name
        == version
    )
