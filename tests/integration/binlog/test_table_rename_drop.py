"""RENAME TABLE and DROP TABLE of captured tables followed mid-stream (engine/table_moves.py), under
a concurrent writer, into MariaDB (``onTableDrop: drop``), PostgreSQL (``keep``) and the changelog.

Four tables match the pipelines' pattern ``(r|r2|d|z|y)``; ``MoveWriter`` writes them and runs
``SCRIPT`` between its transactions:

* ``RENAME TABLE r TO r2``: the table streams on as ``r2`` without a snapshot; each JDBC target is
  renamed and holds exactly the source's ``r2``; the changelog has a ``rename`` record in both
  directories and the records after it under ``r2``;
* ``DROP TABLE d``: MariaDB's target is dropped, PostgreSQL's keeps the rows ``d`` had when it was
  dropped, the changelog ends ``d`` with a ``drop`` record;
* ``ALTER TABLE z RENAME TO gone_z`` (a name the pattern does not match): followed as a drop;
* ``y``: the neighbour, untouched.

The pipelines are killed (SIGKILL) after the script, and resumed; then a second test kills a
pipeline right after it followed a rename under a writer, and resumes (with and without the
initial snapshot): the renamed table's target ends equal to the source either way.
"""

from __future__ import annotations

import json
import queue
import re
import time
from pathlib import Path
from typing import Any

import pytest
from binlog_support import Case, assert_same_rows

from harness.decoder import built_decoder
from harness.waiting import wait_until
from harness.writer import RandomWriter
from sparkcdc.core.checkpoint import Phase
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.tables import TableId
from sparkcdc.testing.postgres import PostgresServer

PIPELINES = ("mv-my", "mv-pg", "mv-log")
SCRIPT = ["RENAME TABLE r TO r2", "DROP TABLE d", "ALTER TABLE z RENAME TO gone_z"]


class MoveWriter(RandomWriter):
    """Writes the tables under their current names and runs the next statement when asked;
    keeps each dropped (or renamed away) table's rows as they were at the statement."""

    def __init__(self, server: Any, db: str, seed: int) -> None:
        super().__init__(server, seed, db=db, most=3, pause=0.01)
        self.names = {"r": "r", "d": "d", "z": "z", "y": "y"}
        self.done = 0
        self.last: dict[str, list[tuple[Any, ...]]] = {}
        self._pending: queue.Queue[str] = queue.Queue()

    def next_statement(self, statement: str) -> None:
        self._pending.put(statement)

    def transaction(self, cur: Any) -> None:
        try:
            statement = self._pending.get_nowait()
        except queue.Empty:
            super().transaction(cur)
            return
        for role in ("d", "z"):
            if re.search(rf"\b{role}\b", statement):
                cur.execute(f"SELECT * FROM `{role}`")
                self.last[role] = [tuple(r) for r in cur.fetchall()]
        cur.execute(statement)
        if "TO r2" in statement:
            self.names["r"] = "r2"
        if "DROP TABLE d" in statement:
            del self.names["d"]
        if "gone_z" in statement:
            self.names["z"] = "gone_z"
        self.done += 1

    def op(self, cur: Any) -> None:
        table = self.names[self.rng.choice(sorted(self.names))]
        key = self.rng.randint(1, 60)
        if self.rng.random() < 0.75:
            value = f"{table}{self.rng.randint(0, 999)}"
            cur.execute(
                f"INSERT INTO `{table}` VALUES (%s, %s) ON DUPLICATE KEY UPDATE v = VALUES(v)", (key, value)
            )
        else:
            cur.execute(f"DELETE FROM `{table}` WHERE id = %s", (key,))


def _create_tables(case: Case, rows: int = 30) -> None:
    for name in ("r", "d", "z", "y"):
        case.execute(f"CREATE TABLE `{case.db}`.`{name}` (id INT PRIMARY KEY, v VARCHAR(20))")
        if rows:
            values = ", ".join(f"({i}, '{name}{i}')" for i in range(1, rows + 1))
            case.execute(f"INSERT INTO `{case.db}`.`{name}` VALUES {values}")


def _pattern(case: Case) -> str:
    return rf"re:{re.escape(case.db)}\.(r|r2|d|z|y)"


