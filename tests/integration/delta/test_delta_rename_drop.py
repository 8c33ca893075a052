"""RENAME TABLE and DROP TABLE followed mid-stream into Delta (sinks/delta/table_follow.py), under
a concurrent writer: the renamed table's directory is moved to its new name's path and streams on
there without a snapshot; with ``onTableDrop: drop`` the dropped table's directory is deleted.
Killed after the statements and resumed, each remaining Delta table equals its source table.
"""

from __future__ import annotations

import functools
import queue
import time
from pathlib import Path
from typing import Any

from delta_support import assert_delta_equals_source, delta_sink, inspect_delta, source_schema

from harness.runner import (
    SparkcdcProcess,
    checkpointed_past,
    load_checkpoint,
    pipeline_manifest,
    run_sparkcdc,
)
from harness.waiting import wait_until
from harness.writer import RandomWriter
from sparkcdc.core.checkpoint import Phase
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.mysql.connection import SourceConfig
from sparkcdc.testing.mariadb import MariaDBServer

PIPELINE = "delta-moves"


class Writer(RandomWriter):
    """Upserts and deletes rows of the tables under their current names; runs a statement
    between two transactions when asked."""

    def __init__(self, server: Any, db: str) -> None:
        super().__init__(server, 31, db=db, most=2, pause=0.1)
        self.names = ["r", "d", "y"]
        self.done = 0
        self._pending: queue.Queue[tuple[str, str, str | None]] = queue.Queue()

    def run_statement(self, statement: str, old: str, new: str | None) -> None:
        self._pending.put((statement, old, new))

    def transaction(self, cur: Any) -> None:
        try:
            statement, old, new = self._pending.get_nowait()
        except queue.Empty:
            super().transaction(cur)
            return
        cur.execute(statement)
        self.names.remove(old)
        if new is not None:
            self.names.append(new)
        self.done += 1

    def op(self, cur: Any) -> None:
        table, key = self.rng.choice(self.names), self.rng.randint(1, 40)
        if self.rng.random() < 0.75:
            value = f"{table}{self.rng.randint(0, 999)}"
            cur.execute(
                f"INSERT INTO `{table}` VALUES (%s, %s) ON DUPLICATE KEY UPDATE v = VALUES(v)", (key, value)
            )
        else:
            cur.execute(f"DELETE FROM `{table}` WHERE id = %s", (key,))


def test_rename_and_drop_followed_into_delta(
    mariadb: MariaDBServer, source_config: SourceConfig, fresh_db: str, tmp_path: Path
) -> None:
    db = fresh_db
    for name in ("r", "d", "y"):
        mariadb.execute(f"CREATE TABLE `{db}`.`{name}` (id INT PRIMARY KEY, v VARCHAR(20))")
        mariadb.execute(
            f"INSERT INTO `{db}`.`{name}` VALUES " + ", ".join(f"({i}, 'v{i}')" for i in range(1, 21))
        )
    lake, state, logs = tmp_path / "lake", tmp_path / "state", tmp_path / "logs"
    assert mariadb.cdc_password
    manifest = pipeline_manifest(
        tmp_path / "pipeline.yaml",
        name=PIPELINE,
        host=mariadb.host,
        port=mariadb.port,
        password=mariadb.cdc_password,
        tables=[rf"{db}\.(r|r2|d|y)"],
        sink=delta_sink(lake, onTableDrop="drop"),
        mode="initial",
    )

    reached = functools.partial(checkpointed_past, state, PIPELINE)

    with SparkcdcProcess(manifest, state, logs, exit_when_caught_up=False) as run:
        now = BinlogOffset(*mariadb.binlog_position())
        assert run.wait_for(lambda: reached(now), timeout=1200, interval=0.2), run.result().describe()
        with Writer(mariadb, db) as writer:
            for done, (statement, old, new) in enumerate(
                [("RENAME TABLE r TO r2", "r", "r2"), ("DROP TABLE d", "d", None)], start=1
            ):
                time.sleep(1.5)
                writer.run_statement(statement, old, new)
                wait_until(lambda done=done: writer.done >= done, timeout=30, message=statement)
            time.sleep(1.5)
        target = BinlogOffset(*mariadb.binlog_position())
        assert run.wait_for(lambda: reached(target), timeout=1200, interval=0.2), run.result().describe()
        run.kill()
    mariadb.execute(f"INSERT INTO `{db}`.r2 VALUES (500, 'after')")
    result = run_sparkcdc(manifest, state, logs, timeout=600)  # resumes past both statements
    assert result.returncode == 0, result.describe()

    assert not (lake / db / "r").exists() and not (lake / db / "d").exists()
    paths = {t: lake / db / t for t in ("r2", "y")}
    dumps = inspect_delta(tmp_path, paths)
    for table in paths:
        schema = source_schema(source_config, db, table)
        assert_delta_equals_source(source_config, schema, dumps[table].latest, f"{table} in Delta")
    checkpoint = load_checkpoint(state, PIPELINE)
    assert checkpoint is not None
    states = {str(t): s.phase for t, s in checkpoint.tables.items()}
    assert states == {f"{db}.r2": Phase.BINLOG, f"{db}.y": Phase.BINLOG}, states
