"""Running ``sparkcdc run`` as a real subprocess, and killing it like a pod kill.

``SparkcdcProcess`` starts ``python -m sparkcdc run MANIFEST --state-dir DIR --exit-when-caught-up``
in a session of its own, with stdout and stderr in files. ``kill()`` freezes and then SIGKILLs
every process of that session at once — the Python driver, the Spark JVM, the PySpark worker
daemon (which leaves the process group but not the session) and its workers — so nothing of a
killed run can still commit to a sink after ``kill()`` returns, as when a driver pod is killed.

``pipeline_manifest`` writes a manifest (a Secret plus one CdcPipeline) for a source on a test
server, with a JDBC or changelog sink.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from sparkcdc.core.checkpoint import Checkpoint, decode
from sparkcdc.core.offsets import BinlogOffset

__all__ = [
    "RunResult",
    "SparkcdcProcess",
    "changelog_sink",
    "checkpoint_path",
    "jdbc_sink",
    "load_checkpoint",
    "pipeline_manifest",
    "run_cli",
    "run_sparkcdc",
    "subprocess_env",
]

# The JVM's start-up dominates a short run; the C1 compiler alone and the serial collector
# roughly halve it on a small machine without changing what the engine does, and a class-data
# sharing archive of Spark's classes (written by the first run that exits normally, kept in
# the repo's git-ignored .cache) takes off another few seconds.
_FAST_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
# Spark SQL evaluated without generated code: the tests' tables are small, and compiling the
# generated classes of every query (each Delta MERGE runs several) cost more CPU than the rows
# (about a quarter of a test MERGE's). Both are Spark's own modes, which its test suites run too;
# benchmarks/ and the images keep Spark's default.
_INTERPRETED_SQL = "--conf spark.sql.codegen.wholeStage=false --conf spark.sql.codegen.factoryMode=NO_CODEGEN"
_REPO = Path(__file__).resolve().parents[2]


@functools.cache
def _cds_archive() -> Path:
    import hashlib

    import pyspark

    java = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False).stderr
    ident = f"{pyspark.__version__}|{Path(pyspark.__file__).parent}|{java}|{_FAST_JVM}"
    digest = hashlib.sha256(ident.encode()).hexdigest()[:16]
    cache = Path(os.environ.get("SPARKCDC_TEST_CACHE", _REPO / ".cache" / "test-jvm"))
    return cache / f"spark-{pyspark.__version__}-{digest}.jsa"


def _jvm_options() -> tuple[str, Path | None]:
    """JVM options for a run, and the archive this run is to write at exit (None: none)."""
    archive = _cds_archive()
    if archive.is_file():
        return f"{_FAST_JVM} -XX:SharedArchiveFile={archive}", None
    archive.parent.mkdir(parents=True, exist_ok=True)
    partial = archive.with_name(f"{archive.name}.{os.getpid()}.{time.time_ns()}.partial")
    return f"{_FAST_JVM} -XX:ArchiveClassesAtExit={partial}", partial


def _finish_archive(partial: Path | None, ok: bool) -> None:
    if partial is None:
        return
    final = partial.with_name(partial.name.split(".jsa.")[0] + ".jsa")
    if ok and partial.is_file() and not final.exists():
        os.replace(partial, final)
    partial.unlink(missing_ok=True)


def subprocess_env(extra: dict[str, str] | None = None, jvm_options: str = _FAST_JVM) -> dict[str, str]:
    """The environment of a ``sparkcdc run`` subprocess: this interpreter for Spark's workers,
    loopback networking, a quick JVM start."""
    env = dict(os.environ)
    env["PYSPARK_PYTHON"] = sys.executable
    env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    submit = f'--driver-java-options "{jvm_options}" {_INTERPRETED_SQL} pyspark-shell'
    env.setdefault("PYSPARK_SUBMIT_ARGS", submit)
    env["PYTHONUNBUFFERED"] = "1"
    env["COLUMNS"] = "160"
    operator_root = str(_REPO / "operator")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (operator_root, env.get("PYTHONPATH", "")) if p)
    if extra:
        env.update(extra)
    return env


# -- manifests ----------------------------------------------------------------------------------


def jdbc_sink(host: str, port: int, database: str, user: str = "cdc") -> dict[str, Any]:
    return {
        "type": "jdbc",
        "url": f"mysql://{host}:{port}/{database}",
        "user": user,
        "passwordSecretRef": {"name": "sparkcdc-test", "key": "password"},
    }


def changelog_sink(path: Path) -> dict[str, Any]:
    return {"type": "changelog", "path": str(path)}


def pipeline_manifest(
    path: Path,
    *,
    name: str,
    host: str,
    port: int,
    password: str,
    tables: Sequence[str],
    sink: dict[str, Any],
    user: str = "cdc",
    mode: str = "snapshot-only",
    chunk_size: int = 200,
    parallelism: int = 2,
    splits_per_task: int = 1,
    snapshot: dict[str, Any] | None = None,
    binlog: dict[str, Any] | None = None,
    tls: str | None = "disabled",
) -> Path:
    """Write a Secret and a CdcPipeline to ``path`` (the sink's password is the source's). ``tls``:
    the source's mode; the harness's servers offer no TLS, so the default (verify-identity) would
    fail them: ``None`` leaves it to the default."""
    snapshot_spec: dict[str, Any] = {
        "chunkSize": chunk_size,
        "parallelism": parallelism,
        "splitsPerTask": splits_per_task,
    }
    snapshot_spec.update(snapshot or {})
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "sparkcdc-test"},
        "stringData": {"password": password},
    }
    pipeline: dict[str, Any] = {
        "apiVersion": "sparkcdc.io/v1alpha1",
        "kind": "CdcPipeline",
        "metadata": {"name": name},
        "spec": {
            "source": {
                "host": host,
                "port": port,
                "user": user,
                "passwordSecretRef": {"name": "sparkcdc-test", "key": "password"},
                "tables": list(tables),
                "connectTimeoutSeconds": 3,
            },
            "startup": {"mode": mode},
            "snapshot": snapshot_spec,
            "sink": sink,
        },
    }
    if binlog:
        pipeline["spec"]["binlog"] = binlog
    if tls:
        pipeline["spec"]["source"]["tls"] = {"mode": tls}
    path.write_text(yaml.safe_dump_all([secret, pipeline], sort_keys=False), encoding="utf-8")
    return path


# -- checkpoints --------------------------------------------------------------------------------


def checkpoint_path(state_dir: Path, pipeline: str) -> Path:
    return state_dir / f"{pipeline}.checkpoint.json"


def load_checkpoint(state_dir: Path, pipeline: str) -> Checkpoint | None:
    """The pipeline's checkpoint, or None before the first write (the file is replaced atomically)."""
    import json

    try:
        text = checkpoint_path(state_dir, pipeline).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    return decode(json.loads(text))


