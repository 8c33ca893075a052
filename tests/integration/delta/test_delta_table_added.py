"""A table created at the source while a pipeline streams into Delta is snapshotted beside the
stream (engine/interleaved.py) under a writer, and ends equal to its source; the table that was
streaming all along does too."""

from __future__ import annotations

import functools
import re
import time
from pathlib import Path
from typing import Any

from delta_support import assert_delta_equals_source, delta_sink, inspect_delta, source_schema

from harness.runner import SparkcdcProcess, checkpointed_past, load_checkpoint, pipeline_manifest
from harness.writer import RandomWriter
from sparkcdc.core.checkpoint import Phase
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.connection import SourceConfig
from sparkcdc.testing.mariadb import MariaDBServer

PIPELINE = "delta-added"
ROWS = 3000


class Writer(RandomWriter):
    def op(self, cur: Any) -> None:
        cur.execute("INSERT INTO a (v) VALUES (%s)", (self.rng.randrange(1000),))
        key = self.rng.randrange(1, ROWS + 500)
        if self.rng.random() < 0.5:
            cur.execute("UPDATE n_new SET v = CONCAT(v, '+') WHERE id = %s", (key,))
        elif self.rng.random() < 0.7:
            cur.execute("INSERT IGNORE INTO n_new (id, v) VALUES (%s, 'new')", (key,))
        else:
            cur.execute("DELETE FROM n_new WHERE id = %s", (key,))


def test_a_created_table_is_snapshotted_into_delta_beside_the_stream(
    mariadb: MariaDBServer, source_config: SourceConfig, fresh_db: str, tmp_path: Path
) -> None:
    db = fresh_db
    mariadb.execute(f"CREATE TABLE `{db}`.a (id INT AUTO_INCREMENT PRIMARY KEY, v INT)")
    mariadb.execute(f"INSERT INTO `{db}`.a (v) SELECT seq FROM `{db}`.seq_1_to_100")
    lake, state, logs = tmp_path / "lake", tmp_path / "state", tmp_path / "logs"
    assert mariadb.cdc_password
    manifest = pipeline_manifest(
        tmp_path / "pipeline.yaml",
        name=PIPELINE,
        host=mariadb.host,
        port=mariadb.port,
        password=mariadb.cdc_password,
        tables=[f"{re.escape(db)}\\.(a|n_\\w+)"],
        sink=delta_sink(lake),
        mode="initial",
        chunk_size=500,
    )

    reached = functools.partial(checkpointed_past, state, PIPELINE)

    def snapshotted() -> bool:
        cp = load_checkpoint(state, PIPELINE)
        entry = None if cp is None else cp.tables.get(TableId(db, "n_new"))
        return entry is not None and entry.phase is Phase.BINLOG

    with SparkcdcProcess(manifest, state, logs, exit_when_caught_up=False) as run:
        now = BinlogOffset(*mariadb.binlog_position())
        assert run.wait_for(lambda: reached(now), timeout=1200, interval=0.2), run.result().describe()
        mariadb.execute(f"CREATE TABLE `{db}`.n_new (id INT PRIMARY KEY, v VARCHAR(40))")
        for first in range(1, ROWS + 1, 1000):
            mariadb.execute(
                f"INSERT INTO `{db}`.n_new SELECT seq, CONCAT('r', seq)"
                f" FROM `{db}`.seq_{first}_to_{first + 999}"
            )
        with Writer(mariadb, seed=5, db=db, most=2, pause=0.05):
            assert run.wait_for(snapshotted, timeout=600, interval=0.2), run.result().describe()
            time.sleep(1.0)
        target = BinlogOffset(*mariadb.binlog_position())
        assert run.wait_for(lambda: reached(target), timeout=600, interval=0.2), run.result().describe()
        run.kill()
        log = run.result().stderr
    assert "snapshotting it while the other tables stream" in log, log[-3000:]
    paths = {t: lake / db / t for t in ("a", "n_new")}
    dumps = inspect_delta(tmp_path, paths)
    for table in paths:
        schema = source_schema(source_config, db, table)
        assert_delta_equals_source(source_config, schema, dumps[table].latest, f"{table} in Delta")
