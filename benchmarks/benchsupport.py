"""Shared pieces of the benchmark scripts: a cached MariaDB, manifests, ``sparkcdc run`` with
its process tree's peak memory, and results files.

The MariaDB data directories live under ``.bench/`` (git-ignored) and are reused between runs,
so the 1,000,000-row tables are built once. Delete ``.bench/`` to rebuild them.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
BENCH_DIR = REPO / ".bench"
RESULTS_DIR = Path(__file__).resolve().parent / "results"

# Enough buffer pool to hold a 1M-row table: "warm runs" (architecture §4) read from memory.
SERVER_OPTIONS = ("--innodb-buffer-pool-size=768M", "--innodb-log-file-size=256M", "--max-binlog-size=256M")


def _stop_leftover(base_dir: Path) -> None:
    """Stop a server an interrupted earlier run left on this data directory (its pid file)."""
    pid_file = base_dir / "mariadbd.pid"
    try:
        pid = int(pid_file.read_text().strip())
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            if f"--datadir={base_dir / 'data'}".encode() not in cmdline.read():
                return
    except (OSError, ValueError):
        return
    os.kill(pid, signal.SIGTERM)
    for _ in range(600):
        if not Path(f"/proc/{pid}").exists():
            return
        time.sleep(0.1)


@contextlib.contextmanager
def bench_server(name: str, extra_options: Sequence[str] = ()) -> Iterator[Any]:
    """A started MariaDB on a data directory kept in ``.bench/NAME`` (created on first use),
    stopped (data kept) afterwards."""
    from sparkcdc.testing.mariadb import MariaDBServer

    base_dir = BENCH_DIR / name
    _stop_leftover(base_dir)
    server = MariaDBServer(base_dir=base_dir, extra_options=[*SERVER_OPTIONS, *extra_options])
    server.start(timeout=120)
    try:
        server.create_cdc_user(password="bench-cdc-password")
        yield server
    finally:
        server.stop(timeout=120)


def table_rows(server: Any, database: str, table: str) -> int:
    found = server.execute(
        "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s",
        (database, table),
    )
    if not found[0][0]:
        return -1
    return int(server.execute(f"SELECT COUNT(*) FROM `{database}`.`{table}`")[0][0])


def mariadb_client_command(server: Any, sql: str) -> list[str]:
    return [
        "mariadb",
        "--no-defaults",
        "-h",
        server.host,
        "-P",
        str(server.port),
        "-u",
        "root",
        "--skip-ssl",
        "-N",
        "-B",
        "-e",
        sql,
    ]


# -- manifests -------------------------------------------------------------------------------------


def write_manifest(
    path: Path,
    *,
    name: str,
    server: Any,
    tables: Sequence[str],
    sink: dict[str, Any],
    startup: dict[str, Any],
    snapshot: dict[str, Any] | None = None,
    binlog: dict[str, Any] | None = None,
) -> Path:
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "bench"},
        "stringData": {"password": server.cdc_password},
    }
    spec: dict[str, Any] = {
        "source": {
            "host": server.host,
            "port": server.port,
            "user": server.cdc_user,
            "passwordSecretRef": {"name": "bench", "key": "password"},
            "tables": list(tables),
            "tls": {"mode": "disabled"},
        },
        "startup": startup,
        "sink": sink,
    }
    if snapshot:
        spec["snapshot"] = snapshot
    if binlog:
        spec["binlog"] = binlog
    pipeline = {
        "apiVersion": "sparkcdc.io/v1alpha1",
        "kind": "CdcPipeline",
        "metadata": {"name": name},
        "spec": spec,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all([secret, pipeline], sort_keys=False), encoding="utf-8")
    return path


def jdbc_sink(server: Any, database: str) -> dict[str, Any]:
    return {
        "type": "jdbc",
        "url": f"mysql://{server.host}:{server.port}/{database}",
        "user": server.cdc_user,
        "passwordSecretRef": {"name": "bench", "key": "password"},
    }


def changelog_sink(path: Path) -> dict[str, Any]:
    return {"type": "changelog", "path": str(path)}


# -- processes and memory --------------------------------------------------------------------------


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as stat:
                ppid = int(stat.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        tree.setdefault(ppid, []).append(int(entry))
    return tree


def _rss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm", encoding="ascii") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, IndexError, ValueError):
        return 0


def cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds ``pid`` has used so far (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_pid(server: Any) -> int:
    return int(Path(server.pid_file).read_text().strip())


def tree_pids(root: int) -> list[int]:
    tree = _children()
    pids, todo = [], [root]
    while todo:
        pid = todo.pop()
        pids.append(pid)
        todo.extend(tree.get(pid, ()))
    return pids


def tree_rss(root: int) -> int:
    """Resident memory of ``root`` and all its descendants, in bytes."""
    return sum(_rss_bytes(pid) for pid in tree_pids(root))


class PeakRss:
    """Samples a process tree every ``interval`` seconds in a thread: ``peak`` RSS bytes, and
    ``cpu`` seconds used by all its processes (the last sample of each; a process that exits
    between samples loses at most one interval)."""

    def __init__(self, root: int, interval: float = 0.1) -> None:
        self.root = root
        self.interval = interval
        self.peak = 0
        self._cpu: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @property
    def cpu(self) -> float:
        return sum(self._cpu.values())

    def _run(self) -> None:
        while not self._stop.is_set():
            pids = tree_pids(self.root)
            self.peak = max(self.peak, sum(_rss_bytes(pid) for pid in pids))
            for pid in pids:
                used = cpu_seconds(pid)
                if used:
                    self._cpu[pid] = used
            self._stop.wait(self.interval)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def sparkcdc_env() -> dict[str, str]:
    """The environment of a ``sparkcdc run``. The driver JVM gets the options sparkcdc itself picks
    (``spark/session.py``: quick-start flags and a class-data archive for a context that only
    schedules tasks, the JIT's defaults for a session that writes Delta), as a user's run does."""
    env = dict(os.environ)
    env["PYSPARK_PYTHON"] = sys.executable
    env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    env["PYTHONUNBUFFERED"] = "1"
    env["COLUMNS"] = "200"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO / "operator"), env.get("PYTHONPATH", "")) if p)
    return env


@dataclass
class Run:
    """One ``sparkcdc run``: exit code, wall seconds, peak RSS and CPU seconds of its process
    tree, stderr lines with their arrival times (seconds since start), and the moments ``watch``
    callbacks first held."""

    returncode: int
    seconds: float
    peak_rss: int
    cpu: float = 0.0
    lines: list[tuple[float, str]] = field(default_factory=list)
    marks: dict[str, float] = field(default_factory=dict)
    cpu_marks: dict[str, float] = field(default_factory=dict)

    def tail(self, n: int = 40) -> str:
        return "\n".join(line for _, line in self.lines[-n:])


def run_sparkcdc(
    manifest: Path,
    state_dir: Path,
    *,
    timeout: float = 900.0,
    exit_when_caught_up: bool = True,
    watch: dict[str, Callable[[], bool]] | None = None,
    on_start: Callable[[subprocess.Popen[bytes], list[tuple[float, str]]], None] | None = None,
    command: Sequence[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> Run:
    """Run ``python -m sparkcdc run MANIFEST --state-dir DIR [--exit-when-caught-up]`` to its end.

    ``watch`` maps a name to a condition polled every 10 ms; the run records when each first held
    (``Run.marks``, seconds since start, and ``Run.cpu_marks``, the tree's CPU seconds by then).
    ``on_start(process, lines)`` runs in a thread of its
    own once the process is started (``lines`` fills with its stderr as it comes). ``command``
    runs instead of ``sparkcdc run`` (with the same environment and measurements); ``env`` adds
    variables to that environment (e.g. an engine option).
    """
    if command is None:
        command = [sys.executable, "-m", "sparkcdc", "run", str(manifest), "--state-dir", str(state_dir)]
        if exit_when_caught_up:
            command.append("--exit-when-caught-up")
    lines: list[tuple[float, str]] = []
    marks: dict[str, float] = {}
    cpu_marks: dict[str, float] = {}
    start = time.monotonic()
    process = subprocess.Popen(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env={**sparkcdc_env(), **(env or {})},
        start_new_session=True,
    )

    def read_stderr() -> None:
        assert process.stderr is not None
        for raw in process.stderr:
            lines.append((time.monotonic() - start, raw.decode("utf-8", "replace").rstrip()))

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    if on_start is not None:  # a workload driving the run, in its own thread
        threading.Thread(target=on_start, args=(process, lines), daemon=True).start()
    pending = dict(watch or {})
    with PeakRss(process.pid) as rss:
        deadline = start + timeout
        while process.poll() is None:
            now = time.monotonic()
            for name, condition in list(pending.items()):
                with contextlib.suppress(Exception):
                    if condition():
                        marks[name] = now - start
                        cpu_marks[name] = rss.cpu
                        del pending[name]
            if now > deadline:
                process.kill()
                break
            time.sleep(0.01)
        process.wait()
    seconds = time.monotonic() - start
    reader.join(timeout=5)
    return Run(process.returncode, seconds, rss.peak, rss.cpu, lines, marks, cpu_marks)


def delta_commit_infos(table: Path) -> list[dict[str, Any]]:
    """The ``commitInfo`` of every commit in a Delta table's log, in version order (read from its
    JSON files, no Spark)."""
    infos = []
    for commit in sorted((table / "_delta_log").glob("*.json")):
        for line in commit.read_text(encoding="utf-8").splitlines():
            info = json.loads(line).get("commitInfo") if line.strip() else None
            if info:
                infos.append(info)
    return infos


def checkpoint_document(state_dir: Path, pipeline: str) -> dict[str, Any] | None:
    try:
        document: dict[str, Any] = json.loads((state_dir / f"{pipeline}.checkpoint.json").read_text())
    except (OSError, ValueError):
        return None
    return document


# -- output ----------------------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    load = os.getloadavg()
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_average_at_start": [round(x, 2) for x in load],
    }


def write_results(name: str, results: dict[str, Any]) -> Path:
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{name}.json"
    path.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def mib(value: int) -> float:
    return round(value / (1024 * 1024), 1)


@contextlib.contextmanager
def timed() -> Iterator[list[float]]:
    """``with timed() as t: ...`` then ``t[0]`` is the elapsed seconds."""
    box: list[float] = []
    start = time.perf_counter()
    try:
        yield box
    finally:
        box.append(time.perf_counter() - start)