def checkpointed_past(state_dir: Path, pipeline: str, target: BinlogOffset) -> bool:
    """Whether the pipeline's checkpoint holds ``target`` (or a later offset)."""
    checkpoint = load_checkpoint(state_dir, pipeline)
    return (
        checkpoint is not None and checkpoint.binlog_offset is not None and checkpoint.binlog_offset >= target
    )


# -- processes ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunResult:
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    def describe(self) -> str:
        return (
            f"exit code {self.returncode} after {self.seconds:.1f}s\n--- stdout ---\n{self.stdout[-4000:]}"
            f"\n--- stderr ---\n{self.stderr[-6000:]}"
        )


def _session_members(sid: int) -> dict[int, int]:
    """Live processes of session ``sid`` with their process groups: a run and everything it
    started (the PySpark worker daemon leaves the process group, not the session), also once
    reparented after its parent died."""
    members: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # fields: state, ppid, pgrp, session, ...
        if int(fields[3]) == sid and fields[0] not in ("Z", "X"):
            members[int(entry)] = int(fields[2])
    return members


def _signal_all(pids: Sequence[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


class SparkcdcProcess:
    """One ``sparkcdc run`` subprocess; see the module docstring."""

    def __init__(
        self,
        manifest: Path,
        state_dir: Path,
        log_dir: Path,
        *,
        exit_when_caught_up: bool = True,
        env: dict[str, str] | None = None,
    ) -> None:
        log_dir.mkdir(parents=True, exist_ok=True)
        stamp = f"{time.time_ns()}"
        self.stdout_path = log_dir / f"run-{stamp}.out"
        self.stderr_path = log_dir / f"run-{stamp}.err"
        command = [sys.executable, "-m", "sparkcdc", "run", str(manifest), "--state-dir", str(state_dir)]
        if exit_when_caught_up:
            command.append("--exit-when-caught-up")
        self._archive: Path | None = None
        if env is None:
            options, self._archive = _jvm_options()
            env = subprocess_env(jvm_options=options)
        self.started = time.monotonic()
        with self.stdout_path.open("wb") as out, self.stderr_path.open("wb") as err:
            self.process = subprocess.Popen(
                command,
                stdout=out,
                stderr=err,
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
            )
        self.killed = False
        # Process groups of the run, refreshed while polling, so that kill() can freeze the
        # driver and the Spark workers within microseconds of a trigger.
        self._groups: set[int] = {self.process.pid}
        self._groups_seen = 0.0

    def _refresh_groups(self) -> None:
        if time.monotonic() - self._groups_seen > 0.5:
            self._groups = {self.pid, *_session_members(self.pid).values()}
            self._groups_seen = time.monotonic()

    @property
    def pid(self) -> int:
        return self.process.pid

    def poll(self) -> int | None:
        return self.process.poll()

    def kill(self) -> None:
        """SIGKILL the whole session at once: freeze it first so no part can act on another's death."""
        for group in self._groups:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, signal.SIGSTOP)
        frozen: set[int] = set()
        for _ in range(10):  # freeze until no new member appears
            found = set(_session_members(self.pid))
            _signal_all(sorted(found - frozen), signal.SIGSTOP)
            if found <= frozen:
                break
            frozen |= found
        _signal_all(sorted(frozen), signal.SIGKILL)
        self.process.wait()
        self.killed = True
        _finish_archive(self._archive, ok=False)
        if not self._wait_gone():
            raise AssertionError(f"processes of the killed run survived: {list(_session_members(self.pid))}")

    def _reap(self, grace: float = 30.0) -> None:
        """After the run's own exit: let the JVM finish exiting, then kill whatever is left."""
        if not self._wait_gone(grace):
            _signal_all(list(_session_members(self.pid)), signal.SIGKILL)
            self._wait_gone()

    def _wait_gone(self, timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not _session_members(self.pid):
                return True
            time.sleep(0.02)
        return False

    def wait(self, timeout: float) -> RunResult:
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            result = self.result()
            raise AssertionError(
                f"sparkcdc run did not finish within {timeout}s:\n{result.describe()}"
            ) from None
        self._reap()
        _finish_archive(self._archive, ok=self.process.returncode == 0)
        return self.result()

    def result(self) -> RunResult:
        code = self.process.returncode
        return RunResult(
            -9 if code is None else code,
            self.stdout_path.read_text(encoding="utf-8", errors="replace"),
            self.stderr_path.read_text(encoding="utf-8", errors="replace"),
            time.monotonic() - self.started,
        )

    def wait_for(self, condition: Callable[[], bool], timeout: float, interval: float = 0.01) -> bool:
        """Poll ``condition`` until it holds (True), the run exits or ``timeout`` passes (False)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._refresh_groups()
            if condition():
                return True
            if self.process.poll() is not None:
                return False
            time.sleep(interval)
        return False

    def __enter__(self) -> SparkcdcProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process.poll() is None:
            self.kill()


def run_cli(args: Sequence[str], *, timeout: float = 240.0) -> subprocess.CompletedProcess[str]:
    """``python -m sparkcdc ARGS`` to the end, its output captured as text: with the environment of
    a ``sparkcdc run`` subprocess and the class-data archive of Spark's classes the runs share."""
    jvm_options, archive = _jvm_options()
    ok = False
    try:
        result = subprocess.run(
            [sys.executable, "-m", "sparkcdc", *args],
            capture_output=True,
            text=True,
            env=subprocess_env(jvm_options=jvm_options),
            timeout=timeout,
        )
        ok = result.returncode == 0
    finally:
        _finish_archive(archive, ok=ok)
    return result


def run_sparkcdc(
    manifest: Path,
    state_dir: Path,
    log_dir: Path,
    *,
    timeout: float = 240.0,
    exit_when_caught_up: bool = True,
    env: dict[str, str] | None = None,
) -> RunResult:
    """Run to the end and return the exit code and output."""
    with SparkcdcProcess(
        manifest, state_dir, log_dir, exit_when_caught_up=exit_when_caught_up, env=env
    ) as run:
        return run.wait(timeout)
