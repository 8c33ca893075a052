"""Live binlog streaming, side by side with Debezium and Flink CDC on the same table and backlog.

    .venv/bin/python benchmarks/stream.py [--rows N] [--changes N] [--no-delta] [--path-timeout S]
    make bench-stream

Runs the peers harness (``../shared/peers/bench.py``, README.md beside it) with ``--start``: a
throwaway MariaDB, a table of ``--rows`` (1,000,000) rows x 7 columns and a backlog of ``--changes``
(1,000,000) row updates, 1,000 per transaction; over exactly that binlog range it measures

* ``mariadb-binlog --read-from-remote-server -v``, the C baseline every ratio refers to (step d);
* Debezium's embedded engine resumed from its own snapshot's offsets (step e: its snapshot, step
  b, must run first, so the snapshot steps are not skipped) and Flink CDC's ``MySqlSource`` from
  ``specificOffset`` at the backlog start (step f), records counted, not serialized;
* sparkcdc's live path, run last as the peers' ``--sparkcdc "stream.py --hook"`` (step g): one
  ``sparkcdc run --exit-when-caught-up`` per path with ``startup: specific-offset`` at the backlog
  start, ``binlog.parallelCatchupThresholdBytes: 0`` (no parallel catch-up: the whole backlog goes
  through the live path) and ``batchRows: 20000``, timed from its ``streaming the binlog from`` line
  (else its first checkpoint) to its checkpoint at the backlog end:
  ``jdbc (Go decoder)``, a replica on the same server that must equal the source afterwards, read
  with the Go decoder (checked in the log); ``jdbc (python-mysql-replication)``, the same with
  ``SPARKCDC_BINLOG_DECODER=python``; ``changelog``, into a temporary directory; ``delta``
  (unless ``--no-delta``), stopped after ``--path-timeout`` s (then the last ``(N in all)`` line's
  rate, "partial"), its note saying how its binlog commits went (appends into the table that
  starts empty, MERGEs of rows it holds).
  The paths writing nothing to the server run first, then the Go decoder's JDBC path. Their logs
  and state are kept in ``.bench/stream/peers/sparkcdc-stream/``; each result goes to
  ``$PEERS_RESULT`` once (the peers read stdout too, so it is echoed on stderr, not stdout).

The peers' seconds start at their engine's start inside the JVM and include the wait for the first
event ("steady/s" leaves it out); sparkcdc's leave out its process start (``wall_s`` has it).

Writes ``benchmarks/results/stream.json`` (baselines, every streaming row, the Go-decoder JDBC rate
over Debezium's and Flink CDC's) and ``docs/performance_stream.png``; the last line printed is
``live stream: N events/s into jdbc, R x debezium``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pymysql
from benchsupport import (
    BENCH_DIR,
    REPO,
    changelog_sink,
    checkpoint_document,
    delta_commit_infos,
    jdbc_sink,
    machine,
    mib,
    run_sparkcdc,
    write_manifest,
    write_results,
)
from rich.console import Console
from rich.table import Table

from sparkcdc.core.checkpoint import decode
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.sinks.delta.config import commit_metadata

PEERS = REPO.parent / "shared" / "peers" / "bench.py"
WORK = BENCH_DIR / "stream"
PNG = REPO / "docs" / "performance_stream.png"
GO = "sparkcdc live → jdbc (Go decoder)"
PY = "sparkcdc live → jdbc (python-mysql-replication)"
CHANGELOG = "sparkcdc live → changelog"
DELTA = "sparkcdc live → delta"
PATHS = (GO, PY, CHANGELOG, DELTA)
IN_ALL = re.compile(r"\((\d+) in all[,)]")
# The Go decoder handing over: before the backlog's end it read part of it in Python. (At the end it
# meets the JDBC sink's own CREATE TABLE on the same server, which any CREATE TABLE hands over at.)
STOPPED = re.compile(r"at (\S+:\d+) the Go decoder stops")
COLUMNS = ("", "path", "count", "seconds", "events/s", "steady/s", "x base", "cpu s", "rss MiB", "notes")
NOTE = (
    "seconds: the peers' from engine start (in the JVM), sparkcdc's from 'streaming the binlog from', to the "
    "last event; steady/s: a peer's rate after its first event; x base: time per event / mariadb-binlog's (d)"
)
console = Console(width=None if sys.stdout.isatty() else 150)


# -- the hook: sparkcdc's paths, run by the peers as their --sparkcdc command ----------------------


@dataclass(frozen=True)
class PeersServer:
    """The peers' server, as ``write_manifest`` and ``jdbc_sink`` take a server."""

    host: str
    port: int
    cdc_user: str
    cdc_password: str

    def execute(self, sql: str) -> list[tuple[Any, ...]]:
        conn = pymysql.connect(
            host=self.host, port=self.port, user=self.cdc_user, password=self.cdc_password, autocommit=True
        )
        try:
            with conn.cursor() as cursor:
                cursor.execute(sql)
                return list(cursor.fetchall())
        finally:
            conn.close()


