"""A table created at the source while a pipeline streams is captured without pausing the others.

The pipeline captures ``a`` and every table named ``n_*`` of the source database. While a writer
inserts into ``a`` every few milliseconds and a poller watches ``a``'s replica, ``n_big`` is
created and filled at the source, then written to (inserts, updates, key changes, deletes) while
its snapshot runs beside the stream (engine/interleaved.py). The run is killed in the middle of
that snapshot and started again: it goes on with the splits not finished. In the end both
replicas equal their source tables, and ``a``'s replica never stood still for more than a small
part of the time ``n_big``'s snapshot took (the largest pause is printed; docs/performance.md).
"""

from __future__ import annotations

import itertools
import re
import threading
import time
from pathlib import Path
from typing import Any

import pymysql
from binlog_support import Case, assert_same_rows, new_case, replay_changelog

from harness.writer import RandomWriter
from sparkcdc.core.checkpoint import Phase
from sparkcdc.testing.mariadb import MariaDBServer
from sparkcdc.testing.postgres import PostgresServer

BIG_ROWS = 30_000


class Ticker(RandomWriter):
    """One insert into ``a`` per transaction, every few milliseconds."""

    def op(self, cur: Any) -> None:
        cur.execute("INSERT INTO a (v) VALUES (%s)", (self.rng.randrange(1000),))


class BigWriter(RandomWriter):
    """Inserts, updates (some moving a row to another key), deletes on ``n_big``."""

    def op(self, cur: Any) -> None:
        key = self.rng.randrange(1, BIG_ROWS + 2000)
        roll = self.rng.random()
        if roll < 0.3:
            cur.execute("INSERT IGNORE INTO n_big (id, v, n) VALUES (%s, 'new', 1)", (key,))
        elif roll < 0.6:
            cur.execute("UPDATE n_big SET v = CONCAT(v, '+'), n = n + 1 WHERE id = %s", (key,))
        elif roll < 0.75:
            moved = self.rng.randrange(1, BIG_ROWS + 2000)
            cur.execute("UPDATE IGNORE n_big SET id = %s WHERE id = %s", (moved, key))
        else:
            cur.execute("DELETE FROM n_big WHERE id = %s", (key,))


class Watch:
    """Polls ``a``'s replica: when did its newest row change, and the longest time it did not
    while rows were waiting at the source."""

    def __init__(self, case: Case, sink_db: str) -> None:
        self.case, self.sink_db = case, sink_db
        self.seen: list[tuple[float, int]] = []
        self._halt = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        conn = self.case.server.root_connection()
        try:
            while not self._halt.is_set():
                with conn.cursor() as cur:
                    try:
                        cur.execute(f"SELECT COALESCE(MAX(id), 0) FROM `{self.sink_db}`.a")
                        newest = int(cur.fetchone()[0])
                    except pymysql.err.ProgrammingError:  # not created yet
                        newest = 0
                conn.commit()
                if not self.seen or newest != self.seen[-1][1]:
                    self.seen.append((time.monotonic(), newest))
                time.sleep(0.01)
        finally:
            conn.close()

    def __enter__(self) -> Watch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._halt.set()
        self._thread.join()

    def largest_pause(self, since: float, until: float) -> float:
        """The longest stretch between two changes of the replica within ``[since, until]``."""
        times = [since, *(t for t, _ in self.seen if since < t < until), until]
        return max(b - a for a, b in itertools.pairwise(times))


def _fill(case: Case, rows: int) -> None:
    """``n_big``'s rows, a thousand per transaction (one transaction of all of them would hold
    every table's stream back while it is decoded, snapshot or not)."""
    for first in range(1, rows + 1, 1000):
        case.execute(
            f"INSERT INTO `{case.db}`.n_big SELECT seq, CONCAT('r', seq), seq % 7"
            f" FROM `{case.db}`.seq_{first}_to_{min(rows, first + 999)}"
        )


def _phase(case: Case, table: str, pipeline: str = "add") -> Phase | None:
    checkpoint = case.checkpoint(pipeline)
    state = None if checkpoint is None else checkpoint.tables.get(_table_id(case, table))
    return None if state is None else state.phase


def _finished_splits(case: Case, table: str) -> int:
    checkpoint = case.checkpoint("add")
    return 0 if checkpoint is None else len(checkpoint.finished.get(_table_id(case, table), ()))


def _table_id(case: Case, table: str) -> Any:
    from sparkcdc.core.tables import TableId

    return TableId(case.db, table)


