"""End-to-end latency: source commit to visible in the sink, under a steady change rate.

    .venv/bin/python benchmarks/latency.py [--rate N] [--seconds N] [--batch-interval-ms N]

Starts a MariaDB (``.bench/latency``) and a running ``sparkcdc run`` (no ``--exit-when-caught-up``)
capturing ``bench.ticks`` into a JDBC replica on the same server. Once it streams, a writer
inserts RATE (default 1,000) rows per second for SECONDS (default 60) seconds in transactions of
5 rows, each row carrying the writer's clock at commit in ``committed_us``; a poller reads new
rows from the replica every 10 ms and records when each became visible. Latency is visible
minus ``committed_us`` (both clocks are this process's), so it includes the binlog read, the
micro-batch wait (``spec.binlog.batchIntervalMs``), the sink commit and up to one poll interval.

Prints p50/p90/p99/max and writes ``benchmarks/results/latency.json``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from typing import Any

from benchsupport import (
    BENCH_DIR,
    bench_server,
    jdbc_sink,
    machine,
    mib,
    run_sparkcdc,
    write_manifest,
    write_results,
)
from rich.console import Console
from rich.table import Table

DATABASE, TABLE = "bench", "ticks"
REPLICA = "bench_replica"
ROWS_PER_TRANSACTION = 5
POLL_SECONDS = 0.01
console = Console(width=None if sys.stdout.isatty() else 150)


def _now_us() -> int:
    return time.time_ns() // 1000


class Workload:
    """Writer and poller around one running ``sparkcdc run``."""

    def __init__(self, server: Any, rate: int, seconds: float) -> None:
        self.server = server
        self.rate = rate
        self.seconds = seconds
        self.committed: dict[int, int] = {}  # id -> writer clock at commit (µs)
        self.visible: dict[int, int] = {}  # id -> first seen in the sink (µs)
        self.behind_schedule = 0.0
        self.error: BaseException | None = None

    def __call__(self, process: subprocess.Popen[bytes], lines: list[tuple[float, str]]) -> None:
        try:
            self._wait_streaming(process, lines)
            done = threading.Event()
            poller = threading.Thread(target=self._poll, args=(done,), daemon=True)
            poller.start()
            self._write()
            deadline = time.monotonic() + 60
            while len(self.visible) < len(self.committed) and time.monotonic() < deadline:
                time.sleep(0.05)
            done.set()
            poller.join()
        except BaseException as err:
            self.error = err
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGINT)  # a clean stop, as Ctrl-C

    def _wait_streaming(self, process: subprocess.Popen[bytes], lines: list[tuple[float, str]]) -> None:
        deadline = time.monotonic() + 300
        while not any("streaming the binlog" in line for _, line in lines):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("sparkcdc run did not start streaming")
            time.sleep(0.05)
        while True:  # the replica table exists once the sink is prepared
            found = self.server.execute(
                "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s",
                (REPLICA, TABLE),
            )
            if found[0][0]:
                return
            time.sleep(0.05)

    def _write(self) -> None:
        conn = self.server.root_connection(DATABASE)
        conn.autocommit(False)
        next_id = 1
        transactions = int(self.rate * self.seconds) // ROWS_PER_TRANSACTION
        interval = ROWS_PER_TRANSACTION / self.rate
        began = time.monotonic()
        try:
            with conn.cursor() as cur:
                for n in range(transactions):
                    due = began + n * interval
                    pause = due - time.monotonic()
                    if pause > 0:
                        time.sleep(pause)
                    else:
                        self.behind_schedule = max(self.behind_schedule, -pause)
                    stamp = _now_us()
                    ids = list(range(next_id, next_id + ROWS_PER_TRANSACTION))
                    cur.execute(
                        f"INSERT INTO {TABLE} (id, committed_us, payload) VALUES "
                        + ", ".join(["(%s, %s, %s)"] * len(ids)),
                        [v for i in ids for v in (i, stamp, f"tick {i}")],
                    )
                    conn.commit()
                    for i in ids:
                        self.committed[i] = stamp
                    next_id += ROWS_PER_TRANSACTION
        finally:
            conn.close()

    def _poll(self, done: threading.Event) -> None:
        conn = self.server.root_connection(REPLICA)
        last = 0
        try:
            with conn.cursor() as cur:
                while not done.is_set():
                    cur.execute(f"SELECT id FROM {TABLE} WHERE id > %s ORDER BY id", (last,))
                    seen = _now_us()
                    for (row_id,) in cur.fetchall():
                        self.visible.setdefault(int(row_id), seen)
                        last = max(last, int(row_id))
                    time.sleep(POLL_SECONDS)
        finally:
            conn.close()


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rate", type=int, default=1000, help="row changes per second")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--batch-interval-ms", type=int, default=None, help="spec.binlog.batchIntervalMs")
    args = parser.parse_args()
    started = machine()
    work = BENCH_DIR / "latency-work"
    work.mkdir(parents=True, exist_ok=True)
    binlog = {"batchIntervalMs": args.batch_interval_ms} if args.batch_interval_ms else None
    with bench_server("latency") as server:
        server.execute(f"CREATE DATABASE IF NOT EXISTS {DATABASE}")
        server.execute(f"DROP TABLE IF EXISTS {DATABASE}.{TABLE}")
        server.execute(f"DROP DATABASE IF EXISTS {REPLICA}")
        server.execute(
            f"CREATE TABLE {DATABASE}.{TABLE} (id BIGINT NOT NULL PRIMARY KEY, committed_us BIGINT NOT NULL, "
            "payload VARCHAR(100))"
        )
        name = "bench-latency"
        state = work / "state"
        manifest = write_manifest(
            work / f"{name}.yaml",
            name=name,
            server=server,
            tables=[f"{DATABASE}.{TABLE}"],
            sink=jdbc_sink(server, REPLICA),
            startup={"mode": "latest"},
            binlog=binlog,
        )
        shutil.rmtree(state, ignore_errors=True)
        workload = Workload(server, args.rate, args.seconds)
        run = run_sparkcdc(
            manifest, state, exit_when_caught_up=False, on_start=workload, timeout=args.seconds + 600
        )
        if workload.error is not None:
            raise SystemExit(f"the workload failed: {workload.error}\n{run.tail()}")
        server.execute(f"DROP DATABASE IF EXISTS {REPLICA}")

    latencies = [
        (workload.visible[i] - stamp) / 1000
        for i, stamp in workload.committed.items()
        if i in workload.visible
    ]
    missing = len(workload.committed) - len(latencies)
    figures = {
        "changes": len(workload.committed),
        "missing": missing,
        "p50_ms": round(statistics.median(latencies), 1),
        "p90_ms": round(_percentile(latencies, 0.90), 1),
        "p99_ms": round(_percentile(latencies, 0.99), 1),
        "max_ms": round(max(latencies), 1),
        "writer_max_behind_schedule_ms": round(workload.behind_schedule * 1000, 1),
        "peak_rss_mib": mib(run.peak_rss),
    }
    results = {
        "benchmark": "latency",
        "machine": started,
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        "settings": {
            "rate_per_second": args.rate,
            "seconds": args.seconds,
            "rows_per_transaction": ROWS_PER_TRANSACTION,
            "poll_interval_ms": POLL_SECONDS * 1000,
            "batch_interval_ms": args.batch_interval_ms or "default",
        },
        "results": figures,
        "target": {"p99_ms": 1000},
    }
    path = write_results("latency", results)
    table = Table(title=f"commit → visible in the JDBC sink, {args.rate:,} changes/s for {args.seconds:.0f}s")
    for column in ("changes", "missing", "p50", "p90", "p99", "max", "peak RSS"):
        table.add_column(column, justify="right")
    table.add_row(
        f"{figures['changes']:,}",
        str(missing),
        f"{figures['p50_ms']:.0f} ms",
        f"{figures['p90_ms']:.0f} ms",
        f"{figures['p99_ms']:.0f} ms",
        f"{figures['max_ms']:.0f} ms",
        f"{figures['peak_rss_mib']:,.0f} MiB",
    )
    console.print(table)
    console.print(f"results written to {path}")


if __name__ == "__main__":
    sys.exit(main())
