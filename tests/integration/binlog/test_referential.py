"""Referential actions followed in the sink, end to end on real MariaDB (+ PostgreSQL).

The binlog carries only a parent's own DELETE/UPDATE, never the rows InnoDB removed or changed
for ``ON DELETE CASCADE``, ``ON DELETE SET NULL`` or ``ON UPDATE CASCADE``. A three-level chain
``dept -> emp -> task`` (CASCADE on delete and update) and a ``badge`` child (SET NULL on delete,
CASCADE on update) are snapshotted, then a writer deletes and re-keys departments and employees
while the stream is killed twice with SIGKILL: both replicas (MariaDB and PostgreSQL) end
exactly equal to the source, and the run warns about a child whose parent is not captured.
A batch replayed after the sink committed it (a kill before the checkpoint) is not applied again:
a cascade of two hops replayed over the sink's later state would leave a grandchild behind.
"""

from __future__ import annotations

import random
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from binlog_support import Case, assert_same_rows

from harness.writer import RandomWriter
from sparkcdc.core.checkpoint import Checkpoint
from sparkcdc.testing.postgres import PostgresServer

SEED = 20261214
TABLES = ("dept", "emp", "task", "badge")


def _create(case: Case) -> None:
    db = case.db
    case.execute(f"CREATE TABLE `{db}`.dept (id INT PRIMARY KEY, name VARCHAR(20))")
    case.execute(
        f"CREATE TABLE `{db}`.emp (id INT PRIMARY KEY, dept_id INT NOT NULL, name VARCHAR(20),"
        " FOREIGN KEY (dept_id) REFERENCES dept (id) ON DELETE CASCADE ON UPDATE CASCADE)"
    )
    case.execute(
        f"CREATE TABLE `{db}`.task (id INT PRIMARY KEY, emp_id INT NOT NULL, what VARCHAR(20),"
        " FOREIGN KEY (emp_id) REFERENCES emp (id) ON DELETE CASCADE ON UPDATE CASCADE)"
    )
    case.execute(
        f"CREATE TABLE `{db}`.badge (id INT PRIMARY KEY, dept_id INT NULL, color VARCHAR(10),"
        " FOREIGN KEY (dept_id) REFERENCES dept (id) ON DELETE SET NULL ON UPDATE CASCADE)"
    )
    # Not captured: its child's rows would outlive its deletes, which the run must say.
    case.execute(f"CREATE TABLE `{db}`.site (id INT PRIMARY KEY)")
    case.execute(
        f"CREATE TABLE `{db}`.room (id INT PRIMARY KEY, site_id INT,"
        " FOREIGN KEY (site_id) REFERENCES site (id) ON DELETE CASCADE)"
    )
    case.execute(f"INSERT INTO `{db}`.dept SELECT seq, CONCAT('d', seq) FROM `{db}`.seq_1_to_30")
    case.execute(
        f"INSERT INTO `{db}`.emp SELECT seq, 1 + seq % 30, CONCAT('e', seq) FROM `{db}`.seq_1_to_300"
    )
    case.execute(f"INSERT INTO `{db}`.task SELECT seq, 1 + seq % 300, 't' FROM `{db}`.seq_1_to_900")
    case.execute(f"INSERT INTO `{db}`.badge SELECT seq, 1 + seq % 30, 'red' FROM `{db}`.seq_1_to_60")


class FkWriter(RandomWriter):
    """Transactions that insert, delete and re-key departments and employees (cascading to
    their children), and insert children under random parents, until stopped."""

    def __init__(self, case: Case) -> None:
        super().__init__(case.server, SEED, db=case.db)
        self._next = 100_000
        self.cascading = 0

    def _new_id(self) -> int:
        self._next += 1
        return self._next

    def _pick(self, cur: Any, table: str) -> int | None:
        cur.execute(f"SELECT id FROM `{self.db}`.{table} ORDER BY RAND({self.rng.random()}) LIMIT 1")
        row = cur.fetchone()
        return None if row is None else int(row[0])

    def op(self, cur: Any) -> None:
        db = self.db
        kind = self.rng.choices(
            ["dept+", "emp+", "task+", "badge+", "dept-", "dept~", "emp-", "emp~", "emp="],
            [3, 4, 6, 2, 1, 1, 2, 2, 3],
        )[0]
        table = {"d": "dept", "e": "emp", "t": "task", "b": "badge"}[kind[0]]
        if kind == "dept+":
            cur.execute(f"INSERT INTO `{db}`.dept VALUES (%s, 'new')", (self._new_id(),))
            return
        if kind in ("emp+", "badge+", "task+"):
            parent = self._pick(cur, "emp" if kind == "task+" else "dept")
            if parent is not None:
                cur.execute(f"INSERT INTO `{db}`.{table} VALUES (%s, %s, 'x')", (self._new_id(), parent))
            return
        victim = self._pick(cur, table)
        if victim is None:
            return
        self.cascading += 1
        if kind.endswith("-"):
            cur.execute(f"DELETE FROM `{db}`.{table} WHERE id = %s", (victim,))
        elif kind.endswith("~"):
            cur.execute(f"UPDATE `{db}`.{table} SET id = %s WHERE id = %s", (self._new_id(), victim))
        else:  # an employee moves to another department: a child's own change
            dept = self._pick(cur, "dept")
            cur.execute(f"UPDATE `{db}`.emp SET dept_id = %s WHERE id = %s", (dept, victim))


