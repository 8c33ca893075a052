"""Tables added to and removed from a running ``sparkcdc run`` by editing its manifest.

One run streams table ``a`` while a writer changes ``a`` and ``b``. The manifest is edited to add
``b`` (an existing table with rows): the run follows the edit without a restart (one process
throughout, driver/spec_watch.py ``ManifestWatch``), snapshots ``b`` beside the stream and ends
with ``b``'s replica exactly its source, while ``a``'s writes keep arriving. The manifest is then
edited to remove ``b``: it stops being captured, and its later writes never reach the sink.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from binlog_support import Case, assert_same_rows

from harness.runner import SparkcdcProcess
from harness.writer import RandomWriter
from sparkcdc.core.checkpoint import Phase
from sparkcdc.core.tables import TableId

ROWS = 400
PIPELINE = "live"


class Writer(RandomWriter):
    """Small transactions on ``a`` and ``b`` (the next new key of each kept apart) until stopped."""

    def __init__(self, case: Case) -> None:
        super().__init__(case.server, 23, db=case.db, pause=0.01)
        self._next = {"a": ROWS + 1, "b": ROWS + 1}

    def op(self, cur: Any) -> None:
        table = self.rng.choice(["a", "b"])
        kind = self.rng.choice(["insert", "update", "update", "delete"])
        key = self.rng.randint(1, self._next[table] - 1)
        if kind == "insert":
            cur.execute(f"INSERT INTO `{table}` VALUES (%s, %s, %s)", (self._next[table], "new", 0))
            self._next[table] += 1
        elif kind == "update":
            cur.execute(f"UPDATE `{table}` SET v = %s, n = n + 1 WHERE id = %s", (str(key), key))
        else:
            cur.execute(f"DELETE FROM `{table}` WHERE id = %s", (key,))


def _create(case: Case) -> None:
    for table in ("a", "b"):
        columns = "id INT PRIMARY KEY, v VARCHAR(40), n INT NOT NULL"
        case.execute(f"CREATE TABLE `{case.db}`.`{table}` ({columns})")
        case.execute(
            f"INSERT INTO `{case.db}`.`{table}` SELECT seq, CONCAT('{table}-', seq), seq % 7 "
            f"FROM `{case.db}`.seq_1_to_{ROWS}"
        )


def _edit_tables(manifest: Path, tables: list[str]) -> None:
    """Rewrite the manifest's pipeline with ``tables``, as a user's editor would."""
    documents = list(yaml.safe_load_all(manifest.read_text(encoding="utf-8")))
    for document in documents:
        if document.get("kind") == "CdcPipeline":
            document["spec"]["source"]["tables"] = tables
    manifest.write_text(yaml.safe_dump_all(documents, sort_keys=False), encoding="utf-8")


def _caught_up(case: Case, run: SparkcdcProcess) -> None:
    case.wait_offset(run, PIPELINE, case.position(), timeout=180)
    assert run.poll() is None, run.result().describe()


def test_a_table_added_and_removed_while_streaming(case: Case) -> None:
    _create(case)
    suffix, b = PIPELINE, TableId(case.db, "b")
    manifest = case.manifest("live.yaml", case.pipeline(PIPELINE, ["a"]))
    with case.start(manifest) as run, Writer(case) as writer:
        pid = run.pid
        _caught_up(case, run)
        a_rows = case.rows(case.sink_db(suffix), "a")

        _edit_tables(manifest, [f"{case.db}.a", f"{case.db}.b"])

        def b_streams() -> bool:  # its every split written beside the stream
            checkpoint = case.checkpoint(PIPELINE)
            state = checkpoint.tables.get(b) if checkpoint else None
            return state is not None and state.phase is Phase.BINLOG

        assert run.wait_for(b_streams, timeout=180, interval=0.2), run.result().describe()
        writer.stop()
        _caught_up(case, run)
        assert case.rows(case.sink_db(suffix), "a") != a_rows, "a's writes stopped arriving"
        case.assert_replica(suffix, "a")
        case.assert_replica(suffix, "b")
        assert run.pid == pid and run.poll() is None  # followed without a restart

        _edit_tables(manifest, [f"{case.db}.a"])
        writer.start()

        def b_gone() -> bool:
            checkpoint = case.checkpoint(PIPELINE)
            return checkpoint is not None and b not in checkpoint.tables

        assert run.wait_for(b_gone, timeout=60, interval=0.2), run.result().describe()
        b_then = case.rows(case.sink_db(suffix), "b")
        case.execute(f"INSERT INTO `{case.db}`.b VALUES (100000, 'after the removal', 1)")
        case.execute(f"UPDATE `{case.db}`.b SET v = 'after the removal' WHERE id <= 20")
        writer.stop()
        _caught_up(case, run)
        case.assert_replica(suffix, "a")
        assert_same_rows(b_then, case.rows(case.sink_db(suffix), "b"), "b after its removal")
        assert run.pid == pid and run.poll() is None
    log = run.result().stderr
    assert "following the spec edit" in log, log[-3000:]
