"""The Go decoder's patch of go-mysql (binlogdec/go-mysql.patch) is written for the go-mysql that
binlogdec/go.mod requires and still applies to its source, exactly: checked by the build script's own
guard (``build.sh --check``), which every build runs too."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
SRC = REPO / "binlogdec"
NO_GO = 3  # build.sh --check: no Go on this machine, so no decoder is built here either


def _go_mysql_required(go_mod: str) -> str:
    found = re.search(r"^(?:require)?\s*github\.com/go-mysql-org/go-mysql (v\S+)", go_mod, re.M)
    assert found, "go.mod does not require go-mysql"
    return found.group(1)


def _check(root: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    command = ["bash", str(root / "binlogdec" / "build.sh"), "--check"]
    return subprocess.run(command, env=env, capture_output=True, text=True, check=False)


def _copy_of_the_sources(tmp_path: Path) -> Path:
    shutil.copytree(SRC, tmp_path / "binlogdec")
    (tmp_path / "hack").mkdir()
    shutil.copy(REPO / "hack" / "cache-dir.sh", tmp_path / "hack")
    return tmp_path


def test_the_patch_is_written_for_the_go_mysql_go_mod_requires() -> None:
    patch = (SRC / "go-mysql.patch").read_text()
    assert (
        f"Upstream: github.com/go-mysql-org/go-mysql {_go_mysql_required((SRC / 'go.mod').read_text())}\n"
        in patch
    )


def test_the_patch_applies_to_the_module_source() -> None:
    """Against the module as the build downloaded it (where Go is, the build ran: make deps)."""
    done = _check(REPO)
    # Go is part of the set-up (hack/k8s-bin.sh needs it too): its absence is a failure, not a skip.
    assert done.returncode != NO_GO, "no Go on this machine: run make deps (hack/bootstrap.sh)"
    assert done.returncode == 0, done.stderr


def test_another_go_mysql_stops_the_build(tmp_path: Path) -> None:
    root = _copy_of_the_sources(tmp_path)
    go_mod = root / "binlogdec" / "go.mod"
    go_mod.write_text(go_mod.read_text().replace("go-mysql v1.12.0", "go-mysql v1.13.0"))
    done = _check(root, {**os.environ, "SPARKCDC_CACHE_DIR": str(tmp_path / "cache")})
    assert done.returncode == 1
    assert "go.mod requires go-mysql v1.13.0, but" in done.stderr and "written for v1.12.0" in done.stderr


def test_a_patch_that_no_longer_applies_stops_the_build(tmp_path: Path) -> None:
    assert shutil.which("patch"), "no patch(1) here: run make deps (hack/bootstrap.sh installs it)"
    root = _copy_of_the_sources(tmp_path)
    cache = tmp_path / "cache"
    module = cache / "go" / "mod" / "github.com" / "go-mysql-org" / "go-mysql@v1.12.0" / "replication"
    module.mkdir(parents=True)
    (module / "row_event.go").write_text("package replication\n\n// changed upstream\n")
    env = {**os.environ, "SPARKCDC_CACHE_DIR": str(cache), "GO": shutil.which("true") or "/bin/true"}
    done = _check(root, env)
    assert done.returncode == 1
    assert "no longer applies to go-mysql v1.12.0" in done.stderr
