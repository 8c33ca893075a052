"""Snapshot throughput: sparkcdc against the ``mariadb`` client scanning the same table, in one run.

    .venv/bin/python benchmarks/snapshot.py [--rows N] [--chunk-size N] [--splits-per-task N]
                                            [--parallelism N] [--skip-pymysql] [--skip-defaults]
                                            [--skip-jdbc | --jdbc-only] [--rounds N]

Builds (once, kept in ``.bench/snapshot``) a table ``bench.orders`` of ROWS (default 1,000,000)
rows × 7 columns (BIGINT key, INT, DECIMAL(12,2), two VARCHARs, DATETIME, TIMESTAMP(3)) on a
MariaDB whose buffer pool holds it, then measures, side by side:

* ``mariadb client``   ``mariadb -e 'select * from bench.orders' > /dev/null``, best of 2: the
                       baseline every ratio refers to;
* ``read path``        ``SplitReader`` over all planned splits in this process, no sink, once per
                       chunk-read method (ConnectorX and PyMySQL): where the time goes;
* ``write only``       the two sinks writing the already-read splits in this process (changelog
                       files; JDBC into a replica database on the same server, by LOAD DATA
                       LOCAL INFILE and by INSERTs);
* ``sparkcdc run``     ``sparkcdc run`` (snapshot-only, ``--exit-when-caught-up``, parallelism 2)
                       to the changelog sink with tuned settings (``--chunk-size`` 50,000 rows,
                       ``--splits-per-task`` 5: two waves) and with the spec defaults (8,096 rows,
                       4 splits per task), and to the JDBC sink (tuned). Their seconds run from
                       planning to the last split committed (seen in the run's output and
                       checkpoint file), which includes starting the Spark session and its Python
                       workers; also from the process start (Python start-up, source checks), and
                       the rest of the run after the first wave's checkpoint: the steady rate of a
                       long snapshot. Each configuration runs three ways: as ``sparkcdc run`` is
                       (``SPARKCDC_SNAPSHOT_IN_DRIVER=auto``: the driver reads the waves itself
                       while Spark does not pay, engine/wave_runner.py), with every wave on Spark
                       (``never``), and on a Spark started before the clock (snapshot_warm.py);
* ``against the dump`` ``mariadb-dump --single-transaction bench orders | mariadb`` into another
                       database of the same server, then ``sparkcdc run`` into JDBC with
                       ``bulkLoad`` on and off: the copy a user would make instead of a
                       snapshot, both from their processes' start to their exit (``--jdbc-only``
                       runs only these and the client scan; ``--rounds N`` repeats the dump and
                       the ``bulkLoad`` run N times side by side, with the load average of each:
                       on a shared machine one round says little).

CPU seconds are this side's (the client, this process, or the ``sparkcdc run`` process tree:
driver, JVM, Python workers) and the server's (``mariadbd``): on a shared 2-core machine they
show the cost of each path even when other work distorts the wall times. Peak memory is the
largest resident set of the ``sparkcdc run`` tree, sampled every 100 ms. Results go to
``benchmarks/results/snapshot.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
from benchsupport import (
    BENCH_DIR,
    bench_server,
    changelog_sink,
    cpu_seconds,
    machine,
    mariadb_client_command,
    server_pid,
    table_rows,
    write_results,
)
from rich.table import Table
from snapshot_runs import (
    DATABASE,
    DUMP,
    JDBC,
    REPLICA,
    TABLE,
    against_dump,
    console,
    count_changelog,
    dump_restore,
    prime_jvm_archive,
    run_jdbc,
    run_pipeline,
)

from sparkcdc.api.spec import SnapshotSpec
from sparkcdc.core.tables import TableId
from sparkcdc.engine.planning import plan_table
from sparkcdc.mysql.chunk_reader import chunk_read_method
from sparkcdc.mysql.connection import SourceConfig, connect
from sparkcdc.mysql.schema import load_table_schema
from sparkcdc.mysql.split_reader import SplitReader
from sparkcdc.sinks.changelog import ChangelogSinkConfig, _snapshot_lines, _snapshot_text
from sparkcdc.sinks.jdbc import JdbcSinkConfig
from sparkcdc.sinks.jdbc.dialects import MySqlDialect


def build_table(server: Any, rows: int) -> None:
    if table_rows(server, DATABASE, TABLE) == rows:
        return
    console.print(f"building {DATABASE}.{TABLE} with {rows:,} rows (once; kept in {BENCH_DIR})")
    server.execute(f"CREATE DATABASE IF NOT EXISTS {DATABASE}")
    server.execute(f"DROP TABLE IF EXISTS {DATABASE}.{TABLE}")
    server.execute(
        f"CREATE TABLE {DATABASE}.{TABLE} (id BIGINT NOT NULL PRIMARY KEY, customer INT, "
        "amount DECIMAL(12,2), status VARCHAR(20), note VARCHAR(100), created DATETIME, "
        "updated TIMESTAMP(3) NULL)"
    )
    server.execute("SET SESSION sql_log_bin = 0")  # the snapshot does not need the build's binlog
    server.execute(
        f"INSERT INTO {DATABASE}.{TABLE} SELECT seq, seq % 9973, (seq % 100000) / 100, "
        "ELT(1 + seq % 4, 'new', 'paid', 'shipped', 'Cancelled'), "
        "CONCAT('order ', seq, ' for customer ', seq % 9973, ', \"gift\"'), "
        "TIMESTAMP'2024-01-01 00:00:00' + INTERVAL seq SECOND, "
        "TIMESTAMP'2024-01-01 00:00:00' + INTERVAL seq SECOND + INTERVAL (seq % 1000) * 1000 MICROSECOND "
        f"FROM {DATABASE}.seq_1_to_{rows}"
    )
    server.execute("SET SESSION sql_log_bin = 1")
    server.execute(f"ANALYZE TABLE {DATABASE}.{TABLE}")


def client_scan(server: Any) -> dict[str, float]:
    """Best of two full scans by the C client, output discarded; with the CPU both sides used."""
    best: dict[str, float] = {"seconds": float("inf")}
    for _ in range(2):
        before, server_before = resource.getrusage(resource.RUSAGE_CHILDREN), cpu_seconds(server_pid(server))
        start = time.perf_counter()
        subprocess.run(
            mariadb_client_command(server, f"select * from {DATABASE}.{TABLE}"),
            stdout=subprocess.DEVNULL,
            check=True,
        )
        seconds = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if seconds < best["seconds"]:
            best = {
                "seconds": round(seconds, 3),
                "cpu_seconds": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 2),
                "server_cpu_seconds": round(cpu_seconds(server_pid(server)) - server_before, 2),
            }
    return best


def source_config(server: Any) -> SourceConfig:
    return SourceConfig(
        host=server.host,
        port=server.port,
        user=server.cdc_user,
        password=server.cdc_password,
        tls_mode="disabled",
    )


def read_path(server: Any, chunk_size: int, method: str) -> tuple[dict[str, float], list[Any], Any]:
    """Every split read in this process with ``method`` (one ``SplitReader``): figures and results."""
    cfg = replace(source_config(server), chunk_reader=method)
    conn = connect(cfg)
    try:
        schema = load_table_schema(conn, TableId(DATABASE, TABLE))
        splits = plan_table(conn, schema, SnapshotSpec(chunk_size=chunk_size))
    finally:
        conn.close()
    server_before, cpu_before = cpu_seconds(server_pid(server)), time.process_time()
    start = time.perf_counter()
    with SplitReader(cfg, server_id=4_000_001) as reader:  # one connection, as a Spark task reads
        results = [reader.read(schema, split) for split in splits]
    figures = {
        "seconds": round(time.perf_counter() - start, 3),
        "cpu_seconds": round(time.process_time() - cpu_before, 2),
        "server_cpu_seconds": round(cpu_seconds(server_pid(server)) - server_before, 2),
    }
    return figures, list(zip(splits, results, strict=True)), schema


def _timed_writes(server: Any, sink: Any, schema: Any, reads: list[Any]) -> dict[str, float]:
    server_before, cpu_before = cpu_seconds(server_pid(server)), time.process_time()
    start = time.perf_counter()
    for split, result in reads:
        sink.write_split(schema, split, result.data, result.high)
    return {
        "seconds": round(time.perf_counter() - start, 3),
        "cpu_seconds": round(time.process_time() - cpu_before, 2),
        "server_cpu_seconds": round(cpu_seconds(server_pid(server)) - server_before, 2),
    }


def write_changelog(server: Any, schema: Any, reads: list[Any]) -> dict[str, float]:
    directory = Path(tempfile.mkdtemp(prefix="sparkcdc-bench-changelog-"))
    try:
        sink = ChangelogSinkConfig(str(directory)).open()
        sink.prepare([schema])
        return _timed_writes(server, sink, schema, reads)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def write_jdbc(server: Any, schema: Any, reads: list[Any], bulk_load: bool) -> dict[str, float]:
    server.execute(f"DROP DATABASE IF EXISTS {REPLICA}")
    sink = JdbcSinkConfig(
        "mysql", server.host, server.port, REPLICA, server.cdc_user, server.cdc_password, bulk_load=bulk_load
    ).open()
    try:
        sink.prepare([schema])
        return _timed_writes(server, sink, schema, reads)
    finally:
        sink.close()
        server.execute(f"DROP DATABASE IF EXISTS {REPLICA}")


def per_row_baselines(server: Any, schema: Any, reads: list[Any], rows: int) -> dict[str, dict[str, float]]:
    """The sinks' per-row reference paths against their column-wise ones on the same ROWS rows, in
    this process: the changelog's ``json.dumps`` per row (``_snapshot_lines``) and the JDBC
    dialect's ``executemany`` (``_executemany``), each into its own replica table."""
    data = pa.concat_tables([r.data for _, r in reads]).slice(0, rows)
    source = {"file": "binlog.000001", "pos": 4, "ts_ms": 0, "snapshot": True}
    table = str(schema.table)
    out: dict[str, dict[str, float]] = {}

    def measure(name: str, work: Any) -> None:
        cpu, start = time.process_time(), time.perf_counter()
        work()
        out[name] = {
            "seconds": round(time.perf_counter() - start, 3),
            "cpu_seconds": round(time.process_time() - cpu, 2),
        }

    measure(
        "changelog lines, json.dumps per row",
        lambda: sum(len(x) for x in _snapshot_lines(table, ("id",), data, source)),
    )
    measure(
        "changelog lines, column-wise",
        lambda: sum(len(x) for x in _snapshot_text(table, ("id",), data, source)),
    )
    server.execute(f"DROP DATABASE IF EXISTS {REPLICA}")
    dialect = MySqlDialect()
    conn = dialect.connect(
        JdbcSinkConfig("mysql", server.host, server.port, REPLICA, server.cdc_user, server.cdc_password)
    )
    try:
        python_rows = list(zip(*[c.to_pylist() for c in data.columns], strict=True))
        writes = {
            "jdbc inserts, executemany": lambda cur, target: dialect._executemany(
                cur, target, data.column_names, python_rows
            ),
            "jdbc inserts, column-wise": lambda cur, target: dialect.write_table(cur, target, data),
        }
        for name, write in writes.items():
            target = replace(schema, table=TableId(REPLICA, f"{TABLE}_{len(out)}"))
            with conn.cursor() as cur:
                cur.execute(dialect.create_table_sql(target))
                dialect.begin(cur)
                measure(name, lambda cur=cur, target=target, write=write: write(cur, target))
            conn.commit()
    finally:
        conn.close()
        server.execute(f"DROP DATABASE IF EXISTS {REPLICA}")
    return out


