"""A table that grew past its planned end is cut again right before its last split is read;
a crash in the middle of reading those new pieces must not leave stale rows behind.

An earlier run planned ``[None, 201) … [801, None)`` (the test writes that checkpoint). Rows
1001–3000 arrive, so the next run cuts the tail ``[801, None)`` into some ten pieces and is
killed once a high-numbered piece is in the changelog but before the checkpoint recorded any
piece as finished. Rows 1601–3000 are deleted;
run 3 cuts the tail again — now into fewer pieces — and finishes. The changelog must hold
exactly the source's rows once each: no file of a piece that no longer exists. (A JDBC sink is
safe by construction here: the new last piece deletes everything from its start on.)
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
from kill_support import Moment, Target, kill_at
from snapshot_support import Scenario, assert_same_rows

from harness.runner import checkpoint_path
from sparkcdc.core.checkpoint import Checkpoint, TablePlan, encode
from sparkcdc.core.tables import TableId

pytestmark = pytest.mark.integration

KEYS = {"g": ("id",)}
LOG = Target("tail-log", "changelog")


def test_crash_while_reading_a_grown_tail_leaves_nothing_stale(scenario: Scenario) -> None:
    db = scenario.db
    scenario.execute(f"CREATE TABLE {db}.g (id INT PRIMARY KEY, v VARCHAR(20))")
    scenario.execute(f"INSERT INTO {db}.g SELECT seq, CONCAT('v', seq) FROM {db}.seq_1_to_1000")
    options: dict[str, Any] = {"chunk_size": 200, "parallelism": 2, "splits_per_task": 8}
    manifest = scenario.manifest(LOG.pipeline, ["g"], sink="changelog", **options)

    table = TableId(db, "g")
    planned = Checkpoint(plans={table: TablePlan(((201,), (401,), (601,), (801,)), True, ("id",))})
    checkpoint_path(scenario.state_dir, LOG.pipeline).parent.mkdir(parents=True)
    checkpoint_path(scenario.state_dir, LOG.pipeline).write_text(json.dumps(encode(planned)))
    scenario.execute(f"INSERT INTO {db}.g SELECT seq, CONCAT('late', seq) FROM {db}.seq_1001_to_3000")

    log_dir = scenario.changelog_dir / f"{db}.g"

    def high_piece_written(probe: Any) -> bool:
        checkpoint = scenario.checkpoint(LOG.pipeline)
        unchanged = checkpoint is not None and not checkpoint.finished.get(next(iter(checkpoint.plans)))
        return unchanged and (log_dir / "snapshot-000010.jsonl").is_file()

    kill_at(scenario, manifest, [LOG], KEYS, Moment("a piece of the grown tail written", high_piece_written))
    scenario.execute(f"DELETE FROM {db}.g WHERE id > 1600")

    scenario.run_ok(manifest)
    source = scenario.rows(db, "g")
    final = scenario.checkpoint(LOG.pipeline)
    assert final is not None
    count = next(iter(final.plans.values())).split_count()
    files = [p.name for p in scenario.changelog_files("g")]
    records = scenario.changelog_records("g")
    keys = Counter(r["data"]["id"] for r in records)
    assert_same_rows(source, [(r["data"]["id"], r["data"]["v"]) for r in records], "changelog")
    assert max(keys.values()) == 1
    assert files == [f"snapshot-{i:06d}.jsonl" for i in range(count)], files
