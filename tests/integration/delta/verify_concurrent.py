"""Verification of a Delta replica while the source changes and ``sparkcdc run`` streams into it
(its own process and JVM): no false differences (issue 9). Run by sink_checks.py after the
other groups; the ``delta_checks`` fixture created the ``busy`` table and its manifest.

Chunks that differ in the first pass because the Delta table is a batch behind (or ahead of a
source read) must be re-checked and found consistent; once the writer stops and the pipeline
has caught up, a verification needs no re-check at all.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pymysql
from verify_checks import run_verify

from harness.runner import SparkcdcProcess, load_checkpoint
from harness.writer import Address, RandomWriter
from sparkcdc.core.offsets import BinlogOffset


class Writer(RandomWriter):
    """Random single-row and multi-row transactions on ``table`` (``rows`` rows at the start),
    until stopped."""

    def __init__(self, request: dict[str, Any]) -> None:
        super().__init__(Address(request["host"], request["port"]), 5, db=request["db"])
        self.table, self.rows = request["table"], request["rows"]

    def pause_seconds(self) -> float:
        return self.rng.uniform(0.0, 0.04)

    def transaction(self, cur: Any) -> None:
        rng, table, rows = self.rng, self.table, self.rows
        key = rng.randint(1, 2 * rows + 50)
        choice = rng.random()
        if choice < 0.55:
            cur.execute(
                f"UPDATE {table} SET qty = qty + 1, note = %s WHERE id = %s",
                (f"u{rng.random():.6f} ✓", key),
            )
        elif choice < 0.75:
            cur.execute(f"INSERT IGNORE INTO {table} VALUES (%s, %s, 'new')", (key, rng.randint(0, 9)))
        elif choice < 0.9:
            cur.execute(f"DELETE FROM {table} WHERE id = %s", (key,))
        else:  # one transaction over several chunks
            for other in rng.sample(range(1, 2 * rows), 5):
                cur.execute(f"UPDATE {table} SET qty = qty - 1 WHERE id = %s", (other,))


def _applied(run: SparkcdcProcess, state: Path, name: str, target: BinlogOffset | None) -> None:
    def reached() -> bool:
        checkpoint = load_checkpoint(state, name)
        offset = None if checkpoint is None else checkpoint.binlog_offset
        return offset is not None and (target is None or offset >= target)

    assert run.wait_for(reached, timeout=300, interval=0.2), run.result().describe()


def start_pipeline(request: dict[str, Any]) -> SparkcdcProcess:
    """Start the streaming ``sparkcdc run`` of ``busy`` (before the other groups, so its start and
    snapshot overlap them)."""
    state, logs = Path(request["state"]), Path(request["logs"])
    return SparkcdcProcess(Path(request["manifest"]), state, logs, exit_when_caught_up=False)


def concurrent_checks(request: dict[str, Any], spark: Any, run: SparkcdcProcess) -> None:
    manifest, state = Path(request["manifest"]), Path(request["state"])
    writer = Writer(request)
    try:
        _applied(run, state, request["name"], None)  # snapshot done, streaming
        writer.start()
        time.sleep(1.0)
        # The wait bounds how long a recheck waits for the pipeline to pass the source's position: MERGEs
        # behind a busy writer on a loaded machine take minutes, and a longer wait loosens nothing.
        code, table = run_verify(spark, manifest, state, wait_seconds=420)
        assert run.poll() is None, run.result().describe()
        assert code == 0 and table.ok, [d.to_json() for d in table.differing]
        assert table.rechecked > 0, "no chunk differed in the first pass: the writer did not overlap"
        print("ok no_false_differences", flush=True)
    finally:
        writer.stop()
    assert writer.transactions > 50, f"the writer committed only {writer.transactions} changes"
    conn = pymysql.connect(host=request["host"], port=request["port"], user="root", autocommit=True)
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW MASTER STATUS")
            file, pos = cur.fetchone()[:2]
    finally:
        conn.close()
    _applied(run, state, request["name"], BinlogOffset(str(file), int(pos)))
    code, table = run_verify(spark, manifest, state)
    assert code == 0 and table.ok and table.rechecked == 0, table
    print("ok caught_up_clean", flush=True)