def _offset_moved(before: Checkpoint | None, now: Checkpoint | None) -> bool:
    mark = before.binlog_offset if before is not None else None
    offset = now.binlog_offset if now is not None else None
    return offset is not None and (mark is None or offset > mark)


def _kill_in_stream(case: Case, manifest: Path, name: str) -> None:
    before = case.checkpoint(name)
    run = case.start(manifest)
    try:
        if not run.wait_for(lambda: _offset_moved(before, case.checkpoint(name)), 120):
            raise AssertionError(f"no progress before the kill:\n{run.result().describe()}")
        time.sleep(random.uniform(0.2, 0.8))
    finally:
        run.kill()


@pytest.mark.timeout(600)
def test_cascade_chain_and_set_null_under_writer_and_kills(case: Case, postgres: PostgresServer) -> None:
    _create(case)
    pg = case.pipeline("fk-pg", [*TABLES, "room"])
    database, pg_secret = case.to_postgres(pg, postgres)
    mysql = case.pipeline("fk", [*TABLES, "room"])
    manifest = case.manifest("fk.yaml", pg_secret, mysql, pg)
    first = case.run_ok(manifest)  # the snapshot, before the writer
    assert f"{case.db}.site is not captured" in first.stdout + first.stderr, first.describe()
    writer = FkWriter(case)
    writer.start()
    try:
        _kill_in_stream(case, manifest, "fk")
        _kill_in_stream(case, manifest, "fk-pg")
        time.sleep(2)
    finally:
        writer.stop()
    assert writer.cascading > 20, writer.cascading
    case.run_ok(manifest)
    sink = case.sink_db("fk")
    for table in TABLES:
        source = case.rows(case.db, table)
        assert_same_rows(source, case.rows(sink, table), f"{table} in MariaDB")
        stored = postgres.execute(f"SELECT * FROM {table}", database=database)
        assert_same_rows(source, [tuple(r) for r in stored], f"{table} in PostgreSQL")
    # The writer's cascades really removed and nulled children at the source.
    assert case.execute(f"SELECT COUNT(*) FROM `{case.db}`.task")[0][0] < 900 + writer.transactions
    assert case.execute(f"SELECT COUNT(*) FROM `{case.db}`.badge WHERE dept_id IS NULL")[0][0] > 0


def test_a_batch_replayed_after_its_sink_commit_leaves_no_grandchild(case: Case) -> None:
    """dept -> emp -> task: a task inserted, then its department deleted (two hops of CASCADE).
    Replayed from the checkpoint before them, as after a kill between the sink's commit and the
    checkpoint's write, the batch must not upsert the task again: the emps its cascade would find
    it through are gone from the sink already."""
    _create(case)
    manifest = case.manifest("fk.yaml", case.pipeline("fk", [*TABLES, "room"]))
    case.run_ok(manifest)
    before = case.state_dir.parent / "state-before-the-batch"
    shutil.copytree(case.state_dir, before)
    db, sink = case.db, case.sink_db("fk")
    dept = case.execute(f"SELECT dept_id FROM `{db}`.emp WHERE id = 5")[0][0]
    case.execute(f"INSERT INTO `{db}`.task VALUES (5000, 5, 'x')")
    case.execute(f"DELETE FROM `{db}`.dept WHERE id = %s", (dept,))
    case.run_ok(manifest)
    assert_same_rows(case.rows(db, "task"), case.rows(sink, "task"), "task after the batch")
    shutil.rmtree(case.state_dir)
    shutil.copytree(before, case.state_dir)
    case.run_ok(manifest)
    for table in TABLES:
        assert_same_rows(case.rows(db, table), case.rows(sink, table), f"{table} after the replay")
