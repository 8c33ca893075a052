"""Verification while the source changes and the pipeline streams: no false differences.

``sparkcdc run`` streams the binlog into the replica (a subprocess, checkpoints in the state
directory) while a writer updates, inserts and deletes rows all over the table, and
verification runs at the same time. Chunks that differ in the first pass because the sink is
a moment behind (or ahead of a source read) must be re-checked and found consistent — none may
be reported. Once the writer stops and the pipeline catches up, a verification needs no
re-check at all.
"""

from __future__ import annotations

import time
from typing import Any

from verify_support import Replica, table_report

from harness.runner import SparkcdcProcess, load_checkpoint
from harness.writer import RandomWriter
from sparkcdc.core.offsets import BinlogOffset

TABLE = "orders"
ROWS = 3000
_PASSES = 4


class Writer(RandomWriter):
    """Random single-row and multi-row transactions on the source, until stopped."""

    def __init__(self, replica: Replica, table: str) -> None:
        super().__init__(replica.server, 5, db=replica.db)
        self.table = table

    def pause_seconds(self) -> float:
        return self.rng.uniform(0.0, 0.04)

    def transaction(self, cur: Any) -> None:
        rng, table = self.rng, self.table
        key = rng.randint(1, 2 * ROWS + 100)
        choice = rng.random()
        if choice < 0.5:
            cur.execute(
                f"UPDATE {table} SET qty = qty + 1, note = %s, touched = NOW(6) WHERE id = %s",
                (f"upd {rng.random():.6f} ✓", key),
            )
        elif choice < 0.7:
            cur.execute(
                f"INSERT IGNORE INTO {table} VALUES (%s, %s, %s, NOW(6))", (key, rng.randint(0, 9), "new")
            )
        elif choice < 0.85:
            cur.execute(f"DELETE FROM {table} WHERE id = %s", (key,))
        else:  # one transaction over several chunks
            for other in rng.sample(range(1, 2 * ROWS), 5):
                cur.execute(f"UPDATE {table} SET qty = qty - 1 WHERE id = %s", (other,))


def _source_position(replica: Replica) -> BinlogOffset:
    file, pos = replica.server.binlog_position()
    return BinlogOffset(file, pos)


def _wait_applied(replica: Replica, run: SparkcdcProcess, name: str, target: BinlogOffset | None) -> None:
    def done() -> bool:
        checkpoint = load_checkpoint(replica.state_dir, name)
        offset = None if checkpoint is None else checkpoint.binlog_offset
        return offset is not None and (target is None or offset >= target)

    assert run.wait_for(done, timeout=240, interval=0.1), run.result().describe()


def test_verify_under_concurrent_writes_reports_no_false_difference(replica: Replica, spark: Any) -> None:
    table = f"`{replica.db}`.`{TABLE}`"
    replica.execute(
        f"CREATE TABLE {table} (id INT PRIMARY KEY, qty INT NOT NULL, "
        "note VARCHAR(60) CHARACTER SET utf8mb4, touched DATETIME(6))"
    )
    replica.execute(
        f"INSERT INTO {table} SELECT seq * 2, seq % 10, CONCAT('order ', seq), "
        f"TIMESTAMP('2024-05-01') + INTERVAL seq SECOND FROM `{replica.db}`.seq_1_to_{ROWS}"
    )
    name = "concurrent"
    manifest = replica.manifest(name, [TABLE], chunk_size=250)
    writer = Writer(replica, TABLE)
    with SparkcdcProcess(manifest, replica.state_dir, replica.log_dir, exit_when_caught_up=False) as run:
        try:
            _wait_applied(replica, run, name, None)  # snapshot done, streaming
            writer.start()
            time.sleep(1.0)

            # Every verification while the writer runs must find no difference; until one of them
            # had chunks to re-check, the writer did not overlap it (a loaded machine can starve
            # the writer for a whole pass), and another pass runs.
            rechecked = []
            for _ in range(_PASSES):
                code, report = replica.verify(spark, manifest, wait_seconds=120)
                assert writer.error is None, writer.error
                assert run.poll() is None, run.result().describe()
                orders = table_report(report, TABLE)
                assert code == 0 and report.ok, [d.to_json() for d in orders.differing]
                assert orders.chunks >= 12
                rechecked.append(orders.rechecked)
                if orders.rechecked > 0:
                    break
            assert rechecked[-1] > 0, (
                f"chunks re-checked per verification {rechecked}: the writer never overlapped one"
            )
        finally:
            writer.stop()
        assert writer.transactions > 50
        _wait_applied(replica, run, name, _source_position(replica))

        code, report = replica.verify(spark, manifest)

        assert code == 0 and report.ok and table_report(report, TABLE).rechecked == 0
