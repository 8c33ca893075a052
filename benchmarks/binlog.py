"""Binlog catch-up throughput: a backlog of row changes decoded and applied, side by side in one run.

    .venv/bin/python benchmarks/binlog.py [--changes N]

Builds (once, kept in ``.bench/binlog``) a backlog of N (default 1,000,000) row changes on an
initially empty 7-column table ``bench.changes``: rounds of 10,000 inserts, 6,000 updates and
4,000 deletes, 1,000 rows per transaction. Then measures over exactly that binlog range:

* ``mariadb-binlog``              ``mariadb-binlog --base64-output=decode-rows -v`` over the binlog
                                  files, output discarded (the C baseline every ratio refers to);
* ``python-mysql-replication``    the bare decode loop: ``BinLogStreamReader`` over the range,
                                  touching every row's values;
* ``sparkcdc-binlogdec``          the Go decoder of parallel catch-up (binlogdec/) over the
                                  whole range in one process: decode, reduce to the last image per
                                  key, canonical rows in Python (``binlog_native.decode_range``);
* ``sparkcdc reader``             sparkcdc's own reader (``read_changes``: decode plus canonical
                                  values), no sink;
* ``sparkcdc → jdbc, single reader``  ``sparkcdc run`` with ``startup.mode: specific-offset`` at
                                  the backlog start and ``--exit-when-caught-up``, applying to a
                                  JDBC replica on the same server; timed from the first checkpoint
                                  to the checkpoint at the backlog end;
* ``sparkcdc → jdbc, parallel catch-up``  the same run with ``binlog.parallelCatchupThresholdBytes``
                                  below the backlog: ranges decoded by ``snapshot.parallelism``
                                  (2) Spark tasks, reduced, applied (engine/catchup.py); timed the
                                  same way, so it includes starting Spark.

``--only NAME,...`` runs a subset (``mariadb-binlog``, ``bare``, ``go``, ``reader``, ``single``,
``parallel``) while iterating; the results file is written by full runs only.

Results go to ``benchmarks/results/binlog.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchsupport import (
    BENCH_DIR,
    bench_server,
    checkpoint_document,
    jdbc_sink,
    machine,
    mib,
    run_sparkcdc,
    write_manifest,
    write_results,
)
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent
from rich.console import Console
from rich.table import Table

from sparkcdc.core.checkpoint import decode
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.binlog.native import decode_range, decoder_path
from sparkcdc.mysql.binlog.reader import read_changes
from sparkcdc.mysql.connection import SourceConfig, connect
from sparkcdc.mysql.schema import load_table_schema
from sparkcdc.options import EngineOptions

DATABASE, TABLE = "bench", "changes"
REPLICA = "bench_replica"
ROUND = (10_000, 6_000, 4_000)  # inserts, updates, deletes per round
PER_TRANSACTION = 1_000
console = Console(width=None if sys.stdout.isatty() else 150)


def _backlog_file(server: Any) -> Path:
    return Path(server.base_dir) / "backlog.json"


def _binlog_files(server: Any) -> list[str]:
    return [str(row[0]) for row in server.execute("SHOW BINARY LOGS")]


def build_backlog(server: Any, changes: int) -> tuple[BinlogOffset, BinlogOffset]:
    """The backlog's (start, stop) binlog range, built on first use and remembered."""
    path = _backlog_file(server)
    if path.is_file():
        saved = json.loads(path.read_text())
        start = BinlogOffset(saved["start"]["file"], saved["start"]["pos"])
        stop = BinlogOffset(saved["stop"]["file"], saved["stop"]["pos"])
        if saved.get("changes") == changes and start.file in _binlog_files(server):
            return start, stop
    per_round = sum(ROUND)
    if changes % per_round:
        raise SystemExit(f"--changes must be a multiple of {per_round}")
    console.print(f"building a backlog of {changes:,} row changes (once; kept in {BENCH_DIR})")
    server.execute(f"CREATE DATABASE IF NOT EXISTS {DATABASE}")
    server.execute(f"DROP TABLE IF EXISTS {DATABASE}.{TABLE}")
    server.execute(
        f"CREATE TABLE {DATABASE}.{TABLE} (id BIGINT NOT NULL PRIMARY KEY, customer INT, "
        "amount DECIMAL(12,2), status VARCHAR(20), note VARCHAR(100), created DATETIME, "
        "updated TIMESTAMP(3) NULL)"
    )
    server.execute("FLUSH BINARY LOGS")
    start = BinlogOffset(*server.binlog_position())
    table = f"{DATABASE}.{TABLE}"
    inserts, updates, _ = ROUND  # the rest of each round's rows are deleted
    for r in range(changes // per_round):
        base = r * inserts
        for lo in range(base + 1, base + inserts + 1, PER_TRANSACTION):
            hi = lo + PER_TRANSACTION - 1
            server.execute(
                f"INSERT INTO {table} SELECT seq, seq % 9973, (seq % 100000) / 100, "
                "ELT(1 + seq % 4, 'new', 'paid', 'shipped', 'Cancelled'), "
                "CONCAT('order ', seq, ' for customer ', seq % 9973), "
                "TIMESTAMP'2024-01-01 00:00:00' + INTERVAL seq SECOND, "
                "TIMESTAMP'2024-01-01 00:00:00' + INTERVAL seq SECOND + INTERVAL (seq % 1000) MICROSECOND "
                f"FROM {DATABASE}.seq_{lo}_to_{hi}"
            )
        for lo in range(base + 1, base + updates + 1, PER_TRANSACTION):
            server.execute(
                f"UPDATE {table} SET amount = amount + 1, status = 'paid', "
                f"updated = updated + INTERVAL 1 SECOND WHERE id BETWEEN {lo} AND {lo + PER_TRANSACTION - 1}"
            )
        for lo in range(base + updates + 1, base + inserts + 1, PER_TRANSACTION):
            server.execute(f"DELETE FROM {table} WHERE id BETWEEN {lo} AND {lo + PER_TRANSACTION - 1}")
    stop = BinlogOffset(*server.binlog_position())
    path.write_text(
        json.dumps(
            {
                "changes": changes,
                "start": {"file": start.file, "pos": start.pos},
                "stop": {"file": stop.file, "pos": stop.pos},
            }
        )
    )
    return start, stop


def source_config(server: Any) -> SourceConfig:
    return SourceConfig(
        host=server.host,
        port=server.port,
        user=server.cdc_user,
        password=server.cdc_password,
        tls_mode="disabled",
    )


def mariadb_binlog(server: Any, start: BinlogOffset, stop: BinlogOffset) -> tuple[float, int]:
    """Seconds for ``mariadb-binlog`` to decode the range; also the row events it printed."""
    names = _binlog_files(server)
    files = [
        str(Path(server.data_dir) / n) for n in names[names.index(start.file) : names.index(stop.file) + 1]
    ]
    command = [
        "mariadb-binlog",
        "--no-defaults",
        "--base64-output=decode-rows",
        "-v",
        f"--start-position={start.pos}",
        f"--stop-position={stop.pos}",
        *files,
    ]
    best = float("inf")
    for _ in range(2):
        began = time.perf_counter()
        subprocess.run(command, stdout=subprocess.DEVNULL, check=True)
        best = min(best, time.perf_counter() - began)
    counted = subprocess.run(command, stdout=subprocess.PIPE, check=True).stdout
    rows = sum(counted.count(f"\n### {verb} ".encode()) for verb in ("INSERT INTO", "UPDATE", "DELETE FROM"))
    return best, rows


def replication_loop(server: Any, start: BinlogOffset, stop: BinlogOffset) -> tuple[float, int]:
    """python-mysql-replication's bare loop: every row of every rows event, values touched."""
    cfg = source_config(server)
    settings = {"host": cfg.host, "port": cfg.port, "user": cfg.user, "passwd": cfg.password}
    stream = BinLogStreamReader(
        connection_settings=settings,
        server_id=4_100_001,
        log_file=start.file,
        log_pos=start.pos,
        resume_stream=True,
        blocking=False,
        only_events=[WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent],
        enable_logging=False,
    )
    rows = 0
    began = time.perf_counter()
    try:
        for event in stream:
            position = BinlogOffset(str(stream.log_file), int(stream.log_pos))
            if position > stop:  # the benchmark's own later writes (replicas on this server)
                break
            for _row in event.rows:  # decodes every image of the event
                rows += 1
            if position >= stop:
                break
    finally:
        stream.close()
    return time.perf_counter() - began, rows


def sparkcdc_reader(server: Any, start: BinlogOffset, stop: BinlogOffset) -> tuple[float, int]:
    cfg = source_config(server)
    conn = connect(cfg)
    try:
        schema = load_table_schema(conn, TableId(DATABASE, TABLE))
    finally:
        conn.close()
    began = time.perf_counter()
    count = sum(1 for _ in read_changes(cfg, 4_100_002, start, stop, {schema.table: schema}))
    return time.perf_counter() - began, count


def go_decoder(server: Any, start: BinlogOffset, stop: BinlogOffset) -> tuple[float, int]:
    """The Go decoder of parallel catch-up over the whole range in one process: decoded, reduced
    to the last image per key and converted to canonical rows (``binlog_native.decode_range``)."""
    options = EngineOptions.from_environment()
    binary = decoder_path(options.binlog_decoder, options.cache_dir)
    if binary is None:
        raise SystemExit("the Go decoder is not built: bash binlogdec/build.sh")
    cfg = replace(source_config(server), tls_mode="disabled")
    conn = connect(cfg)
    try:
        schema = load_table_schema(conn, TableId(DATABASE, TABLE))
    finally:
        conn.close()
    began = time.perf_counter()
    found = decode_range(binary, cfg, 4_100_003, {schema.table: schema}, start, stop)
    assert found is not None, "the Go decoder declined the backlog"
    return time.perf_counter() - began, found.events


def sparkcdc_apply(
    server: Any, work: Path, start: BinlogOffset, stop: BinlogOffset, *, parallel: bool
) -> dict[str, Any]:
    name = "bench-binlog-parallel" if parallel else "bench-binlog"
    # Parallel: any backlog over 1 MiB is caught up by ranges; single: catch-up off.
    threshold = 1024 * 1024 if parallel else 0
    state = work / "state"
    shutil.rmtree(state, ignore_errors=True)
    server.execute(f"DROP DATABASE IF EXISTS {REPLICA}")
    manifest = write_manifest(
        work / f"{name}.yaml",
        name=name,
        server=server,
        tables=[f"{DATABASE}.{TABLE}"],
        sink=jdbc_sink(server, REPLICA),
        startup={"mode": "specific-offset", "file": start.file, "position": start.pos},
        snapshot={"parallelism": 2},
        binlog={"parallelCatchupThresholdBytes": threshold},
    )

    def offset() -> BinlogOffset | None:
        document = checkpoint_document(state, name)
        return None if document is None else decode(document).binlog_offset

    def begun() -> bool:
        return offset() is not None

    def caught_up() -> bool:
        current = offset()
        return current is not None and current >= stop

    run = run_sparkcdc(manifest, state, watch={"started": begun, "caught_up": caught_up}, timeout=3600)
    if run.returncode != 0:
        raise SystemExit(f"sparkcdc run failed with exit code {run.returncode}:\n{run.tail()}")
    source_sum = server.execute(f"CHECKSUM TABLE {DATABASE}.{TABLE}")[0][1]
    replica_sum = server.execute(f"CHECKSUM TABLE {REPLICA}.{TABLE}")[0][1]
    assert source_sum == replica_sum, "the replica differs from the source after the catch-up"
    server.execute(f"DROP DATABASE IF EXISTS {REPLICA}")
    began = run.marks.get("started", 0.0)
    ended = run.marks.get("caught_up", run.seconds)
    log = [f"{at - began:7.2f}s {line.strip()}" for at, line in run.lines if "catch-up" in line]
    for line in log:
        console.print(f"  {line}", markup=False, highlight=False)
    return {
        "seconds": round(ended - began, 3),
        "wall_seconds": round(run.seconds, 3),
        "cpu_seconds_tree": round(
            run.cpu_marks.get("caught_up", run.cpu) - run.cpu_marks.get("started", 0.0), 2
        ),
        "peak_rss_mib": mib(run.peak_rss),
        **({"catchup_log": log} if log else {}),
    }


STAGES = ("mariadb-binlog", "bare", "go", "reader", "single", "parallel")
LABELS = {
    "mariadb-binlog": "mariadb-binlog (decode-rows -v)",
    "bare": "python-mysql-replication (bare loop)",
    "go": "sparkcdc-binlogdec (Go), one process, decode + reduce, no sink",
    "reader": "sparkcdc reader (no sink)",
    "single": "sparkcdc → jdbc, single reader",
    "parallel": "sparkcdc → jdbc, parallel catch-up",
}


def measure(
    stage: str, server: Any, work: Path, start: BinlogOffset, stop: BinlogOffset, changes: int
) -> dict[str, Any]:
    if stage in ("single", "parallel"):
        return sparkcdc_apply(server, work, start, stop, parallel=stage == "parallel")
    decode = {
        "mariadb-binlog": mariadb_binlog,
        "bare": replication_loop,
        "go": go_decoder,
        "reader": sparkcdc_reader,
    }[stage]
    seconds, rows = decode(server, start, stop)
    assert rows == changes, f"{stage} decoded {rows} row events, not {changes}"
    return {"seconds": round(seconds, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--changes", type=int, default=1_000_000)
    parser.add_argument("--only", default=",".join(STAGES), help="comma-separated stages to run")
    args = parser.parse_args()
    stages = [s for s in STAGES if s in args.only.split(",")]
    started = machine()
    work = BENCH_DIR / "binlog-work"
    work.mkdir(parents=True, exist_ok=True)
    measured: dict[str, dict[str, Any]] = {}
    with bench_server("binlog") as server:
        start, stop = build_backlog(server, args.changes)
        console.print(f"backlog {start} → {stop}: {args.changes:,} row changes")
        for stage in stages:
            measured[LABELS[stage]] = figures = measure(stage, server, work, start, stop, args.changes)
            console.print(f"{LABELS[stage]}: {figures}")

    baseline = measured.get(LABELS["mariadb-binlog"], {}).get("seconds")
    for figures in measured.values():
        figures["row_events_per_second"] = round(args.changes / figures["seconds"])
        if baseline:
            figures["ratio_to_mariadb_binlog"] = round(baseline / figures["seconds"], 3)
    table = Table(title=f"binlog backlog of {args.changes:,} row changes (insert/update/delete)")
    for column in ("path", "seconds", "row events/s", "× mariadb-binlog", "CPU s (tree)", "peak RSS"):
        table.add_column(column, justify="left" if column == "path" else "right")
    for name, figures in measured.items():
        table.add_row(
            name,
            f"{figures['seconds']:.2f}",
            f"{figures['row_events_per_second']:,}",
            f"{figures['ratio_to_mariadb_binlog']:.3f}" if "ratio_to_mariadb_binlog" in figures else "",
            f"{figures['cpu_seconds_tree']:.1f}" if "cpu_seconds_tree" in figures else "",
            f"{figures['peak_rss_mib']:,.0f} MiB" if "peak_rss_mib" in figures else "",
        )
    console.print(table)
    if stages != list(STAGES):
        return
    results = {
        "benchmark": "binlog",
        "machine": started,
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        "settings": {"row_changes": args.changes, "round": ROUND, "rows_per_transaction": PER_TRANSACTION},
        "results": measured,
        "target": {"parallel_catchup_row_events_per_second": 100_000},
    }
    console.print(f"results written to {write_results('binlog', results)}")


if __name__ == "__main__":
    main()
