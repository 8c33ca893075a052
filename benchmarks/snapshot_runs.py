"""``sparkcdc run`` in the snapshot benchmark: one run with its timings, the JDBC run with its
checksum, and the JVM class-data archive every run maps (see snapshot.py)."""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchsupport import (
    checkpoint_document,
    cpu_seconds,
    jdbc_sink,
    mib,
    run_sparkcdc,
    server_pid,
    sparkcdc_env,
    table_rows,
    write_manifest,
)
from rich.console import Console
from snapshot_warm import READY as WARM_READY

from sparkcdc.core.checkpoint import decode
from sparkcdc.options import SNAPSHOT_IN_DRIVER_ENV as IN_DRIVER_ENV
from sparkcdc.options import EngineOptions
from sparkcdc.spark.session import cds_archive

__all__ = [
    "DATABASE",
    "DUMP",
    "JDBC",
    "REPLICA",
    "TABLE",
    "against_dump",
    "console",
    "count_changelog",
    "dump_restore",
    "prime_jvm_archive",
    "run_jdbc",
    "run_pipeline",
]

DATABASE, TABLE = "bench", "orders"
REPLICA = "bench_replica"
DUMP_COPY = "bench_dump_copy"
console = Console(width=None if sys.stdout.isatty() else 150)


def run_pipeline(
    server: Any,
    work: Path,
    name: str,
    sink: dict[str, Any],
    chunk_size: int,
    splits_per_task: int,
    parallelism: int,
    *,
    warm: bool = False,
    in_driver: str = "auto",
) -> dict[str, Any]:
    """A ``sparkcdc run`` of the snapshot with its timings, or with ``warm`` the same snapshot by a
    driver whose Spark was started first (snapshot_warm.py), timed from its ``READY``.
    ``in_driver`` is the run's ``SPARKCDC_SNAPSHOT_IN_DRIVER`` (engine/wave_runner.py)."""
    state = work / f"state-{name}"
    shutil.rmtree(state, ignore_errors=True)
    manifest = write_manifest(
        work / f"{name}.yaml",
        name=name,
        server=server,
        tables=[f"{DATABASE}.{TABLE}"],
        sink=sink,
        startup={"mode": "snapshot-only"},
        snapshot={"chunkSize": chunk_size, "parallelism": parallelism, "splitsPerTask": splits_per_task},
    )

    first_wave: list[int] = []  # rows committed when the first wave's checkpoint appeared

    def rows_committed() -> int:
        document = checkpoint_document(state, name)
        if document is None:
            return -1
        return sum(info.rows for info in decode(document).all_finished_infos())

    def planned() -> bool:
        return checkpoint_document(state, name) is not None

    def wave() -> bool:
        committed = rows_committed()
        if committed > 0:
            first_wave.append(committed)
        return committed > 0

    def done() -> bool:
        document = checkpoint_document(state, name)
        return bool(document and document.get("snapshotDone"))

    server_before = cpu_seconds(server_pid(server))
    watch = {"planned": planned, "first_wave": wave, "done": done}
    command = None
    if warm:
        watch["ready"] = (state / WARM_READY).exists
        script = Path(__file__).with_name("snapshot_warm.py")
        command = [sys.executable, str(script), str(manifest), str(state)]
    os.environ[IN_DRIVER_ENV] = in_driver
    try:
        run = run_sparkcdc(manifest, state, watch=watch, command=command)
    finally:
        os.environ.pop(IN_DRIVER_ENV, None)
    if run.returncode != 0:
        raise SystemExit(f"sparkcdc run ({name}) failed with exit code {run.returncode}:\n{run.tail()}")
    if warm:
        return _warm_figures(server, server_before, run, chunk_size, splits_per_task)
    planning = next((t for t, line in run.lines if "planning splits" in line), None)
    begin = planning if planning is not None else run.marks.get("planned", 0.0)
    end = run.marks.get("done", run.seconds)
    figures: dict[str, Any] = {
        "chunk_size": chunk_size,
        "splits_per_task": splits_per_task,
        "in_driver": in_driver,
        "spark_started": any("starting Spark" in line for _, line in run.lines),
        "snapshot_seconds": round(end - begin, 3),
        "start_to_done_seconds": round(end, 3),
        "wall_seconds": round(run.seconds, 3),
        "cpu_seconds": round(run.cpu, 2),
        "cpu_marks_done": round(run.cpu_marks.get("done", run.cpu), 2),
        "server_cpu_seconds": round(cpu_seconds(server_pid(server)) - server_before, 2),
        "peak_rss_mib": mib(run.peak_rss),
    }
    # After the first wave the Spark session, the Python workers and their imports are up: the
    # later waves show the steady rate of a long snapshot.
    wave_end = run.marks.get("first_wave")
    rows = table_rows(server, DATABASE, TABLE)
    if wave_end is not None and first_wave and first_wave[0] < rows and end > wave_end:
        figures["after_first_wave"] = {
            "rows": rows - first_wave[0],
            "seconds": round(end - wave_end, 3),
            "cpu_seconds": round(run.cpu_marks["done"] - run.cpu_marks["first_wave"], 2),
        }
    return figures