def dump_rounds(server: Any, work: Path, args: Any, measured: dict[str, Any]) -> dict[str, Any]:
    """The dump and the ``bulkLoad`` run again, ``--rounds`` times in all (the first round is the
    one in ``measured``), each with the load average at its start: their ratios and the median."""
    rounds = [(measured[DUMP]["seconds"], measured[JDBC]["wall_seconds"], None)]
    for _ in range(args.rounds - 1):
        load = round(os.getloadavg()[0], 2)
        rounds.append((dump_restore(server)["seconds"], run_jdbc(server, work, args)["wall_seconds"], load))
    ratios = sorted(round(dump / run, 3) for dump, run, _ in rounds)
    console.print(f"times faster than the dump, {len(ratios)} rounds: {ratios}")
    return {
        "dump_sparkcdc_load": rounds,
        "times_faster": ratios,
        "median_times_faster": round(statistics.median(ratios), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--chunk-size", type=int, default=50_000, help="chunkSize of the tuned runs")
    parser.add_argument("--splits-per-task", type=int, default=5, help="splitsPerTask of the tuned runs")
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--skip-pymysql", action="store_true", help="leave out the slow PyMySQL read path")
    parser.add_argument(
        "--baseline-rows",
        type=int,
        default=200_000,
        help="rows for the per-row vs column-wise sink comparison",
    )
    parser.add_argument(
        "--skip-defaults", action="store_true", help="leave out the run with default settings"
    )
    parser.add_argument("--skip-jdbc", action="store_true", help="leave out the runs to the JDBC sink")
    parser.add_argument(
        "--jdbc-only",
        action="store_true",
        help="only the client scan, mariadb-dump | mariadb and the runs to the JDBC sink",
    )
    parser.add_argument(
        "--rounds", type=int, default=1, help="times the dump and the bulkLoad run go side by side"
    )
    args = parser.parse_args()

    defaults = SnapshotSpec()
    results: dict[str, Any] = {
        "benchmark": "snapshot",
        "machine": machine(),
        "settings": {
            "rows": args.rows,
            "columns": 7,
            "parallelism": args.parallelism,
            "tuned": {"chunk_size": args.chunk_size, "splits_per_task": args.splits_per_task},
            "defaults": {"chunk_size": defaults.chunk_size, "splits_per_task": defaults.splits_per_task},
        },
    }
    work = BENCH_DIR / "snapshot-work"
    work.mkdir(parents=True, exist_ok=True)
    measured: dict[str, dict[str, Any]] = {}
    with bench_server("snapshot") as server:
        build_table(server, args.rows)
        rows = table_rows(server, DATABASE, TABLE)
        probe = connect(source_config(server), streaming=True)
        method = chunk_read_method(probe)
        probe.close()
        results["chunk_read_method"] = method
        console.print(f"{rows:,} rows; chunk-read method in use: [bold]{method}[/]")

        measured["mariadb client"] = client_scan(server)
        console.print(f"mariadb client scan: {measured['mariadb client']}")

        reads: list[Any] = []
        schema: Any = None
        read_methods = ["connectorx"] if args.skip_pymysql else ["connectorx", "pymysql"]
        for read_method in [] if args.jdbc_only else read_methods:
            figures, these, schema = read_path(server, args.chunk_size, read_method)
            assert sum(r.data.num_rows for _, r in these) == rows
            measured[f"read path, {read_method} (1 process, no sink)"] = figures
            console.print(f"read path {read_method}: {figures}")
            if read_method == "connectorx":
                reads = these
        if reads:
            measured["changelog write only (1 process)"] = write_changelog(server, schema, reads)
            for bulk, how in ((True, "LOAD DATA"), (False, "INSERTs")):
                measured[f"jdbc write only, {how} (1 process)"] = write_jdbc(server, schema, reads, bulk)
            results["per_row_baselines"] = per_row_baselines(server, schema, reads, args.baseline_rows)
            console.print(f"per-row baselines: {results['per_row_baselines']}")
        del reads

        results["jvm_archive"] = prime_jvm_archive()
        changelog_dir = work / "changelog"
        runs = [("tuned", args.chunk_size, args.splits_per_task)]
        if not args.skip_defaults:
            runs.append(("defaults", defaults.chunk_size, defaults.splits_per_task))
        # sparkcdc's own choice (the driver reads while Spark is not worth starting or not up),
        # every wave on Spark, and every wave on a Spark started before the clock.
        modes = [
            ("", "auto", False),
            (", all waves on Spark", "never", False),
            (", Spark already up", "never", True),
        ]
        for label, chunk_size, per_task in [] if args.jdbc_only else runs:
            for what, in_driver, warm in modes:
                shutil.rmtree(changelog_dir, ignore_errors=True)
                run = run_pipeline(
                    server,
                    work,
                    "bench-changelog",
                    changelog_sink(changelog_dir),
                    chunk_size,
                    per_task,
                    args.parallelism,
                    warm=warm,
                    in_driver=in_driver,
                )
                assert count_changelog(changelog_dir) == rows, "the changelog does not hold every row"
                title = f"sparkcdc → changelog ({label}{what})"
                measured[title] = run
                console.print(f"{title}: {run}")
        shutil.rmtree(changelog_dir, ignore_errors=True)

        if not args.skip_jdbc:
            # The copy a user would make instead, then sparkcdc's snapshot-only run with and
            # without LOAD DATA (sinks/jdbc/bulk_load.py), all into databases on the same server.
            measured[DUMP] = dump_restore(server)
            measured[JDBC] = run_jdbc(server, work, args)
            measured[f"{JDBC[:-1]}, bulkLoad: false)"] = run_jdbc(server, work, args, bulk_load=False)
            results["against_dump"] = against_dump(measured)
            if args.rounds > 1:
                results["against_dump"]["rounds"] = dump_rounds(server, work, args, measured)
    client = measured["mariadb client"]["seconds"]
    rows_out: list[tuple[str, dict[str, Any], float, int]] = []  # name, figures, seconds, rows
    for name, figures in measured.items():
        seconds = figures.get("snapshot_seconds", figures.get("seconds"))
        figures["rows_per_second"] = round(rows / seconds)
        figures["ratio_to_client"] = round(client / seconds, 3)
        rows_out.append((name, figures, seconds, rows))
        if "start_to_done_seconds" in figures:
            whole = {
                "seconds": figures["start_to_done_seconds"],
                "rows_per_second": round(rows / figures["start_to_done_seconds"]),
                "ratio_to_client": round(client / figures["start_to_done_seconds"], 3),
                "cpu_seconds": figures["cpu_marks_done"],
            }
            figures["from_process_start"] = whole
            rows_out.append(("  … the same run from process start", whole, whole["seconds"], rows))
        steady = figures.get("after_first_wave")
        if steady:
            steady["rows_per_second"] = round(steady["rows"] / steady["seconds"])
            steady["ratio_to_client"] = round(steady["rows_per_second"] * client / rows, 3)
            rows_out.append(
                (
                    f"  … after its first wave ({steady['rows']:,} rows)",
                    steady,
                    steady["seconds"],
                    steady["rows"],
                )
            )
    results["results"] = measured
    results["target"] = {"changelog_ratio_to_client": 0.6, "jdbc_times_faster_than_dump": 1.5}
    results["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    # A JDBC-only run has its own file: the full run's results and chart stay as they are.
    path = write_results("snapshot_jdbc" if args.jdbc_only else "snapshot", results)
    with contextlib.suppress(ImportError):  # matplotlib: the bench extra
        from plots import snapshot_chart

        if not args.jdbc_only:
            console.print(f"chart written to {snapshot_chart(results)}")

    table = Table(title=f"snapshot of {rows:,} rows × 7 columns (chunk read: {method})")
    headers = ("path", "seconds", "rows/s", "× client", "CPU s", "server CPU s", "peak RSS", "wall")
    for column in headers:
        table.add_column(column, justify="left" if column == "path" else "right")
    for name, figures, seconds, _ in rows_out:
        server_cpu = figures.get("server_cpu_seconds")
        table.add_row(
            name,
            f"{seconds:.2f}",
            f"{figures['rows_per_second']:,}",
            f"{figures['ratio_to_client']:.2f}",
            f"{figures['cpu_seconds']:.1f}",
            "" if server_cpu is None else f"{server_cpu:.1f}",
            f"{figures['peak_rss_mib']:,.0f} MiB" if "peak_rss_mib" in figures else "",
            f"{figures['wall_seconds']:.1f}s" if "wall_seconds" in figures else "",
        )
    console.print(table)
    baselines = Table(
        title=f"sink rendering, per row vs column-wise, {args.baseline_rows:,} rows in this process"
    )
    for column in ("path", "seconds", "CPU s", "rows/s (CPU)"):
        baselines.add_column(column, justify="left" if column == "path" else "right")
    for name, figures in results.get("per_row_baselines", {}).items():
        per_cpu = round(args.baseline_rows / max(figures["cpu_seconds"], 0.01))
        baselines.add_row(name, f"{figures['seconds']:.2f}", f"{figures['cpu_seconds']:.2f}", f"{per_cpu:,}")
    console.print(baselines)
    console.print(
        "sparkcdc runs: seconds from planning to the last split committed, which includes starting the "
        "Spark context and its Python workers (started while the splits are planned); 'from process start' "
        "adds the Python start-up and source checks before planning; 'after its first wave' is the rest of "
        "the run, the steady rate of a long snapshot; 'Spark already up': the same snapshot by a driver "
        "whose Spark context and workers were started before the clock (snapshot_warm.py). wall: the whole "
        "process. CPU s: this side (client, this process, or the run's whole process tree); server CPU s: "
        "mariadbd."
    )
    if "against_dump" in results:
        versus = results["against_dump"]
        console.print(
            f"snapshot into JDBC: {versus['sparkcdc_seconds']:.2f} s from process start to exit against "
            f"{versus['dump_seconds']:.2f} s for mariadb-dump | mariadb: "
            f"[bold]{versus['times_faster']:.2f}× faster[/] (target 1.5×; INSERTs: "
            f"{versus['times_faster_without_bulk_load']:.2f}×)"
        )
        if "rounds" in versus:
            ratios, median = versus["rounds"]["times_faster"], versus["rounds"]["median_times_faster"]
            console.print(
                f"over {len(ratios)} rounds: median [bold]{median:.2f}×[/], {ratios[0]:.2f}–{ratios[-1]:.2f}×"
            )
    console.print(f"results written to {path}")


if __name__ == "__main__":
    sys.exit(main())
