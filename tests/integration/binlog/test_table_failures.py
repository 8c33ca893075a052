"""One table's failure is that table's (engine/table_failures.py), end to end on real MariaDB and PostgreSQL.

Three tables into one sink; the target of ``bad`` was narrowed by hand (``v VARCHAR(3)``), so the
sink refuses its longer values. Whether that happens during the snapshot or, after it, when a long
value arrives through the binlog, ``bad`` stops alone — ``Phase.FAILED`` with a message naming
the table, the statement, the column and the database's error — while a concurrent writer keeps
changing the other two tables, which end exactly equal to the source. ``sparkcdc run`` exits 4
naming the failed table, and a restart keeps it failed while the others stream on.
"""

from __future__ import annotations

import time
from typing import Any

from binlog_support import Case, assert_same_rows

from harness.runner import RunResult
from harness.writer import RandomWriter
from sparkcdc.core.checkpoint import Phase
from sparkcdc.core.tables import TableId
from sparkcdc.exit_codes import EXIT_TABLES_FAILED
from sparkcdc.testing.postgres import PostgresServer

ROWS = 300
GOOD = ("good_a", "good_b")
# The long value goes into a row of its own, under a key the writer never touches: a later change
# of the same row in the same binlog batch would be merged over it (the batch applies each row's
# last image), and the sink would never be asked to store it.
LONG_ROW = "INSERT INTO `{db}`.bad VALUES (1000000, 'far too long', 1)"


def _create(case: Case, bad_value: str) -> None:
    """``good_a``, ``bad``, ``good_b`` (in that order of planning), ``ROWS`` rows each."""
    for table in (GOOD[0], "bad", GOOD[1]):
        case.execute(
            f"CREATE TABLE `{case.db}`.`{table}` (id INT PRIMARY KEY, v VARCHAR(40), n INT NOT NULL)"
        )
        value = bad_value if table == "bad" else f"CONCAT('{table}-', seq)"
        case.execute(
            f"INSERT INTO `{case.db}`.`{table}` SELECT seq, {value}, seq % 7 FROM `{case.db}`.seq_1_to_{ROWS}"
        )


class Writer(RandomWriter):
    """Small transactions on the good tables (and short values into ``bad``) until stopped."""

    def __init__(self, case: Case) -> None:
        super().__init__(case.server, 14, db=case.db, pause=0.01)
        self._next = ROWS + 1

    def op(self, cur: Any) -> None:
        table = f"`{self.db}`.`{self.rng.choice([*GOOD, 'bad'])}`"
        kind = self.rng.choice(["insert", "update", "update", "delete"])
        key = self.rng.randint(1, self._next - 1)
        if kind == "insert":
            cur.execute(f"INSERT INTO {table} VALUES (%s, %s, %s)", (self._next, "new", self._next % 7))
            self._next += 1
        elif kind == "update":
            cur.execute(
                f"UPDATE {table} SET v = %s, n = n + 1 WHERE id = %s", (str(self.rng.randint(0, 999)), key)
            )
        else:
            cur.execute(f"DELETE FROM {table} WHERE id = %s", (key,))


def _assert_bad_failed(case: Case, pipeline: str, result: RunResult, *markers: str) -> str:
    """``bad`` failed alone, named in the checkpoint and in the run's output; its message."""
    assert result.returncode == EXIT_TABLES_FAILED, result.describe()
    checkpoint = case.checkpoint(pipeline)
    assert checkpoint is not None
    bad = TableId(case.db, "bad")
    states = {t.table: s.phase for t, s in checkpoint.tables.items()}
    assert states == {"good_a": Phase.BINLOG, "bad": Phase.FAILED, "good_b": Phase.BINLOG}, states
    message = checkpoint.tables[bad].error
    for marker in (f"table {bad}", "resnapshotTables", *markers):
        assert marker in message, message
    assert f"pipeline {pipeline}: table {bad} stopped" in result.stderr, result.describe()
    return message