def _warm_figures(
    server: Any, server_before: float, run: Any, chunk_size: int, splits_per_task: int
) -> dict[str, Any]:
    ready, end = run.marks["ready"], run.marks["done"]
    return {
        "chunk_size": chunk_size,
        "splits_per_task": splits_per_task,
        "snapshot_seconds": round(end - ready, 3),
        "spark_start_seconds": round(ready, 3),
        "wall_seconds": round(run.seconds, 3),
        "cpu_seconds": round(run.cpu_marks["done"] - run.cpu_marks["ready"], 2),
        "server_cpu_seconds": round(cpu_seconds(server_pid(server)) - server_before, 2),
        "peak_rss_mib": mib(run.peak_rss),
    }


_PRIME = (
    "from sparkcdc.options import EngineOptions\n"
    "from sparkcdc.spark.session import create_context\n"
    "spark = create_context('sparkcdc-bench-prime', 'local[2,2]', EngineOptions.from_environment())\n"
    "spark.sparkContext.parallelize(range(2), 2).map(lambda x: x).collect()\n"
    "spark.stop()\n"
)


def prime_jvm_archive() -> dict[str, Any]:
    """The class-data archive a local ``sparkcdc run`` maps (``spark/session.py``): written by a
    throwaway context when missing, so that every measured run starts the same way, as every
    run after a machine's first does."""
    archive = cds_archive(EngineOptions.from_environment(sparkcdc_env()))
    existed = archive.is_file()
    if not existed:
        console.print(f"writing the JVM class-data archive {archive} (once per Spark and Java install)")
        subprocess.run([sys.executable, "-c", _PRIME], env=sparkcdc_env(), check=True)
    return {"path": str(archive), "existed_before": existed, "exists": archive.is_file()}


def _status(server: Any, name: str) -> int:
    rows = server.execute("SHOW GLOBAL STATUS LIKE %s", (name,))
    return int(rows[0][1]) if rows else 0


def _deadlocks(server: Any) -> int:
    return _status(server, "Innodb_deadlocks")


