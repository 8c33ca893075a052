"""What TLS costs the fast paths: snapshot reads and binlog decoding with TLS off and on, side by side.

    .venv/bin/python benchmarks/tls.py [--rows N] [--changes N] [--repeat K]

Before, a source with any TLS mode but ``disabled`` silently left the fast paths: snapshot splits
went to PyMySQL instead of ConnectorX and the binlog to python-mysql-replication instead of the Go
decoder, 5-10 times slower. Now both get the source's TLS settings (mysql/tls.py). This measures,
on one MariaDB that offers TLS (a CA and certificate made by testing/pki.py, kept in ``.bench/``):

* snapshot rows/s: a table of N rows (default 300,000; 7 columns) read in 50,000-row splits by
  ``read_chunk`` on ConnectorX, with ``tls.mode: disabled`` and with ``verify-identity`` (CA
  given); and, for reference, by PyMySQL over TLS (the old fallback);
* stream events/s: a binlog range of N row changes (default 100,000: inserts, updates and
  deletes, 1,000 rows per transaction) decoded by the Go decoder (``decode_range``) with TLS off
  and on; and, for reference, by sparkcdc's Python reader over TLS (the old fallback).

Each figure is the best of ``--repeat`` runs (default 3): the machine is shared. Results go to
``benchmarks/results/tls.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from benchsupport import BENCH_DIR, bench_server, machine, write_results
from rich.console import Console
from rich.table import Table

from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.splits import SnapshotSplit
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.binlog.native import decode_range, decoder_path
from sparkcdc.mysql.binlog.reader import read_changes
from sparkcdc.mysql.chunk_reader import chunk_read_method, read_chunk
from sparkcdc.mysql.connection import SourceConfig, connect
from sparkcdc.mysql.schema import TableSchema, load_table_schema
from sparkcdc.options import EngineOptions
from sparkcdc.testing.mariadb import tls_options
from sparkcdc.testing.pki import ServerPki, make_server_pki

DATABASE = "bench_tls"
SNAP, CHANGES = TableId(DATABASE, "snap"), TableId(DATABASE, "changes")
SPLIT_ROWS = 50_000
PER_TRANSACTION = 1_000
console = Console(width=None if sys.stdout.isatty() else 150)


def _pki() -> ServerPki:
    folder = BENCH_DIR / "tls-pki"
    if (folder / "server.crt").is_file():
        return ServerPki(folder / "ca.crt", folder / "server.crt", folder / "server.key")
    return make_server_pki(folder)


def _configs(server: Any, pki: ServerPki) -> dict[str, SourceConfig]:
    plain = SourceConfig(server.host, server.port, server.cdc_user, server.cdc_password, tls_mode="disabled")
    return {"off": plain, "on": replace(plain, tls_mode="verify-identity", ca_pem=pki.ca_pem)}


def _fill(server: Any, rows: int) -> None:
    server.execute(f"CREATE DATABASE IF NOT EXISTS {DATABASE}")
    have = server.execute(
        "SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND TABLE_NAME = 'snap'",
        (DATABASE,),
    )
    if have and server.execute(f"SELECT COUNT(*) FROM {DATABASE}.snap")[0][0] == rows:
        return
    console.print(f"building {DATABASE}.snap with {rows:,} rows (once; kept in {BENCH_DIR})")
    server.execute(f"DROP TABLE IF EXISTS {DATABASE}.snap")
    server.execute(
        f"CREATE TABLE {DATABASE}.snap (id BIGINT PRIMARY KEY, customer INT, amount DECIMAL(12,2), "
        "status VARCHAR(20), note VARCHAR(100), created DATETIME, updated TIMESTAMP(3) NULL)"
    )
    server.execute(
        f"INSERT INTO {DATABASE}.snap SELECT seq, seq % 9973, (seq % 100000) / 100, "
        "ELT(1 + seq % 4, 'new', 'paid', 'shipped', 'Cancelled'), "
        "CONCAT('order ', seq, ' for customer ', seq % 9973), "
        "TIMESTAMP'2024-01-01 00:00:00' + INTERVAL seq SECOND, "
        f"TIMESTAMP'2024-01-01 00:00:00' + INTERVAL seq SECOND FROM {DATABASE}.seq_1_to_{rows}"
    )


def _backlog(server: Any, changes: int) -> tuple[BinlogOffset, BinlogOffset]:
    """A fresh range of ``changes`` row changes: half inserts, a quarter updates, a quarter deletes."""
    server.execute(f"DROP TABLE IF EXISTS {DATABASE}.changes")
    server.execute(
        f"CREATE TABLE {DATABASE}.changes (id BIGINT PRIMARY KEY, customer INT, amount DECIMAL(12,2), "
        "status VARCHAR(20), note VARCHAR(100), created DATETIME, updated TIMESTAMP(3) NULL)"
    )
    start = BinlogOffset(*server.binlog_position())
    inserts = changes // 2
    for lo in range(1, inserts + 1, PER_TRANSACTION):
        hi = min(inserts, lo + PER_TRANSACTION - 1)
        server.execute(
            f"INSERT INTO {DATABASE}.changes SELECT seq, seq % 9973, seq / 100, 'new', "
            f"CONCAT('order ', seq), NOW(), NOW(3) FROM {DATABASE}.seq_{lo}_to_{hi}"
        )
    for lo in range(1, inserts // 2 + 1, PER_TRANSACTION):
        hi = lo + PER_TRANSACTION - 1
        server.execute(
            f"UPDATE {DATABASE}.changes SET status = 'paid', amount = amount + 1 "
            f"WHERE id BETWEEN {lo} AND {hi}"
        )
    for lo in range(inserts // 2 + 1, inserts + 1, PER_TRANSACTION):
        hi = lo + PER_TRANSACTION - 1
        server.execute(f"DELETE FROM {DATABASE}.changes WHERE id BETWEEN {lo} AND {hi}")
    return start, BinlogOffset(*server.binlog_position())


def _schema(cfg: SourceConfig, table: TableId) -> TableSchema:
    conn = connect(cfg)
    try:
        return load_table_schema(conn, table)
    finally:
        conn.close()


def _best(repeat: int, run: Callable[[], int]) -> tuple[float, int]:
    best, count = float("inf"), 0
    for _ in range(repeat):
        began = time.perf_counter()
        count = run()
        best = min(best, time.perf_counter() - began)
    return best, count


def snapshot(cfg: SourceConfig, schema: TableSchema, rows: int, reader: str, repeat: int) -> dict[str, Any]:
    splits = [
        SnapshotSplit(
            SNAP, i, None if lo == 1 else (lo,), None if lo + SPLIT_ROWS > rows else (lo + SPLIT_ROWS,)
        )
        for i, lo in enumerate(range(1, rows + 1, SPLIT_ROWS))
    ]

    def run() -> int:
        conn = connect(cfg, streaming=True)
        try:
            return sum(read_chunk(conn, schema, s, reader=reader).num_rows for s in splits)
        finally:
            conn.close()

    conn = connect(cfg, streaming=True)
    try:
        method = chunk_read_method(conn, reader)
    finally:
        conn.close()
    seconds, count = _best(repeat, run)
    assert count == rows, (count, rows)
    return {
        "method": method,
        "seconds": round(seconds, 3),
        "rows": count,
        "rows_per_s": round(count / seconds),
    }


def stream(
    cfg: SourceConfig, schema: TableSchema, span: tuple[BinlogOffset, BinlogOffset], go: bool, repeat: int
) -> dict[str, Any]:
    start, stop = span
    options = EngineOptions.from_environment()
    binary = decoder_path(options.binlog_decoder, options.cache_dir)
    if go and binary is None:
        raise SystemExit("the Go decoder is not built: bash binlogdec/build.sh")

    def run() -> int:
        if go:
            assert binary is not None
            found = decode_range(binary, cfg, 4_200_001, {CHANGES: schema}, start, stop)
            assert found is not None, "the Go decoder declined the range"
            return found.events
        return sum(1 for _ in read_changes(cfg, 4_200_002, start, stop, {CHANGES: schema}))

    seconds, count = _best(repeat, run)
    method = "go-decoder" if go else "python-mysql-replication"
    return {
        "method": method,
        "seconds": round(seconds, 3),
        "events": count,
        "events_per_s": round(count / seconds),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=300_000)
    parser.add_argument("--changes", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    pki = _pki()
    results: dict[str, Any] = {"machine": machine(), "rows": args.rows, "changes": args.changes}
    with bench_server("tls", extra_options=tls_options(pki.ca, pki.cert, pki.key, require=False)) as server:
        _fill(server, args.rows)
        configs = _configs(server, pki)
        snap_schema = _schema(configs["off"], SNAP)
        span = _backlog(server, args.changes)
        change_schema = _schema(configs["off"], CHANGES)
        results["snapshot"] = {
            "off": snapshot(configs["off"], snap_schema, args.rows, "auto", args.repeat),
            "on": snapshot(configs["on"], snap_schema, args.rows, "auto", args.repeat),
            "on_old_fallback": snapshot(configs["on"], snap_schema, args.rows, "pymysql", args.repeat),
        }
        results["stream"] = {
            "off": stream(configs["off"], change_schema, span, True, args.repeat),
            "on": stream(configs["on"], change_schema, span, True, args.repeat),
            "on_old_fallback": stream(configs["on"], change_schema, span, False, 1),
        }
    snap, strm = results["snapshot"], results["stream"]
    results["ratios"] = {
        "snapshot_on_vs_off": round(snap["on"]["rows_per_s"] / snap["off"]["rows_per_s"], 3),
        "snapshot_on_vs_old_fallback": round(
            snap["on"]["rows_per_s"] / snap["on_old_fallback"]["rows_per_s"], 2
        ),
        "stream_on_vs_off": round(strm["on"]["events_per_s"] / strm["off"]["events_per_s"], 3),
        "stream_on_vs_old_fallback": round(
            strm["on"]["events_per_s"] / strm["on_old_fallback"]["events_per_s"], 2
        ),
    }
    table = Table(title="TLS off vs on (verify-identity), best of runs")
    for column in ("phase", "TLS", "path", "per second"):
        table.add_column(column)
    for phase, unit in (("snapshot", "rows_per_s"), ("stream", "events_per_s")):
        for label, key in (("off", "off"), ("on", "on"), ("on, old fallback", "on_old_fallback")):
            figure = results[phase][key]
            table.add_row(phase, label, figure["method"], f"{figure[unit]:,}")
    console.print(table)
    console.print(json.dumps(results["ratios"]))
    path = write_results("tls", results)
    console.print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