def _pre_narrowed_sink(case: Case, suffix: str) -> None:
    """The sink's ``bad`` exists before the run, its column narrowed by hand."""
    sink = case.sink_db(suffix)
    case.execute(f"CREATE DATABASE `{sink}`")
    case.execute(f"CREATE TABLE `{sink}`.bad LIKE `{case.db}`.bad")
    case.execute(f"ALTER TABLE `{sink}`.bad MODIFY v VARCHAR(3)")


def test_rows_refused_in_the_snapshot_fail_their_table_alone(case: Case) -> None:
    _create(case, "CONCAT('long-', seq)")
    _pre_narrowed_sink(case, "snap")
    manifest = case.manifest("snap.yaml", case.pipeline("snap", ["good_a", "bad", "good_b"]))
    with Writer(case) as writer:
        first = case.run(manifest)
    assert writer.transactions > 10
    message = _assert_bad_failed(case, "snap", first, "during the snapshot", "MySQL error 1406", "column 'v'")
    assert "INSERT of split" in message and "long-" not in message  # no row values
    checkpoint = case.checkpoint("snap")
    assert checkpoint is not None and checkpoint.snapshot_done
    assert case.rows(case.sink_db("snap"), "bad") == []  # the refused split rolled back, no other was read
    # A restart keeps it failed (the same message) and the others streaming.
    case.execute(f"INSERT INTO `{case.db}`.good_a VALUES (100000, 'after', 1)")
    again = case.run(manifest)
    assert _assert_bad_failed(case, "snap", again) == message
    for table in GOOD:
        case.assert_replica("snap", table)


def test_rows_refused_while_streaming_fail_their_table_alone(case: Case) -> None:
    _create(case, "CAST(seq % 1000 AS CHAR)")  # fits VARCHAR(3): the snapshot succeeds
    manifest = case.manifest("strm.yaml", case.pipeline("strm", ["good_a", "bad", "good_b"]))
    case.run_ok(manifest)
    sink = case.sink_db("strm")
    case.execute(f"ALTER TABLE `{sink}`.bad MODIFY v VARCHAR(3)")  # by hand, after the snapshot
    with Writer(case) as writer:
        time.sleep(0.5)
        case.execute(LONG_ROW.format(db=case.db))
        time.sleep(0.5)
        first = case.run(manifest)
        time.sleep(0.5)
    assert writer.transactions > 10
    message = _assert_bad_failed(case, "strm", first, "stopped streaming", "MySQL error 1406", "column 'v'")
    assert "binlog batch" in message and "far too long" not in message
    again = case.run(manifest)  # restart: still failed, the others catch up with the writer
    assert _assert_bad_failed(case, "strm", again) == message
    for table in GOOD:
        case.assert_replica("strm", table)


def test_rows_refused_by_postgres_while_streaming(case: Case, postgres: PostgresServer) -> None:
    _create(case, "CAST(seq % 1000 AS CHAR)")
    pipeline = case.pipeline("pg", ["good_a", "bad", "good_b"])
    database, secret = case.to_postgres(pipeline, postgres)
    manifest = case.manifest("pg.yaml", secret, pipeline)
    case.run_ok(manifest)
    postgres.execute("ALTER TABLE bad ALTER COLUMN v TYPE VARCHAR(3)", database=database)
    with Writer(case) as writer:
        time.sleep(0.5)
        case.execute(LONG_ROW.format(db=case.db))
        first = case.run(manifest)
    assert writer.transactions > 10
    message = _assert_bad_failed(case, "pg", first, "stopped streaming", "SQLSTATE 22001")
    assert "far too long" not in message
    case.execute(f"INSERT INTO `{case.db}`.good_b VALUES (100000, 'after', 1)")
    _assert_bad_failed(case, "pg", case.run(manifest))
    for table in GOOD:
        source = case.rows(case.db, table)
        stored = postgres.execute(f"SELECT id, v, n FROM {table}", database=database)
        assert_same_rows(source, [tuple(r) for r in stored], f"{table} in PostgreSQL")
