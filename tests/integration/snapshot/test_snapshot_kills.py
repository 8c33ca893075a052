"""SIGKILL at many moments, rerun with the same --state-dir: the sink ends equal to the source,
with every row exactly once (architecture §3 rules 3 and 6).

One manifest runs two pipelines side by side over the same tables, one into a JDBC replica and
one into the changelog sink. A chain of runs on one --state-dir is killed at a list of moments
spread over the snapshot (each waits until its pipeline has checkpointed a number of splits):
random delays seeded per case, during start-up, right after planning, in the middle of a split's
sink transaction (an open replica transaction that has modified rows, a changelog file half
written), and after a split was committed to the sink but before the checkpoint recorded it. A kill takes
down the whole process tree at once, as a pod kill does (tests/harness/runner.py).

After every kill neither checkpoint claims more than its sink holds. After the last run (exit
0) the replica equals the source, and the changelog has one file per split with each key
exactly once. It runs with the waves as Spark tasks and on the driver's threads.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest
from kill_support import (
    Moment,
    Target,
    after_plan,
    after_start,
    at_progress,
    column_names,
    committed_not_checkpointed,
    kill_chain,
    mid_sink_transaction,
    random_moments,
)
from snapshot_support import Scenario, assert_same_rows

from sparkcdc.options import SNAPSHOT_IN_DRIVER_ENV as IN_DRIVER_ENV

pytestmark = pytest.mark.integration

TABLES = {"k1": ("id",), "k2": ("code",)}
JDBC = Target("kills-jdbc", "jdbc")
LOG = Target("kills-log", "changelog")


def _create_tables(scenario: Scenario, scale: int) -> None:
    db = scenario.db
    scenario.execute(f"CREATE TABLE {db}.k1 (id INT PRIMARY KEY, v VARCHAR(40), n INT)")
    scenario.execute(
        f"INSERT INTO {db}.k1 SELECT seq, CONCAT('v', seq), IF(seq % 5 = 0, NULL, seq * 3)"
        f" FROM {db}.seq_1_to_{2400 * scale}"
    )
    scenario.execute(
        f"CREATE TABLE {db}.k2 (code VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"
        " PRIMARY KEY, qty INT NOT NULL)"
    )
    scenario.execute(
        f"INSERT INTO {db}.k2 SELECT CONCAT(ELT(1 + seq % 4, 'a', 'B', 'c', 'D'), LPAD(seq, 5, '0'),"
        f" IF(seq % 7 = 0, ' ', '')), seq FROM {db}.seq_1_to_{900 * scale}"
    )


@pytest.mark.parametrize("where", ["spark", "driver"])
def test_kills_at_many_moments(scenario: Scenario, where: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Waves as Spark tasks, or on the driver's threads (as before Spark is up, engine/wave_runner.py).
    monkeypatch.setenv(IN_DRIVER_ENV, "never" if where == "spark" else "always")
    # Without a JVM the runs are several times faster: more rows keep the moments inside them.
    _create_tables(scenario, 1 if where == "spark" else 5)
    options: dict[str, Any] = {"chunk_size": 150, "splits_per_task": 2, "tls": "disabled"}
    jdbc = scenario.manifest(JDBC.pipeline, list(TABLES), **options)
    # Small INSERT batches: a split's transaction takes several statements, long enough to be
    # caught open. A bulk load (the default into MariaDB) is one LOAD DATA after the range delete,
    # over before a probe polling the server sees it; its transaction is the same one.
    jdbc_text = jdbc.read_text().replace(
        "    type: jdbc\n", "    type: jdbc\n    batchRows: 10\n    bulkLoad: false\n"
    )
    assert "bulkLoad: false" in jdbc_text, jdbc_text
    log = scenario.manifest(LOG.pipeline, list(TABLES), sink="changelog", **options)
    manifest = scenario.work / "kills.yaml"
    manifest.write_text(jdbc_text + "---\n" + log.read_text())
    random_a, random_b = random_moments(11, 2)
    moments = [
        (Moment("during start-up", after_start(random.Random(21).uniform(0.5, 3.0))), JDBC),
        (Moment("right after planning", after_plan()), JDBC),
        (Moment("mid sink transaction", mid_sink_transaction), JDBC),
        (Moment("mid changelog file write", mid_sink_transaction), LOG),
        (Moment("after sink commit, before checkpoint", at_progress(1, committed_not_checkpointed)), JDBC),
        (Moment("after split file, before checkpoint", at_progress(1, committed_not_checkpointed)), LOG),
        (random_a, JDBC),
        (Moment("mid sink transaction, later", at_progress(4, mid_sink_transaction)), JDBC),
        (Moment("after split file, later", at_progress(5, committed_not_checkpointed)), LOG),
        (random_b, LOG),
        (Moment("after sink commit, later", at_progress(8, committed_not_checkpointed)), JDBC),
    ]
    if where == "driver":
        # Without a JVM the changelog pipeline writes its files in about a second, too fast to
        # catch one file write by polling (its atomic write is the same code as in the Spark
        # run), and a run resumed late in the chain can finish within a random delay. So the
        # moments here are the JDBC pipeline's, each waiting for a state rather than a time; the
        # changelog pipeline is killed with it every time.
        moments = [(m, target) for m, target in moments if target is JDBC and m is not random_a]
        moments.insert(4, (Moment("mid sink transaction, at 2", at_progress(2, mid_sink_transaction)), JDBC))
    report = kill_chain(scenario, manifest, TABLES, moments, [JDBC, LOG])
    print("\n".join(report))
    assert len(report) == len(moments) + 1

    for table in TABLES:
        scenario.assert_replica_equal(table)
    final = scenario.checkpoint(LOG.pipeline)
    assert final is not None
    for table, key in TABLES.items():
        plan = next(p for t, p in final.plans.items() if t.table == table)
        files = [p.name for p in scenario.changelog_files(table)]
        assert files == [f"snapshot-{i:06d}.jsonl" for i in range(plan.split_count())], files
        # Killed runs left temporary files mid-write; the runs after them removed them.
        leftovers = sorted(p.name for p in (scenario.changelog_dir / f"{scenario.db}.{table}").glob(".*.tmp"))
        assert not leftovers, f"{table}: temporary files of killed runs left behind: {leftovers}"
        records = scenario.changelog_records(table)
        assert {r["op"] for r in records} == {"+I"}
        keys = Counter(tuple(r["data"][k] for k in key) for r in records)
        duplicated = [k for k, n in keys.items() if n > 1]
        assert not duplicated, f"{table}: keys written more than once: {duplicated[:10]}"
        names = column_names(scenario, table)
        rows = [tuple(r["data"][n] for n in names) for r in records]
        assert_same_rows(scenario.rows(scenario.db, table), rows, f"changelog of {table}")
        assert max(Counter(r["id"] for r in records).values()) == 1, "event ids must be unique"