def offset_of(text: str) -> BinlogOffset:
    file, _, pos = text.rpartition(":")
    return BinlogOffset(file, int(pos))


def replica_difference(server: PeersServer, source: str, replica: str, rows: int, changes: int) -> str:
    """Why the replica differs from the source ("" when it does not). Every updated row is in the
    replica (upserted from its after image); with fewer changes than rows, only those rows are."""
    if changes >= rows:
        source_sum = server.execute(f"CHECKSUM TABLE {source}")[0][1]
        replica_sum = server.execute(f"CHECKSUM TABLE {replica}")[0][1]
        return "" if source_sum == replica_sum else f"CHECKSUM TABLE differs ({source_sum} != {replica_sum})"
    columns = "id, c_int, c_varchar, c_decimal, c_datetime, c_double, c_tinyint"
    missing = server.execute(
        f"SELECT COUNT(*) FROM (SELECT {columns} FROM {replica} EXCEPT SELECT {columns} FROM {source}) d"
    )[0][0]
    count = server.execute(f"SELECT COUNT(*) FROM {replica}")[0][0]
    if missing or count != changes:
        return f"the replica has {count} rows, {missing} of them unlike the source's"
    return ""


def stream_path(
    server: PeersServer, work: Path, label: str, sink: dict[str, Any], timeout: float, env: dict[str, str]
) -> tuple[dict[str, Any], str]:
    """One ``sparkcdc run`` over the backlog: its result line and its log."""
    name = "stream-" + re.sub(r"[^a-z]+", "-", label.split("→")[1].lower()).strip("-")
    start, end = offset_of(os.environ["PEERS_BINLOG_START"]), offset_of(os.environ["PEERS_BINLOG_END"])
    changes = int(os.environ["PEERS_CHANGES"])
    state = work / f"{name}-state"
    shutil.rmtree(state, ignore_errors=True)
    manifest = write_manifest(
        work / f"{name}.yaml",
        name=name,
        server=server,
        tables=[f"{os.environ['PEERS_DATABASE']}.{os.environ['PEERS_TABLE']}"],
        sink=sink,
        startup={"mode": "specific-offset", "file": start.file, "position": start.pos},
        binlog={"parallelCatchupThresholdBytes": 0, "batchRows": 20000},
    )

    def offset() -> BinlogOffset | None:
        document = checkpoint_document(state, name)
        return None if document is None else decode(document).binlog_offset

    def caught_up() -> bool:
        current = offset()
        return current is not None and current >= end

    started: list[subprocess.Popen[bytes]] = []
    try:
        run = run_sparkcdc(
            manifest,
            state,
            timeout=timeout,
            watch={"checkpoint": lambda: offset() is not None, "caught_up": caught_up},
            on_start=lambda process, _lines: started.append(process),
            env=env,
        )
    finally:  # a run stopped at its time limit: the rest of its process group (Spark's JVM)
        for process in started:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
    log = "".join(f"{at:8.2f}s {line}\n" for at, line in run.lines)
    (work / f"{name}.log").write_text(log)
    streaming = next((at for at, line in run.lines if "streaming the binlog from" in line), None)
    began = streaming if streaming is not None else run.marks.get("checkpoint", 0.0)
    result: dict[str, Any] = {"name": label, "kind": "stream", "count": changes, "seconds": 0.0, "ok": True}
    result.update(cpu_s=round(run.cpu, 1), peak_rss_mib=mib(run.peak_rss), wall_s=round(run.seconds, 2))
    notes: list[str] = []
    ended = f"stopped at the {timeout:.0f} s limit" if run.seconds >= timeout else f"exit {run.returncode}"
    if "caught_up" in run.marks:
        result["seconds"] = round(run.marks["caught_up"] - began, 3)
        if run.returncode != 0:
            notes.append(f"exit {run.returncode} after catching up")
    elif progress := [(at, int(m.group(1))) for at, line in run.lines if (m := IN_ALL.search(line))]:
        at, count = progress[-1]  # stopped at its time limit (or failed) after some batches
        result.update(count=count, seconds=round(at - began, 3))
        notes.append(f"partial: {count:,} of {changes:,} when {ended}")
    else:
        result["ok"] = False
        last = next((line for _, line in reversed(run.lines) if line[:1] not in " \t"), "no output")
        notes.append(f"no batch committed when {ended}" + ("" if "limit" in ended else f": {last[-160:]}"))
    if "catch-up takes over" in log:
        notes.append("parallel catch-up took over")
    result["note"] = "; ".join(notes)
    return result, log


