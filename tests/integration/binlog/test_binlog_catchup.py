"""Parallel catch-up (engine/catchup.py) against the single reader, through ``sparkcdc run``.

One backlog — inserts, updates, key changes (single and composite keys), deletes, multi-table
transactions over three tables — is applied from the same start offset by three pipelines: one
with catch-up off (``parallelCatchupThresholdBytes: 0``, the single reader) and two that always
catch up in parallel (threshold 1 byte), with the Go decoder and with python-mysql-replication
(``SPARKCDC_BINLOG_DECODER=python``); the first decodes its first round in the driver while Spark
starts, the second waits for Spark (``SPARKCDC_CATCHUP_IN_DRIVER=never``). The replicas must equal
each other and the source row for row. A second pipeline is killed (SIGKILL) after catch-up
committed its first round and again while its first round decodes, and must converge on restart.
A third takes an ``initial`` snapshot while a writer runs, so catch-up starts at the minimum high
watermark and its tasks must apply the per-split filter of the handoff exactly (and so must the
driver's threads, each range with its own copy of the filter, when the driver decodes). A fourth
backlog holds an ADD COLUMN: catch-up ends before it, the live reader follows the schema change,
and the replica equals the single reader's.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from binlog_support import Case

from harness.runner import run_sparkcdc, subprocess_env
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.options import BINLOG_DECODER_ENV as DECODER_ENV
from sparkcdc.options import CATCHUP_IN_DRIVER_ENV as IN_DRIVER_ENV

TABLES = ["a", "b", "c"]
SINGLE = {"parallelCatchupThresholdBytes": 0}
PARALLEL = {"parallelCatchupThresholdBytes": 1}


def _create_tables(case: Case) -> None:
    db = case.db
    case.execute(f"CREATE TABLE `{db}`.a (id INT PRIMARY KEY, v VARCHAR(40), n INT)")
    case.execute(f"CREATE TABLE `{db}`.b (k1 INT, k2 VARCHAR(30), payload TEXT, PRIMARY KEY (k1, k2))")
    case.execute(
        f"CREATE TABLE `{db}`.c (id BIGINT UNSIGNED PRIMARY KEY, d DECIMAL(20,6), ts DATETIME(6), "
        "e ENUM('x','y','z'), j JSON)"
    )


def _round(case: Case, r: int, per: int) -> None:
    """One round of changes on ids ``r*per+1 .. (r+1)*per``."""
    db, lo, hi = case.db, r * per + 1, (r + 1) * per
    for start in range(lo, hi + 1, 500):
        end = min(hi, start + 499)
        seq = f"`{db}`.seq_{start}_to_{end}"
        case.execute(f"INSERT INTO `{db}`.a SELECT seq, CONCAT('a', seq), seq % 97 FROM {seq}")
        case.execute(
            f"INSERT INTO `{db}`.b SELECT seq % 50, CONCAT('k', seq), REPEAT('p', seq % 40) FROM {seq}"
        )
        case.execute(
            f"INSERT INTO `{db}`.c SELECT seq, seq / 7, TIMESTAMP'2024-01-01 00:00:00' + INTERVAL seq SECOND "
            f"+ INTERVAL seq MICROSECOND, ELT(1 + seq % 3, 'x', 'y', 'z'), JSON_OBJECT('s', seq) FROM {seq}"
        )
    half = lo + per // 2
    case.execute(f"UPDATE `{db}`.a SET n = n + 1, v = CONCAT(v, '+') WHERE id BETWEEN {lo} AND {half}")
    case.execute(f"UPDATE `{db}`.a SET id = id + 1000000 WHERE id BETWEEN {lo} AND {hi} AND id % 5 = 0")
    case.execute(f"UPDATE `{db}`.b SET k2 = CONCAT(k2, 'm') WHERE k1 = {r % 50}")
    case.execute(f"UPDATE `{db}`.b SET k1 = k1 + 100 WHERE k1 = {(r + 7) % 50}")
    case.execute(f"DELETE FROM `{db}`.a WHERE id BETWEEN {lo} AND {hi} AND id % 7 = 0")
    case.execute(f"DELETE FROM `{db}`.c WHERE id BETWEEN {lo} AND {hi} AND id % 3 = 0")
    _multi_table_transaction(case, r, lo)


def _multi_table_transaction(case: Case, r: int, lo: int) -> None:
    conn = case.server.root_connection(case.db)
    try:
        with conn.cursor() as cur:
            cur.execute("BEGIN")
            cur.execute(f"INSERT INTO a VALUES ({2_000_000 + r}, 'txn', {r})")
            cur.execute(f"UPDATE a SET id = {3_000_000 + r} WHERE id = {lo + 1}")
            cur.execute(f"UPDATE c SET d = d * 2, e = 'z' WHERE id BETWEEN {lo} AND {lo + 50}")
            cur.execute(f"DELETE FROM b WHERE k1 = {(r + 3) % 50} AND k2 LIKE 'k1%'")
            cur.execute(f"UPDATE a SET id = {4_000_000 + r}, v = 'moved' WHERE id = {2_000_000 + r}")
            cur.execute("COMMIT")
    finally:
        conn.close()


def build_backlog(case: Case, rounds: int, per: int) -> BinlogOffset:
    """The tables, then the backlog; returns where it starts."""
    _create_tables(case)
    start = case.position()
    for r in range(rounds):
        _round(case, r, per)
    return start


def _manifest(case: Case, name: str, start: BinlogOffset, binlog: dict[str, int]) -> Path:
    startup = {"mode": "specific-offset", "file": start.file, "position": start.pos}
    pipeline = case.pipeline(name, TABLES, startup=startup, binlog={**binlog, "batchRows": 5000})
    return case.manifest(f"{name}.yaml", pipeline)


def _assert_replicas(case: Case, *names: str) -> None:
    for table in TABLES:
        for name in names:
            case.assert_replica(name.replace("-", "_"), table)


def test_parallel_catchup_matches_single_reader(case: Case) -> None:
    start = build_backlog(case, rounds=6, per=2000)
    single = case.run_ok(_manifest(case, "single", start, SINGLE))
    assert "parallel catch-up" not in single.stderr + single.stdout
    # The Go decoder where it is exact (this backlog: everywhere), its first round decoded by the
    # driver while Spark starts; and python-mysql-replication, every round in Spark tasks.
    parallel = case.run_ok(_manifest(case, "parallel", start, PARALLEL))
    log = parallel.stderr + parallel.stdout
    assert "Go decoder" in log and "round 1/" in log, parallel.describe()
    assert "by the driver" in log.split("round 1/")[1].split("\n")[0], log
    env = subprocess_env({DECODER_ENV: "python", IN_DRIVER_ENV: "never"})
    python = run_sparkcdc(_manifest(case, "python", start, PARALLEL), case.state_dir, case.log_dir, env=env)
    log = python.stderr + python.stdout
    assert python.returncode == 0 and "Python decoder" in log, python.describe()
    assert "by its tasks" in log and "by the driver" not in log, log
    for table in TABLES:
        single_rows = sorted(case.rows(case.sink_db("single"), table))
        assert single_rows == sorted(case.rows(case.sink_db("parallel"), table)), table
        assert single_rows == sorted(case.rows(case.sink_db("python"), table)), table
    _assert_replicas(case, "single", "parallel", "python")
    checkpoint = case.checkpoint("parallel")
    assert checkpoint is not None and checkpoint.binlog_offset is not None
    assert checkpoint.binlog_offset >= start


def test_catchup_killed_and_restarted_converges(case: Case) -> None:
    start = build_backlog(case, rounds=10, per=2000)
    end = case.position()
    manifest = _manifest(case, "killed", start, PARALLEL)

    # Killed while the first round's tasks decode (nothing committed yet).
    run = case.start(manifest, exit_when_caught_up=True)
    with run:
        assert run.wait_for(lambda: "parallel catch-up" in run.stderr_path.read_text(), 240), (
            run.result().describe()
        )
        run.kill()
    before = case.checkpoint("killed")
    assert before is None or before.binlog_offset is None or before.binlog_offset < end

    # Killed after a round committed, before the stretch ended.
    run = case.start(manifest, exit_when_caught_up=True)
    with run:

        def mid_catchup() -> bool:
            cp = case.checkpoint("killed")
            return cp is not None and cp.binlog_offset is not None and start < cp.binlog_offset < end

        assert run.wait_for(mid_catchup, 240, interval=0.02), run.result().describe()
        run.kill()

    case.run_ok(manifest)
    _assert_replicas(case, "killed")


@pytest.mark.parametrize("where", ["spark", "driver"])
def test_catchup_after_snapshot_applies_the_handoff_filter(
    case: Case, where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if where == "driver":  # the split filter in Python, two ranges at a time in driver threads
        monkeypatch.setenv(DECODER_ENV, "python")
        monkeypatch.setenv(IN_DRIVER_ENV, "always")
    _create_tables(case)
    for r in range(3):
        _round(case, r, 1000)
    stop = threading.Event()

    def writer() -> None:
        r = 10  # ids from 3,001 on: past the first rounds'
        while not stop.is_set() and r < 60:
            _round(case, r, 300)
            r += 1

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    try:
        pipeline = case.pipeline(
            "handoff", TABLES, snapshot={"chunkSize": 300}, binlog={**PARALLEL, "batchRows": 5000}
        )
        run = case.start(case.manifest("handoff.yaml", pipeline), exit_when_caught_up=True)
        with run:
            assert run.wait_for(lambda: case.checkpoint("handoff") is not None, 240), run.result().describe()
            result = run.wait(300)
    finally:
        stop.set()
        thread.join()
    assert result.returncode == 0, result.describe()
    log = result.stderr + result.stdout
    assert "parallel catch-up" in log, result.describe()
    if where == "driver":
        assert "by the driver" in log and "by its tasks" not in log, log
    case.run_ok(case.manifest("handoff.yaml", pipeline))  # catch up with the writer's last rounds
    _assert_replicas(case, "handoff")


def test_catchup_stops_before_ddl_and_the_live_reader_takes_it(case: Case) -> None:
    start = build_backlog(case, rounds=3, per=1500)
    db = case.db
    case.execute(f"ALTER TABLE `{db}`.a ADD COLUMN extra INT DEFAULT 7")
    seq = f"`{db}`.seq_5001_to_5600"
    case.execute(f"INSERT INTO `{db}`.a (id, v, n, extra) SELECT seq, 'after', 1, seq FROM {seq}")
    case.execute(f"UPDATE `{db}`.a SET extra = 8, id = id + 500000 WHERE id BETWEEN 5001 AND 5100")
    case.execute(f"DELETE FROM `{db}`.a WHERE id BETWEEN 5200 AND 5300")
    case.execute(f"UPDATE `{db}`.b SET k2 = CONCAT(k2, 'z') WHERE k1 = 11")
    case.execute(f"DELETE FROM `{db}`.c WHERE id % 10 = 1")
    single = case.run_ok(_manifest(case, "single-ddl", start, SINGLE))
    parallel = case.run_ok(_manifest(case, "parallel-ddl", start, PARALLEL))
    output = parallel.stderr + parallel.stdout
    # The stretch ends before the DDL; the live reader follows it (the target was created with the
    # column already, from the definition at start, so there is nothing to alter).
    assert "parallel catch-up" in output and "followed (added ['extra']" in output, parallel.describe()
    assert "followed (added ['extra']" in single.stderr + single.stdout, single.describe()
    for table in TABLES:
        expected = sorted(case.rows(case.sink_db("single_ddl"), table))
        assert sorted(case.rows(case.sink_db("parallel_ddl"), table)) == expected, table
    # Rows written before the ADD COLUMN hold its default on the source; the targets were created
    # with the column's default, so those rows read the same there.
    for table in TABLES:
        case.assert_replica("single_ddl", table)
        case.assert_replica("parallel_ddl", table)
