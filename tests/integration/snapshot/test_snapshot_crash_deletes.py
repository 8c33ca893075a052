"""Rows deleted at the source between a crash and the restart do not survive in the sink.

The run is killed right after the sink committed a split that the checkpoint does not list yet.
Then, before the restart, the source loses rows of every kind: rows of such committed but
unrecorded splits (one of them entirely), rows of splits not read yet, and rows of splits the
checkpoint lists as finished; and some rows change. The restart re-reads every unfinished split
and replaces its whole key range in the sink (architecture §3 rule 3), so none of the deleted rows of
those splits survive. A finished split is not re-read: with ``snapshot-only`` its rows stay as
of its high watermark. Switching the same pipeline to ``initial`` afterwards streams the binlog
from the splits' high watermarks, which removes those rows too: the replica ends equal to the
source.
"""

from __future__ import annotations

from typing import Any

import pytest
from kill_support import Moment, Target, committed_not_checkpointed, finished_splits, kill_at
from snapshot_support import Scenario, assert_same_rows, int_key

from sparkcdc.core.splits import SnapshotSplit

pytestmark = pytest.mark.integration

KEYS = {"d": ("id",)}


def _owner(key: int, splits: list[SnapshotSplit]) -> SnapshotSplit:
    for split in splits:
        if (split.start is None or key >= int_key(split.start)) and (
            split.end is None or key < int_key(split.end)
        ):
            return split
    raise AssertionError(f"no split owns {key}")


def test_rows_deleted_between_crash_and_restart_do_not_survive(scenario: Scenario) -> None:
    db = scenario.db
    scenario.execute(f"CREATE TABLE {db}.d (id INT PRIMARY KEY, v VARCHAR(40) NOT NULL)")
    scenario.execute(f"INSERT INTO {db}.d SELECT seq, CONCAT('v', seq) FROM {db}.seq_1_to_3000")
    options: dict[str, Any] = {
        "chunk_size": 150,
        "splits_per_task": 2,
        "binlog": {"heartbeatIntervalSeconds": 1},
    }
    manifest = scenario.manifest("crash", ["d"], mode="snapshot-only", **options)

    moment = Moment("after sink commit", committed_not_checkpointed)
    line = kill_at(scenario, manifest, [Target("crash", "jdbc")], KEYS, moment)
    checkpoint = scenario.checkpoint("crash")
    assert checkpoint is not None
    splits = [s for t, p in checkpoint.plans.items() for s in p.splits(t)]
    finished = {s.index for s in finished_splits(checkpoint)}
    in_sink = {int(r[0]) for r in scenario.rows(scenario.sink_db, "d")}
    by_state: dict[str, list[int]] = {"finished": [], "unrecorded": [], "unread": []}
    for key in range(1, 3001):
        split = _owner(key, splits)
        state = "finished" if split.index in finished else "unrecorded" if key in in_sink else "unread"
        by_state[state].append(key)
    assert by_state["unrecorded"], f"no committed but unrecorded split at the kill ({line})"
    assert by_state["unread"], line

    unrecorded = sorted({_owner(k, splits).index for k in by_state["unrecorded"]})
    emptied = splits[unrecorded[0]]  # every row of one committed-but-unrecorded split goes
    doomed = [k for k in by_state["unrecorded"] if _owner(k, splits) == emptied]
    doomed += by_state["unrecorded"][len(doomed) :: 7]  # and some of the others, first rows included
    doomed += by_state["unread"][::50] + by_state["unread"][:1] + by_state["unread"][-1:]
    gone_finished = by_state["finished"][::97]
    changed = by_state["unrecorded"][3::11]
    with scenario.server.root_connection(db) as conn, conn.cursor() as cur:
        cur.executemany("DELETE FROM d WHERE id = %s", [(k,) for k in {*doomed, *gone_finished}])
        cur.executemany("UPDATE d SET v = CONCAT('changed ', id) WHERE id = %s", [(k,) for k in changed])

    scenario.run_ok(manifest)

    source = scenario.rows(db, "d")
    sink = scenario.rows(scenario.sink_db, "d")
    sink_keys = {int(r[0]) for r in sink}
    assert not sink_keys & set(doomed), sorted(sink_keys & set(doomed))[:20]
    # Every split unfinished at the crash is exact; the finished ones were not read again.
    rerun = [r for r in sink if _owner(int(r[0]), splits).index not in finished]
    expected = [r for r in source if _owner(int(r[0]), splits).index not in finished]
    assert_same_rows(expected, rerun, "splits re-read after the crash")
    assert set(gone_finished) <= sink_keys, "a finished split was read again"

    # The binlog phase (from each split's high watermark) removes the rest.
    manifest = scenario.manifest("crash", ["d"], mode="initial", **options)
    scenario.run_ok(manifest)
    assert_same_rows(scenario.rows(db, "d"), scenario.rows(scenario.sink_db, "d"), "replica after the binlog")