def _records(directory: Path) -> list[dict[str, Any]]:
    out = []
    for path in sorted(directory.glob("*.jsonl"), key=_file_order):
        out.extend(json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
    return out


def _file_order(path: Path) -> tuple[int, tuple[int, int], str]:
    name = path.stem
    if name.startswith("snapshot-"):
        return (0, (0, 0), name)
    file, _, pos = name.removeprefix("binlog-").rpartition("-")
    return (1, BinlogOffset(file, int(pos)).sort_key(), name)


def _replay(*directories: Path) -> list[tuple[Any, ...]]:
    """The rows a consumer rebuilds from the directories' records in binlog order."""
    paths = sorted((p for d in directories for p in d.glob("*.jsonl")), key=_file_order)
    rows: dict[Any, tuple[Any, ...]] = {}
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            data = record["data"]
            if record["op"] in ("+I", "+U"):
                rows[data["id"]] = (data["id"], data["v"])
            elif record["op"] in ("-U", "-D"):
                rows.pop(data["id"], None)
    return list(rows.values())


def _sink_tables(case: Case, suffix: str) -> set[str]:
    rows = case.execute(
        "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s", (case.sink_db(suffix),)
    )
    return {str(r[0]) for r in rows}


def _stream_the_script(case: Case, manifest: Path, writer: MoveWriter) -> str:
    """The script run while the pipelines stream; their log (stderr)."""
    run = case.start(manifest)
    with run:
        now = case.position()
        for pipeline in PIPELINES:
            case.wait_offset(run, pipeline, now, timeout=240)
        # The MariaDB pipeline on the Go decoder (once past the snapshot handoff) before the first
        # statement, which it then hands to the Python reader.
        native = "[mv-my] the live path reads from"
        assert run.wait_for(lambda: native in run.stderr_path.read_text(), 60, interval=0.2), (
            run.result().describe()
        )
        with writer:
            for done, statement in enumerate(SCRIPT, start=1):
                time.sleep(0.8)  # rows before the statement, in flight while it comes
                writer.next_statement(statement)
                wait_until(lambda done=done: writer.done >= done, timeout=30, message=statement)
            time.sleep(0.8)
        target = case.position()
        for pipeline in PIPELINES:
            case.wait_offset(run, pipeline, target, timeout=180)
        run.kill()
    return run.result().stderr


def test_renames_and_drops_followed_into_mariadb_postgres_and_the_changelog(
    case: Case, postgres: PostgresServer
) -> None:
    db = case.db
    _create_tables(case)
    my = case.pipeline("mv-my", [_pattern(case)])
    my["spec"]["sink"]["onTableDrop"] = "drop"
    pg = case.pipeline("mv-pg", [_pattern(case)])
    pg_db, pg_secret = case.to_postgres(pg, postgres)
    log = case.pipeline("mv-log", [_pattern(case)], sink="changelog")
    manifest = case.manifest("moves.yaml", pg_secret, my, pg, log)
    writer = MoveWriter(case.server, db, seed=23)

    streamed = _stream_the_script(case, manifest, writer)
    # The JDBC pipelines stream on the Go decoder, which hands the statements to the Python reader.
    assert built_decoder() is not None, "build the Go decoder first: bash binlogdec/build.sh"
    handed = "the Go decoder stops (a schema change of a captured table)"
    assert "[mv-my] at " in streamed and handed in streamed, streamed[-3000:]
    case.execute(f"INSERT INTO `{db}`.r2 VALUES (500, 'after')")
    case.execute(f"INSERT INTO `{db}`.y VALUES (500, 'after')")
    result = case.run(manifest)  # resumes past every statement, catches up, exits
    assert result.returncode == 0, result.describe()

    # MariaDB, onTableDrop: drop: r2 renamed and exact, d and z gone.
    assert {"r2", "y"} <= _sink_tables(case, "mv_my")
    assert not {"r", "d", "z"} & _sink_tables(case, "mv_my")
    case.assert_replica("mv_my", "r2")
    case.assert_replica("mv_my", "y")

    # PostgreSQL, keep: r2 renamed and exact; d and z as they were when they went.
    for table in ("r2", "y"):
        rows = postgres.execute(f"SELECT id, v FROM {table}", database=pg_db)
        assert_same_rows(case.rows(db, table), [tuple(r) for r in rows], f"{table} in PostgreSQL")
    assert not postgres.execute(
        "SELECT 1 FROM information_schema.tables WHERE table_name = 'r'", database=pg_db
    )
    for table in ("d", "z"):
        rows = postgres.execute(f"SELECT id, v FROM {table}", database=pg_db)
        assert_same_rows(writer.last[table], [tuple(r) for r in rows], f"{table} kept in PostgreSQL")

    # The changelog: r's records, then r2's after the rename record, replay to the source's r2.
    base = case.changelog_dir("mv-log")
    r_dir, r2_dir = base / f"{db}.r", base / f"{db}.r2"
    assert_same_rows(case.rows(db, "r2"), _replay(r_dir, r2_dir), "r then r2 in the changelog")
    for directory in (r_dir, r2_dir):
        renames = [x for x in _records(directory) if x["op"] == "rename"]
        assert [(x["table"], x["to"], x["statement"]) for x in renames] == [
            (f"{db}.r", f"{db}.r2", "RENAME TABLE r TO r2")
        ], renames
    assert _records(r_dir)[-1]["op"] == "rename"
    assert {x["table"] for x in _records(r2_dir) if x["op"] != "rename"} == {f"{db}.r2"}
    # The server logs DROP TABLE as ``DROP TABLE `d` /* generated by server */``.
    for table, statement in (("d", "DROP TABLE `d`"), ("z", "ALTER TABLE z RENAME TO gone_z")):
        last = _records(base / f"{db}.{table}")[-1]
        assert (last["op"], last["data"]) == ("drop", {}) and last["statement"].startswith(statement), last

    # Checkpoints: r2 streams under its new name, the others are forgotten; nothing failed.
    for pipeline in PIPELINES:
        checkpoint = case.checkpoint(pipeline)
        assert checkpoint is not None
        states = {str(t): s.phase for t, s in checkpoint.tables.items()}
        assert states == {f"{db}.r2": Phase.BINLOG, f"{db}.y": Phase.BINLOG}, (pipeline, states)
        assert {str(t) for t in checkpoint.definitions} == {f"{db}.r2", f"{db}.y"}


@pytest.mark.parametrize("mode", ["initial", "latest"])
def test_a_kill_right_after_a_rename_resumes_exactly(case: Case, mode: str) -> None:
    """Killed right after the pipeline followed a rename, under a writer (so before or after its
    next batch): the resumed run streams the new name on from its checkpoint, and its target ends
    equal to the source (``latest``: without any snapshot)."""
    db = case.db
    _create_tables(case, rows=0 if mode == "latest" else 30)
    pipeline = case.pipeline("mv-kill", [_pattern(case)], startup={"mode": mode})
    manifest = case.manifest("kill.yaml", pipeline)
    writer = MoveWriter(case.server, db, seed=29)
    r, r2 = TableId(db, "r"), TableId(db, "r2")

    def tables() -> set[TableId]:
        checkpoint = case.checkpoint("mv-kill")
        return set(checkpoint.definitions) if checkpoint is not None else set()

    run = case.start(manifest)
    with run:
        case.wait_offset(run, "mv-kill", case.position(), timeout=240)
        with writer:
            assert run.wait_for(lambda: r in tables(), 60, interval=0.1), run.result().describe()
            time.sleep(0.5)
            writer.next_statement("RENAME TABLE r TO r2")
            assert run.wait_for(lambda: r2 in tables(), 60, interval=0.01), run.result().describe()
            run.kill()
            time.sleep(1.0)  # rows of r2 while the pipeline is down
    case.execute(f"INSERT INTO `{db}`.r2 VALUES (501, 'after')")
    result = case.run(manifest)
    assert result.returncode == 0, result.describe()
    case.assert_replica("mv_kill", "r2")
    case.assert_replica("mv_kill", "y")
    assert "r" not in _sink_tables(case, "mv_kill")
    checkpoint = case.checkpoint("mv-kill")
    assert checkpoint is not None
    states = {str(t): s for t, s in checkpoint.tables.items()}
    assert f"{db}.r" not in states, states
    assert all(s.phase is Phase.BINLOG for s in states.values()), states


def test_a_rename_while_the_pipeline_is_down_is_followed_at_the_next_start(case: Case) -> None:
    """The source renames a pattern-captured table while the pipeline is stopped: the next start
    keeps the old name (its recorded definition decodes the events before the statement), follows
    the rename, and the target under the new name equals the source — no snapshot of it again."""
    db = case.db
    _create_tables(case)
    manifest = case.manifest("down.yaml", case.pipeline("mv-down", [_pattern(case)]))
    case.run_ok(manifest)
    case.execute(f"INSERT INTO `{db}`.r VALUES (401, 'before')")
    case.execute(f"RENAME TABLE `{db}`.r TO `{db}`.r2")
    case.execute(f"INSERT INTO `{db}`.r2 VALUES (402, 'after')")
    case.execute(f"UPDATE `{db}`.r2 SET v = 'moved' WHERE id = 1")
    result = case.run_ok(manifest)
    assert "planning splits of" not in result.stderr.split("streaming the binlog")[-1], result.describe()
    case.assert_replica("mv_down", "r2")
    case.assert_replica("mv_down", "y")
    assert "r" not in _sink_tables(case, "mv_down")
    checkpoint = case.checkpoint("mv-down")
    assert checkpoint is not None and TableId(db, "r") not in checkpoint.tables
    assert checkpoint.tables[TableId(db, "r2")].phase is Phase.BINLOG
