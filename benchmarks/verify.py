"""Verification throughput: ``sparkcdc verify`` of a 1M-row replica, next to the snapshot that
built it, in one run.

    .venv/bin/python benchmarks/verify.py [--rows N] [--chunk-size N] [--parallelism N]

Builds (once, kept in ``.bench/verify``) ``bench.orders`` with ROWS (default 1,000,000) rows × 7
columns (BIGINT key, INT, DECIMAL(12,2), two VARCHARs, DATETIME, TIMESTAMP(3)) on a MariaDB whose
buffer pool holds it — the table of benchmarks/snapshot.py — and then measures, side by side:

* ``mariadb client``     ``mariadb -e 'select * from bench.orders' > /dev/null``, best of 2: the
                         architecture §4 baseline every ratio refers to;
* ``checksum query``     the source half of verification as one SQL statement from one client:
                         ``COUNT(*)`` and the sum of the canonical row hashes over the whole
                         table (sparkcdc.verify.checksum) — the server's hashing cost alone;
* ``snapshot``           ``sparkcdc run`` (initial mode, ``--exit-when-caught-up``) into a JDBC
                         replica ``bench_replica`` on the same server: the snapshot phase, from
                         planning to the last split committed (checkpoint file);
* ``verify``             ``sparkcdc verify`` of that replica (source and sink both checksummed,
                         chunk by chunk, in Spark tasks): the verification phase as its JSON
                         report times it, and the wall time of the command (JVM start included);
* ``verify, 10 edits``   the same after altering 10 rows in the sink: the first pass plus the
                         row-by-row re-check of the chunks that differ.

Rows/s are source rows per second; verification reads every row twice (source and sink, here
on the same server). Results go to ``benchmarks/results/verify.json``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchsupport import (
    BENCH_DIR,
    bench_server,
    jdbc_sink,
    machine,
    mariadb_client_command,
    run_sparkcdc,
    sparkcdc_env,
    table_rows,
    write_manifest,
    write_results,
)
from rich.console import Console
from rich.table import Table

from sparkcdc.core.splits import SnapshotSplit
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.connection import SourceConfig, connect
from sparkcdc.mysql.schema import load_table_schema
from sparkcdc.verify.checksum import mysql_checksum_sql

DATABASE, TABLE, REPLICA, NAME = "bench", "orders", "bench_replica", "verify-bench"
console = Console()


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
    server.execute("SET SESSION sql_log_bin = 0")
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


def client_scan(server: Any) -> float:
    best = float("inf")
    for _ in range(2):
        start = time.perf_counter()
        command = mariadb_client_command(server, f"select * from {DATABASE}.{TABLE}")
        subprocess.run(command, stdout=subprocess.DEVNULL, check=True)
        best = min(best, time.perf_counter() - start)
    return best


def checksum_query(server: Any) -> float:
    cfg = SourceConfig(server.host, server.port, server.cdc_user, server.cdc_password, tls_mode="disabled")
    conn = connect(cfg)
    try:
        schema = load_table_schema(conn, TableId(DATABASE, TABLE))
        sql, params = mysql_checksum_sql(
            schema, SnapshotSplit(schema.table, 0, None, None), f"{DATABASE}.{TABLE}"
        )
        start = time.perf_counter()
        with conn.cursor() as cur:
            cur.execute(sql, params)
            cur.fetchall()
        return time.perf_counter() - start
    finally:
        conn.close()


def snapshot(manifest: Path, state: Path) -> dict[str, Any]:
    checkpoint = state / f"{NAME}.checkpoint.json"

    def planned() -> bool:
        return checkpoint.is_file()

    def done() -> bool:
        return checkpoint.is_file() and bool(json.loads(checkpoint.read_text()).get("snapshotDone", False))

    run = run_sparkcdc(manifest, state, watch={"planned": planned, "done": done})
    if run.returncode != 0:
        raise SystemExit(f"sparkcdc run failed:\n{run.tail()}")
    begin = run.marks.get("planned", 0.0)
    end = run.marks.get("done", run.seconds)
    return {"seconds": round(end - begin, 2), "wall_seconds": round(run.seconds, 2)}


def verify(manifest: Path, state: Path, report: Path) -> dict[str, Any]:
    command = [sys.executable, "-m", "sparkcdc", "verify", str(manifest), "--state-dir", str(state)]
    command += ["--report", str(report)]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=sparkcdc_env(), check=False)
    wall = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"sparkcdc verify failed ({done.returncode}):\n{done.stderr[-4000:]}")
    (pipeline,) = json.loads(report.read_text())["pipelines"]
    return {
        "exit_code": done.returncode,
        "seconds": pipeline["seconds"],
        "wall_seconds": round(wall, 2),
        "rows": pipeline["rowsVerified"],
        "chunks": pipeline["chunksChecked"],
        "differing": pipeline["chunksDiffering"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--chunk-size", type=int, default=50_000)
    parser.add_argument("--parallelism", type=int, default=2)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="sparkcdc-verify-bench-"))
    results: dict[str, Any] = {"machine": machine(), "rows": args.rows, "chunk_size": args.chunk_size}
    try:
        with bench_server("verify") as server:
            build_table(server, args.rows)
            server.execute(f"DROP DATABASE IF EXISTS {REPLICA}")
            manifest = write_manifest(
                work / "verify.yaml",
                name=NAME,
                server=server,
                tables=[f"{DATABASE}.{TABLE}"],
                sink=jdbc_sink(server, REPLICA),
                startup={"mode": "initial"},
                snapshot={"chunkSize": args.chunk_size, "parallelism": args.parallelism},
            )
            state = work / "state"
            results["mariadb_client_seconds"] = round(client_scan(server), 3)
            results["checksum_query_seconds"] = round(checksum_query(server), 3)
            results["snapshot"] = snapshot(manifest, state)
            results["verify"] = verify(manifest, state, work / "clean.json")
            server.execute(f"UPDATE {REPLICA}.{TABLE} SET amount = amount + 1 WHERE id % 100000 = 7")
            results["verify_10_edits"] = verify(manifest, state, work / "edits.json")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report(results)
    console.print(f"results: {write_results('verify', results)}")


def report(results: dict[str, Any]) -> None:
    rows = results["rows"]
    baseline = rows / results["mariadb_client_seconds"]
    table = Table(title=f"verification of {rows:,} rows ({results['machine']['cpus']} cpus)")
    for column in ("path", "seconds", "rows/s", "vs mariadb client", "note"):
        table.add_column(column)

    def add(path: str, seconds: float, note: str = "") -> None:
        rate = rows / seconds if seconds else 0.0
        table.add_row(path, f"{seconds:.2f}", f"{rate:,.0f}", f"{rate / baseline:.2f}", note)

    add("mariadb client scan", results["mariadb_client_seconds"], "baseline")
    add("checksum query (1 client)", results["checksum_query_seconds"], "source hashing only")
    snap = results["snapshot"]
    add("sparkcdc run: snapshot phase", snap["seconds"], f"wall {snap['wall_seconds']:.1f}s")
    for key, label in (("verify", "sparkcdc verify"), ("verify_10_edits", "sparkcdc verify, 10 sink edits")):
        run = results[key]
        note = f"wall {run['wall_seconds']:.1f}s, {run['chunks']} chunks, {run['differing']} differing"
        add(label, run["seconds"], note)
    console.print(table)
    ratio = snap["seconds"] / results["verify"]["seconds"]
    console.print(f"verification is {ratio:.2f}× the snapshot's rows/s in the same run")


if __name__ == "__main__":
    main()