def delta_commits(lake: Path) -> str:
    """How the Delta path's binlog commits went, from the tables' logs: the backlog's batches
    into a table that starts empty are appends (sinks/delta/merge.py), updates of rows it holds
    MERGEs. "" when there is no Delta table."""
    operations: dict[str, int] = {}
    for table in sorted(lake.glob("*/*/_delta_log")):
        for info in delta_commit_infos(table.parent):
            if (commit_metadata(info.get("userMetadata")) or {}).get("phase") == "binlog":
                operations[info["operation"]] = operations.get(info["operation"], 0) + 1
    return ", ".join(f"{n} {op.lower()}" for op, n in sorted(operations.items()))


def hook(args: argparse.Namespace) -> None:
    """Every sparkcdc path against the peers' server and backlog; a JSON line per path."""
    env = os.environ
    server = PeersServer(env["PEERS_HOST"], int(env["PEERS_PORT"]), env["PEERS_USER"], env["PEERS_PASSWORD"])
    rows, changes = int(env["PEERS_ROWS"]), int(env["PEERS_CHANGES"])
    source = f"{env['PEERS_DATABASE']}.{env['PEERS_TABLE']}"
    results_file = env.get("PEERS_RESULT")
    work = (Path(results_file).parent if results_file else WORK / "hook") / "sparkcdc-stream"
    work.mkdir(parents=True, exist_ok=True)

    def report(result: dict[str, Any]) -> None:
        line = json.dumps(result, ensure_ascii=False)
        if results_file:  # the peers read stdout and this file alike: each line once, here
            with open(results_file, "a", encoding="utf-8") as out:
                out.write(line + "\n")
        print(line, file=sys.stderr if results_file else sys.stdout, flush=True)

    def jdbc(label: str, replica: str, decoder: str) -> dict[str, Any]:
        server.execute(f"DROP DATABASE IF EXISTS {replica}")
        variables = {"SPARKCDC_BINLOG_DECODER": decoder} if decoder else {}
        result, log = stream_path(server, work, label, jdbc_sink(server, replica), 3600, variables)
        go = "with the Go decoder" in log
        problems = (
            [] if go != bool(decoder) else [f"the live path read with{'' if go else 'out'} the Go decoder"]
        )
        end = offset_of(env["PEERS_BINLOG_END"])
        if any(offset_of(m.group(1)) < end for m in STOPPED.finditer(log)):
            problems.append("the Go decoder stopped: python-mysql-replication read on")
        if result["ok"] and not problems and not result["note"].startswith("partial"):
            copy = f"{replica}.{env['PEERS_TABLE']}"
            problems += [p for p in [replica_difference(server, source, copy, rows, changes)] if p]
        server.execute(f"DROP DATABASE IF EXISTS {replica}")
        result["ok"] = result["ok"] and not problems
        result["note"] = "; ".join(n for n in (result["note"], *problems) if n)
        return result

    def files(label: str, sink: Callable[[Path], dict[str, Any]], timeout: float) -> dict[str, Any]:
        target = Path(tempfile.mkdtemp(prefix="sink-", dir=work))
        try:
            result = stream_path(server, work, label, sink(target), timeout, {})[0]
            if commits := delta_commits(target / "lake"):
                result["note"] = "; ".join(n for n in (result["note"], commits) if n)
            return result
        finally:
            shutil.rmtree(target, ignore_errors=True)

    # The paths writing nothing to the server first, then the Go decoder's JDBC path on a server in
    # the state the peers had: not right after the Python reader's 1,000,000 writes and DROP
    # DATABASE (docs/performance.md: both orders measured, the difference within the spread).
    measures: list[tuple[str, Callable[[], dict[str, Any]]]] = [
        (CHANGELOG, lambda: files(CHANGELOG, lambda target: changelog_sink(target / "changelog"), 3600)),
        (GO, lambda: jdbc(GO, "peers_replica_go", "")),
        (PY, lambda: jdbc(PY, "peers_replica_py", "python")),
    ]
    if not args.no_delta:
        from sparkcdc.options import EngineOptions
        from sparkcdc.spark.session import fetch_delta_jars

        fetch_delta_jars(EngineOptions.from_environment())  # not part of any timing

        def lake(target: Path) -> dict[str, Any]:
            return {"type": "delta", "path": str(target / "lake")}

        measures.append((DELTA, lambda: files(DELTA, lake, args.path_timeout)))
    for label, measure in measures:
        try:
            report(measure())
        except Exception as error:  # one path failing does not lose the others
            note = f"{type(error).__name__}: {error}"[:300]
            report(
                {"name": label, "kind": "stream", "count": changes, "seconds": 0.0, "ok": False, "note": note}
            )


