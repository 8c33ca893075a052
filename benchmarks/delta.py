"""The Delta sink next to the changelog and JDBC sinks, in one run: snapshot rows/s and binlog
apply events/s of ``sparkcdc run`` into each.

    .venv/bin/python benchmarks/delta.py [--rows N] [--events N] [--chunk-size N] [--parallelism N]

Uses the table of benchmarks/snapshot.py (``bench.orders``, 7 columns) with ROWS rows (default
200,000) on its own MariaDB kept in ``.bench/delta``. For each sink, side by side:

* ``snapshot``  ``sparkcdc run`` snapshot-only, ``--exit-when-caught-up``: seconds from planning to
                the checkpoint's ``snapshotDone`` (the JVM start is left out), rows/s;
* ``binlog``    a backlog of EVENTS row changes (default 20,000: updates of 100-row key ranges, one
                transaction each, with a delete and an insert every tenth transaction) written
                after the snapshots, then ``sparkcdc run`` from the backlog's start offset
                (``startup: specific-offset``) into the same sink, which holds the snapshot (so the
                MERGE runs against the full table): seconds from "streaming the binlog" to the
                checkpoint reaching the backlog's end, events/s. (JDBC runs last: its replica's
                writes land in the same server's binlog.) For Delta, each MERGE's source rows and
                Delta's own timings (``merges``, from the table's log).

Ratios are against the changelog sink of the same run. Results go to
``benchmarks/results/delta.json``.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
from pathlib import Path
from typing import Any

from benchsupport import (
    BENCH_DIR,
    bench_server,
    changelog_sink,
    checkpoint_document,
    cpu_seconds,
    delta_commit_infos,
    jdbc_sink,
    machine,
    mib,
    run_sparkcdc,
    server_pid,
    write_manifest,
    write_results,
)
from rich.console import Console
from rich.table import Table
from snapshot import DATABASE, TABLE, build_table, run_pipeline

from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.options import EngineOptions
from sparkcdc.spark.session import fetch_delta_jars

REPLICA = "benchdelta_replica"
console = Console()


def backlog(server: Any, events: int, seed: int = 11) -> tuple[BinlogOffset, BinlogOffset, int]:
    """Write about ``events`` row changes; returns the offsets before and after them and the
    exact count."""
    file, pos = server.binlog_position()
    start = BinlogOffset(file, pos)
    rng = random.Random(seed)
    rows = int(server.execute(f"SELECT MAX(id) FROM {DATABASE}.{TABLE}")[0][0])
    conn = server.root_connection()
    done, txn = 0, 0
    try:
        with conn.cursor() as cur:
            while done < events:
                txn += 1
                low = rng.randint(1, max(1, rows - 100))
                cur.execute("BEGIN")
                cur.execute(
                    f"UPDATE {DATABASE}.{TABLE} SET customer = customer + 1, status = %s "
                    "WHERE id BETWEEN %s AND %s",
                    (f"s{txn % 7}", low, low + 99),
                )
                done += cur.rowcount
                if txn % 10 == 0:
                    done += cur.execute(f"DELETE FROM {DATABASE}.{TABLE} WHERE id = %s", (low + 100,))
                    rows += 1
                    cur.execute(
                        f"INSERT INTO {DATABASE}.{TABLE} (id, customer, amount, status, note, created,"
                        " updated) VALUES (%s, 1, 1.00, 'new', 'bench insert', NOW(), NOW(3))",
                        (rows + 1_000_000,),
                    )
                    done += 1
                cur.execute("COMMIT")
    finally:
        conn.close()
    file, pos = server.binlog_position()
    return start, BinlogOffset(file, pos), done


def merge_commits(table: Path) -> list[dict[str, int]]:
    """The MERGE commits in a Delta table's log (read from its JSON files, no Spark): source rows
    and Delta's own timings (``operationMetrics``) — how many MERGEs a backlog took, and where
    their time went."""
    merges = []
    for info in delta_commit_infos(table):
        if info.get("operation") == "MERGE":
            metrics = info.get("operationMetrics", {})
            merges.append(
                {
                    "source_rows": int(metrics.get("numSourceRows", 0)),
                    "execution_ms": int(metrics.get("executionTimeMs", 0)),
                    "scan_ms": int(metrics.get("scanTimeMs", 0)),
                    "rewrite_ms": int(metrics.get("rewriteTimeMs", 0)),
                }
            )
    return merges


def run_binlog(
    server: Any, work: Path, name: str, sink: dict[str, Any], start: BinlogOffset, end: BinlogOffset
) -> dict[str, Any]:
    state = work / f"state-{name}"
    shutil.rmtree(state, ignore_errors=True)
    manifest = write_manifest(
        work / f"{name}.yaml",
        name=name,
        server=server,
        tables=[f"{DATABASE}.{TABLE}"],
        sink=sink,
        startup={"mode": "specific-offset", "file": start.file, "position": start.pos},
    )

    def caught_up() -> bool:
        offset = (checkpoint_document(state, name) or {}).get("binlogOffset")
        return bool(offset) and BinlogOffset(offset["file"], int(offset["pos"])) >= end

    server_before = cpu_seconds(server_pid(server))
    run = run_sparkcdc(manifest, state, watch={"caught_up": caught_up})
    if run.returncode != 0:
        raise SystemExit(f"sparkcdc run ({name}) failed with exit code {run.returncode}:\n{run.tail()}")
    began = next((t for t, line in run.lines if "streaming the binlog" in line), None)
    document = checkpoint_document(state, name) or {}
    return {
        # from the first line saying it streams to the checkpoint reaching the backlog's end
        "binlog_seconds": round(run.marks.get("caught_up", run.seconds) - (began or 0.0), 3),
        "wall_seconds": round(run.seconds, 3),
        "cpu_seconds": round(run.cpu, 2),
        "server_cpu_seconds": round(cpu_seconds(server_pid(server)) - server_before, 2),
        "peak_rss_mib": mib(run.peak_rss),
        "checkpoint_offset": str(document.get("binlogOffset", "")),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--chunk-size", type=int, default=20_000)
    parser.add_argument("--splits-per-task", type=int, default=1)
    parser.add_argument("--parallelism", type=int, default=2)
    args = parser.parse_args()
    fetch_delta_jars(EngineOptions.from_environment())  # not part of any timing
    work = BENCH_DIR / "delta-work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    results: dict[str, Any] = {"machine": machine(), "rows": args.rows, "events": args.events}
    with bench_server("delta") as server:
        build_table(server, args.rows)
        # The table is kept between runs, and each backlog inserts keys above 1,000,000: without
        # them again, every run plans the same even splits (else most would be empty).
        server.execute(f"DELETE FROM {DATABASE}.{TABLE} WHERE id > %s", (args.rows,))
        server.execute(f"DROP DATABASE IF EXISTS {REPLICA}")
        server.execute(f"CREATE DATABASE {REPLICA}")
        sinks = {
            "changelog": changelog_sink(work / "changelog"),
            "jdbc": jdbc_sink(server, REPLICA),
            "delta": {"type": "delta", "path": str(work / "lake")},
        }
        snapshot: dict[str, Any] = {}
        for kind, sink in sinks.items():
            console.print(f"snapshot into {kind} …")
            figures = run_pipeline(
                server, work, f"snap-{kind}", sink, args.chunk_size, args.splits_per_task, args.parallelism
            )
            figures["rows_per_second"] = round(args.rows / figures["snapshot_seconds"])
            snapshot[kind] = figures
        start, end, events = backlog(server, args.events)
        console.print(f"backlog: {events:,} row changes from {start} to {end}")
        binlog: dict[str, Any] = {}
        # JDBC last: its replica's writes go to the same server's binlog.
        for kind in ("changelog", "delta", "jdbc"):
            console.print(f"binlog into {kind} …")
            figures = run_binlog(server, work, f"log-{kind}", sinks[kind], start, end)
            figures["events_per_second"] = round(events / figures["binlog_seconds"])
            if kind == "delta":
                figures["merges"] = merge_commits(work / "lake" / DATABASE / TABLE)
            binlog[kind] = figures
        server.execute(f"DROP DATABASE IF EXISTS {REPLICA}")
    base_snap = snapshot["changelog"]["rows_per_second"]
    base_log = binlog["changelog"]["events_per_second"]
    for kind in sinks:
        snapshot[kind]["vs_changelog"] = round(snapshot[kind]["rows_per_second"] / base_snap, 2)
        binlog[kind]["vs_changelog"] = round(binlog[kind]["events_per_second"] / base_log, 2)
    results["backlog_events"] = events
    results["snapshot"] = snapshot
    results["binlog"] = binlog
    path = write_results("delta", results)
    table = Table(title=f"sinks, {args.rows:,} rows snapshot / {events:,} binlog events (results: {path})")
    for column in ("sink", "snapshot rows/s", "vs changelog", "binlog events/s", "vs changelog", "peak MiB"):
        table.add_column(column, justify="right")
    for kind in sinks:
        table.add_row(
            kind,
            f"{snapshot[kind]['rows_per_second']:,}",
            f"{snapshot[kind]['vs_changelog']:.2f}",
            f"{binlog[kind]['events_per_second']:,}",
            f"{binlog[kind]['vs_changelog']:.2f}",
            f"{max(snapshot[kind]['peak_rss_mib'], binlog[kind]['peak_rss_mib'])}",
        )
    console.print(table)


if __name__ == "__main__":
    sys.exit(main())