def test_a_created_table_is_snapshotted_beside_the_stream_and_survives_a_kill(
    mariadb: MariaDBServer, tmp_path: Path
) -> None:
    case = new_case(mariadb, tmp_path)
    try:
        case.execute(f"CREATE TABLE `{case.db}`.a (id INT AUTO_INCREMENT PRIMARY KEY, v INT)")
        pattern = f"re:{re.escape(case.db)}\\.(a|n_\\w+)"
        pipeline = case.pipeline("add", [pattern], snapshot={"chunkSize": 500})
        manifest = case.manifest("add.yaml", pipeline)
        sink_db = case.sink_db("add")
        ticker = Ticker(case.server, seed=7, db=case.db, most=1, pause=0.01)
        big = BigWriter(case.server, seed=8, db=case.db, most=3, pause=0.005)
        with Watch(case, sink_db) as watch, ticker:
            run = case.start(manifest)
            with run:
                case.wait_offset(run, "add", case.position(), timeout=240)
                calm = time.monotonic()
                time.sleep(3.0)  # the pauses of a stream without a snapshot beside it, to compare
                case.execute(
                    f"CREATE TABLE `{case.db}`.n_big (id INT PRIMARY KEY, v VARCHAR(40), n INT NOT NULL)"
                )
                created = time.monotonic()
                _fill(case, BIG_ROWS)
                big.start()
                assert run.wait_for(lambda: _finished_splits(case, "n_big") >= 3, 120), (
                    run.result().describe()
                )
                killed = time.monotonic()
                run.kill()  # in the middle of n_big's snapshot
            assert _phase(case, "n_big") is Phase.SNAPSHOT, "the kill came after the snapshot ended"
            restarted = time.monotonic()
            run = case.start(manifest)
            with run:
                assert run.wait_for(lambda: _phase(case, "n_big") is Phase.BINLOG, 240), (
                    run.result().describe()
                )
                snapshotted = time.monotonic()
                time.sleep(1.0)
                big.stop()
                ticker.stop()
                case.wait_offset(run, "add", case.position(), timeout=120)
                run.kill()
                log = run.result().stderr
        assert "snapshotting it while the other tables stream" in log or "remaining splits" in log, log[
            -3000:
        ]
        case.assert_replica("add", "a")
        case.assert_replica("add", "n_big")
        # The kill and the restart are a pause of their own: each run's stretch is measured apart,
        # the second from its first change of the replica.
        resumed = next(t for t, _ in watch.seen if t > restarted)
        pause = max(watch.largest_pause(created, killed), watch.largest_pause(resumed, snapshotted))
        took = (killed - created) + (snapshotted - resumed)
        usual = watch.largest_pause(calm, created)
        print(f"\nn_big ({BIG_ROWS} rows) beside the stream: {took:.1f}s; largest pause of a: {pause:.3f}s")
        print(f"largest pause of a before n_big was created: {usual:.3f}s")
        assert pause < took / 3, (pause, took)
    finally:
        case.cleanup()