def dump_restore(server: Any) -> dict[str, Any]:
    """``mariadb-dump --single-transaction bench orders | mariadb DUMP_COPY`` on the same server:
    the way to copy a table into a database that sparkcdc's snapshot into JDBC is compared with.
    Timed from the two processes' start to both exiting, checked by checksum."""
    server.execute(f"DROP DATABASE IF EXISTS {DUMP_COPY}")
    server.execute(f"CREATE DATABASE {DUMP_COPY}")
    client = ["--no-defaults", "-h", server.host, "-P", str(server.port), "-u", "root", "--skip-ssl"]
    before, server_before = resource.getrusage(resource.RUSAGE_CHILDREN), cpu_seconds(server_pid(server))
    start = time.perf_counter()
    dump = subprocess.Popen(
        ["mariadb-dump", *client, "--single-transaction", DATABASE, TABLE], stdout=subprocess.PIPE
    )
    restore = subprocess.Popen(["mariadb", *client, DUMP_COPY], stdin=dump.stdout)
    assert dump.stdout is not None
    dump.stdout.close()  # the restore's end only: a failed restore stops the dump
    if restore.wait() != 0 or dump.wait() != 0:
        raise SystemExit(f"mariadb-dump | mariadb failed: {dump.returncode}, {restore.returncode}")
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    figures = {
        "seconds": round(seconds, 3),
        "cpu_seconds": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 2),
        "server_cpu_seconds": round(cpu_seconds(server_pid(server)) - server_before, 2),
    }
    source_sum = server.execute(f"CHECKSUM TABLE {DATABASE}.{TABLE}")[0][1]
    copy_sum = server.execute(f"CHECKSUM TABLE {DUMP_COPY}.{TABLE}")[0][1]
    assert source_sum == copy_sum, "the dump's copy differs from the source"
    server.execute(f"DROP DATABASE IF EXISTS {DUMP_COPY}")
    console.print(f"mariadb-dump | mariadb: {figures}")
    return figures


def count_changelog(directory: Path) -> int:
    total = 0
    for path in (directory / f"{DATABASE}.{TABLE}").glob("*.jsonl"):
        with path.open("rb") as lines:
            total += sum(1 for _ in lines)
    return total


def run_jdbc(server: Any, work: Path, args: argparse.Namespace, *, bulk_load: bool = True) -> dict[str, Any]:
    """``sparkcdc run`` (tuned) into a replica database on the same server, checked by checksum;
    ``bulk_load`` is the sink's ``bulkLoad`` (LOAD DATA LOCAL INFILE, sinks/jdbc/bulk_load.py)."""
    server.execute(f"DROP DATABASE IF EXISTS {REPLICA}")
    deadlocks, loads = _deadlocks(server), _status(server, "Com_load")
    run = run_pipeline(
        server,
        work,
        "bench-jdbc",
        {**jdbc_sink(server, REPLICA), "bulkLoad": bulk_load},
        args.chunk_size,
        args.splits_per_task,
        args.parallelism,
    )
    run["bulk_load"] = bulk_load
    run["load_data_statements"] = _status(server, "Com_load") - loads
    source_sum = server.execute(f"CHECKSUM TABLE {DATABASE}.{TABLE}")[0][1]
    replica_sum = server.execute(f"CHECKSUM TABLE {REPLICA}.{TABLE}")[0][1]
    assert source_sum == replica_sum, "the replica differs from the source"
    run["innodb_deadlocks"] = _deadlocks(server) - deadlocks  # each one redoes a split's transaction
    console.print(f"sparkcdc → jdbc: {run}")
    server.execute(f"DROP DATABASE IF EXISTS {REPLICA}")
    return run


DUMP = "mariadb-dump | mariadb (same table, same server)"
JDBC = "sparkcdc → jdbc, same server (tuned)"


def against_dump(measured: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """sparkcdc's snapshot into JDBC against the dump's copy: both from their processes' start to
    their exit (the ``sparkcdc run`` process's whole wall time, Python start-up and shutdown in)."""
    dump = measured[DUMP]["seconds"]
    bulk, inserts = measured[JDBC]["wall_seconds"], measured[f"{JDBC[:-1]}, bulkLoad: false)"]["wall_seconds"]
    return {
        "dump_seconds": dump,
        "sparkcdc_seconds": bulk,
        "sparkcdc_seconds_without_bulk_load": inserts,
        "times_faster": round(dump / bulk, 3),
        "times_faster_without_bulk_load": round(dump / inserts, 3),
    }
