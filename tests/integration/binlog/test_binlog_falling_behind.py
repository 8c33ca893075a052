"""A writer faster than the live reader: the stream hands the backlog to parallel catch-up while
it runs, then goes back to the live reader, and the replica stays exact (engine/backlog.py).

The pipeline starts live (no backlog at start, so catch-up does not run then). A writer updates
thousands of rows per statement — far more row events a second than one python-mysql-replication
reader decodes — until the run's log says catch-up took over. The run is then killed (SIGKILL)
while the writer goes on for a moment, and a second run catches up to the end: the replica must
equal the source row for row, whatever the switch and the kill left in between.
"""

from __future__ import annotations

import threading

from binlog_support import Case

ROWS = 20_000
TAKES_OVER = "parallel catch-up takes over"
BACK = "the live reader follows again"


def _write_fast(case: Case, stop: threading.Event, rounds: list[int]) -> None:
    conn = case.server.root_connection(case.db)
    try:
        with conn.cursor() as cur:
            while not stop.is_set():
                n = rounds[0] = rounds[0] + 1
                lo = (n * 2000) % ROWS + 1
                cur.execute(
                    f"UPDATE a SET n = n + 1, v = CONCAT('w', {n}) WHERE id BETWEEN {lo} AND {lo + 1999}"
                )
                if n % 10 == 0:
                    cur.execute(f"DELETE FROM a WHERE id = {lo + 7}")
                    cur.execute(f"INSERT INTO a VALUES ({ROWS + n}, 'new', {n})")
                conn.commit()
    finally:
        conn.close()


def test_falling_behind_switches_to_catchup_and_back(case: Case) -> None:
    db = case.db
    case.execute(f"CREATE TABLE `{db}`.a (id INT PRIMARY KEY, v VARCHAR(40), n INT)")
    start = case.position()
    case.execute(f"INSERT INTO `{db}`.a SELECT seq, CONCAT('a', seq), 0 FROM `{db}`.seq_1_to_{ROWS}")
    startup = {"mode": "specific-offset", "file": start.file, "position": start.pos}
    # A low threshold: a few seconds of the writer put the live reader past it.
    binlog = {"parallelCatchupThresholdBytes": 4 * 2**20, "batchRows": 5000}
    manifest = case.manifest("behind.yaml", case.pipeline("behind", ["a"], startup=startup, binlog=binlog))
    stop, rounds = threading.Event(), [0]
    writer = threading.Thread(target=_write_fast, args=(case, stop, rounds), daemon=True)
    run = case.start(manifest)
    with run:
        writer.start()
        try:
            took_over = run.wait_for(lambda: TAKES_OVER in run.stderr_path.read_text(), 180, interval=0.2)
            assert took_over, run.result().describe()
        finally:
            stop.set()
            writer.join()
        # The writer stopped: catch-up drains the backlog and hands back to the live reader.
        assert run.wait_for(lambda: BACK in run.stderr_path.read_text(), 180, interval=0.2), (
            run.result().describe()
        )
        # More changes for the live reader, then a kill at whatever point it is.
        case.execute(f"UPDATE `{db}`.a SET n = n + 100 WHERE id BETWEEN 1 AND 5000")
        run.kill()
    log = run.result().stderr
    after = log.split(TAKES_OVER)[1]
    assert "round 1/" in after and BACK in after, log  # catch-up ran between two live readers
    case.run_ok(manifest)
    case.assert_replica("behind", "a")