def test_a_created_table_reaches_postgres_and_the_changelog(
    mariadb: MariaDBServer, tmp_path: Path, postgres: PostgresServer
) -> None:
    case = new_case(mariadb, tmp_path)
    try:
        case.execute(f"CREATE TABLE `{case.db}`.a (id INT AUTO_INCREMENT PRIMARY KEY, v INT)")
        pattern = f"re:{re.escape(case.db)}\\.(a|n_\\w+)"
        pg = case.pipeline("add-pg", [pattern], snapshot={"chunkSize": 500})
        pg_db, pg_secret = case.to_postgres(pg, postgres)
        log = case.pipeline("add-log", [pattern], sink="changelog", snapshot={"chunkSize": 500})
        manifest = case.manifest("add.yaml", pg_secret, pg, log)
        with Ticker(case.server, seed=9, db=case.db, most=1, pause=0.01) as ticker:
            run = case.start(manifest)
            with run:
                for name in ("add-pg", "add-log"):
                    case.wait_offset(run, name, case.position(), timeout=240)
                case.execute(
                    f"CREATE TABLE `{case.db}`.n_big (id INT PRIMARY KEY, v VARCHAR(40), n INT NOT NULL)"
                )
                _fill(case, BIG_ROWS // 3)
                with BigWriter(case.server, seed=10, db=case.db, most=3, pause=0.005):
                    for name in ("add-pg", "add-log"):
                        done = lambda name=name: _phase(case, "n_big", name) is Phase.BINLOG  # noqa: E731
                        assert run.wait_for(done, 240), run.result().describe()
                    time.sleep(1.0)
                ticker.stop()
                for name in ("add-pg", "add-log"):
                    case.wait_offset(run, name, case.position(), timeout=120)
                run.kill()
        for table in ("a", "n_big"):
            source = case.rows(case.db, table)
            rows = postgres.execute(f"SELECT * FROM {table}", database=pg_db)
            assert_same_rows(source, [tuple(r) for r in rows], f"{table} in PostgreSQL")
            replayed = replay_changelog(
                case.changelog_dir("add-log") / f"{case.db}.{table}", key=lambda d: d["id"]
            )
            columns = case.columns(case.db, table)
            changelog = [tuple(d[c] for c in columns) for d in replayed.values()]
            assert_same_rows(source, changelog, f"{table} in the changelog")
    finally:
        case.cleanup()


def test_a_snapshot_beside_the_stream_is_not_paced_by_the_batch_interval(
    mariadb: MariaDBServer, tmp_path: Path
) -> None:
    """With a batch interval far longer than the test waits and writers keeping the source busy,
    a created table is still captured and snapshotted: a batch ends as soon as a table is to be
    captured or a split read beside it may be written, as DBLog emits a chunk at its high
    watermark (with one split per batch interval, its 20 splits would take hours)."""
    case = new_case(mariadb, tmp_path)
    try:
        case.execute(f"CREATE TABLE `{case.db}`.a (id INT AUTO_INCREMENT PRIMARY KEY, v INT)")
        pattern = f"re:{re.escape(case.db)}\\.(a|n_\\w+)"
        binlog = {"batchIntervalMs": 600_000, "batchRows": 1_000_000}
        pipeline = case.pipeline("paced", [pattern], snapshot={"chunkSize": 500}, binlog=binlog)
        manifest = case.manifest("paced.yaml", pipeline)
        with case.start(manifest) as run:
            assert run.wait_for(lambda: _phase(case, "a", "paced") is Phase.BINLOG, 240), (
                run.result().describe()
            )
            with Ticker(case.server, seed=11, db=case.db, most=1, pause=0.01):
                case.execute(
                    f"CREATE TABLE `{case.db}`.n_big (id INT PRIMARY KEY, v VARCHAR(40), n INT NOT NULL)"
                )
                _fill(case, BIG_ROWS // 3)
                with BigWriter(case.server, seed=12, db=case.db, most=3, pause=0.005):
                    snapshotted = lambda: _phase(case, "n_big", "paced") is Phase.BINLOG  # noqa: E731
                    assert run.wait_for(snapshotted, 120), run.result().describe()
            run.kill()
        case.run_ok(manifest)  # --exit-when-caught-up: the rest of the stream, then exits
        case.assert_replica("paced", "a")
        case.assert_replica("paced", "n_big")
    finally:
        case.cleanup()


def test_a_table_added_while_stopped_is_snapshotted_before_caught_up_exits(
    mariadb: MariaDBServer, tmp_path: Path
) -> None:
    """``--exit-when-caught-up`` on an idle source after a table joined the manifest: the run
    snapshots it beside the stream and only then exits."""
    case = new_case(mariadb, tmp_path)
    try:
        for table in ("a", "b"):
            case.execute(f"CREATE TABLE `{case.db}`.{table} (id INT PRIMARY KEY, v INT)")
            case.execute(f"INSERT INTO `{case.db}`.{table} SELECT seq, seq FROM `{case.db}`.seq_1_to_1500")
        case.run_ok(case.manifest("one.yaml", case.pipeline("add", ["a"], snapshot={"chunkSize": 500})))
        result = case.run_ok(
            case.manifest("two.yaml", case.pipeline("add", ["a", "b"], snapshot={"chunkSize": 500}))
        )
        assert "snapshotting it while the other tables stream" in result.stderr, result.describe()
        case.assert_replica("add", "a")
        case.assert_replica("add", "b")
        checkpoint = case.checkpoint("add")
        assert checkpoint is not None and checkpoint.tables[_table_id(case, "b")].phase is Phase.BINLOG
    finally:
        case.cleanup()


def test_a_table_created_after_a_named_one_was_dropped_is_still_captured(
    mariadb: MariaDBServer, tmp_path: Path
) -> None:
    """``source.tables`` names ``a`` and matches ``n_*``: once ``a`` is dropped (it stops, being
    named), a new ``n_late`` is still found and snapshotted beside the stream."""
    case = new_case(mariadb, tmp_path)
    try:
        for table in ("a", "n_first"):
            case.execute(f"CREATE TABLE `{case.db}`.{table} (id INT PRIMARY KEY, v INT)")
            case.execute(f"INSERT INTO `{case.db}`.{table} SELECT seq, seq FROM `{case.db}`.seq_1_to_300")
        pattern = f"re:{re.escape(case.db)}\\.n_\\w+"
        manifest = case.manifest(
            "late.yaml", case.pipeline("add", ["a", pattern], snapshot={"chunkSize": 100})
        )
        run = case.start(manifest)
        with run:
            case.wait_offset(run, "add", case.position(), timeout=240)
            case.execute(f"DROP TABLE `{case.db}`.a")
            case.execute(f"CREATE TABLE `{case.db}`.n_late (id INT PRIMARY KEY, v INT)")
            case.execute(f"INSERT INTO `{case.db}`.n_late SELECT seq, seq FROM `{case.db}`.seq_1_to_700")
            assert run.wait_for(lambda: _phase(case, "n_late") is Phase.BINLOG, 120), run.result().describe()
            case.execute(f"UPDATE `{case.db}`.n_late SET v = -v WHERE id < 50")
            case.wait_offset(run, "add", case.position(), timeout=120)
            run.kill()
        case.assert_replica("add", "n_late")
        case.assert_replica("add", "n_first")
        assert _phase(case, "a") is Phase.FAILED
    finally:
        case.cleanup()