# -- the default mode: the peers with the hook, then the table, the results file and the chart ----


def stop_leftover_server(base: Path) -> None:
    """Stop a server an interrupted earlier run left on the peers' work directory (its pid file)."""
    try:
        pid = int((base / "mysqld.pid").read_text().strip())
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            if f"--datadir={base / 'data'}".encode() not in cmdline.read():
                return
    except (OSError, ValueError):
        return
    os.kill(pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        subprocess.run(["tail", f"--pid={pid}", "-f", "/dev/null"], timeout=120, check=False)


def run_peers(args: argparse.Namespace, out: Path) -> None:
    if not PEERS.is_file():
        print(f"the peers harness is not there: {PEERS} does not exist", file=sys.stderr)
        raise SystemExit(2)
    peers_work = WORK / "peers"
    stop_leftover_server(peers_work / "server")
    shutil.rmtree(peers_work, ignore_errors=True)  # --start makes its server directories afresh
    out.unlink(missing_ok=True)
    hook_command = [sys.executable, str(Path(__file__).resolve()), "--hook"]
    hook_command += ["--path-timeout", str(args.path_timeout), *(["--no-delta"] if args.no_delta else [])]
    command = [
        sys.executable,  # the peers need PyMySQL, which this interpreter has
        str(PEERS),
        "--start",
        *("--rows", str(args.rows), "--changes", str(args.changes), "--serialize", "none"),
        *(["--skip", args.skip] if args.skip else []),
        *("--sparkcdc", shlex.join(hook_command), "--out", str(out), "--work-dir", str(peers_work)),
    ]
    console.print(shlex.join(command), markup=False, highlight=False)
    done = subprocess.run(command, check=False)  # its output streams through
    if not out.is_file():
        raise SystemExit(f"the peers harness exited {done.returncode} without writing {out}")


def cell(value: Any, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def summarize(args: argparse.Namespace, document: dict[str, Any], started: dict[str, Any]) -> None:
    """The results file, the table, the chart and the last line, from the peers' results."""
    streams = [r for r in document["results"] if r.get("kind") == "stream"]
    ours = sorted((r for r in streams if r.get("name") in PATHS), key=lambda r: PATHS.index(r["name"]))
    rows = [r for r in streams if r.get("step") in ("d", "d'", "e", "f")] + ours
    for r in rows:
        if r.get("ok") and (r.get("seconds") or 0) <= 0:  # a peer's timer read before its last event
            r.update(ok=False, per_s=None, steady_per_s=None, x_baseline=None)
            r["note"] = f"not counted: {r.get('seconds')} s measured"
    good = [r for r in rows if r.get("ok") and r.get("per_s")]
    go = next((r["per_s"] for r in good if r["name"] == GO), None)
    ratios: dict[str, float | None] = {}
    for peer, step in (("debezium", "e"), ("flinkcdc", "f")):
        found = next((r for r in good if r["step"] == step), {})
        for suffix, key in (("", "per_s"), ("_steady", "steady_per_s")):  # steady: after its first event
            ratios[f"go_jdbc_over_{peer}{suffix}"] = (
                round(go / found[key], 3) if go and found.get(key) else None
            )
    keys = ("step", "name", "count", "seconds", "per_s", "steady_per_s", "x_baseline", "ok", "cpu_s")
    keys += ("peak_rss_mib", "note")
    config = {"rows": args.rows, "changes": args.changes, "serialize": "none", "delta": not args.no_delta}
    config |= {"txn_rows": document.get("config", {}).get("txn_rows"), "path_timeout_s": args.path_timeout}
    config["sparkcdc_binlog"] = {"parallelCatchupThresholdBytes": 0, "batchRows": 20000}
    results = {
        "benchmark": "stream",
        "when": document.get("when"),
        "machine": {**started, **document.get("machine", {})},
        "config": config,
        **{key: document.get(key) for key in ("server", "peers", "java", "baselines")},
        "results": [{k: r.get(k) for k in keys} for r in rows],
        "ratios": ratios,
        "peers_results": str(WORK / "peers-results.json"),
    }
    path = write_results("stream", results)

    table = Table(title=f"live binlog stream: {args.changes:,} row updates, {args.rows:,} rows ({path})")
    for column in COLUMNS:
        table.add_column(column, justify="left" if column in ("", "path", "notes") else "right")
    for r in rows:
        ok = r.get("ok") and r.get("seconds")
        formats = {"steady_per_s": ",.0f", "x_baseline": ".2f", "cpu_s": ".1f", "peak_rss_mib": ",.0f"}
        figures = [cell(r.get(k), f) for k, f in formats.items()]
        seconds = cell(r["seconds"], ".2f") if ok else "FAILED"
        per_s = cell(r.get("per_s") if ok else None, ",.0f")
        table.add_row(
            r["step"], r["name"], cell(r.get("count"), ",d"), seconds, per_s, *figures, r.get("note", "")[:70]
        )
    console.print(table)
    console.print(NOTE, highlight=False)
    compared = [f"{v:.2f}x {k.split('_over_')[1].replace('_', ' ')}" for k, v in ratios.items() if v]
    console.print(f"sparkcdc's Go-decoder JDBC rate over: {', '.join(compared) or '-'}", highlight=False)
    try:
        from plots import bar_chart

        load = started.get("load_average_at_start", ["?"])[0]
        when = str(document.get("when", ""))[:10]
        title = (
            f"live binlog stream, {args.changes:,} row updates: {when}, {started['cpus']} CPUs, load {load}"
        )
        named = [("mariadb-binlog" if r["step"] == "d" else r["name"].replace(", none", ""), r) for r in good]
        chart = [(name, r["per_s"]) for name, r in named if r["step"] != "d'"]
        bar_chart(chart, f"{title}\n{started['platform']}", PNG)
        console.print(f"chart written to {PNG}")
    except ImportError as error:
        console.print(f"no chart ({error}): pip install matplotlib")
    debezium = ratios["go_jdbc_over_debezium"]
    rate_text = f"{go:.0f}" if go else "n/a"
    print(
        f"live stream: {rate_text} events/s into jdbc, {f'{debezium:.1f}' if debezium else 'n/a'} x debezium"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--changes", type=int, default=1_000_000)
    parser.add_argument("--no-delta", action="store_true", help="leave out the Delta sink's path")
    parser.add_argument("--path-timeout", type=float, default=300.0, help="the Delta path's time limit, s")
    parser.add_argument("--skip", default="", help="passed to the peers' --skip (e.g. flinkcdc)")
    parser.add_argument("--hook", action="store_true", help="run sparkcdc's paths (the peers' --sparkcdc)")
    args = parser.parse_args()
    if args.hook:
        hook(args)
        return
    started = machine()
    out = WORK / "peers-results.json"
    run_peers(args, out)
    summarize(args, json.loads(out.read_text()), started)


if __name__ == "__main__":
    main()
