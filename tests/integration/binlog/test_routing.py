"""Sink table names, collisions, merging routes and excluded tables, end to end on real MariaDB.

* Two same-named tables of two databases captured by one pattern into a JDBC sink under the
  default ``tableName: "{table}"`` are refused before anything is read or written: the run exits
  2 naming both tables and the target, and the sink database holds no table.
* With ``tableName: "{db}_{table}"`` both replicate exactly.
* A merging route sends four shards with overlapping keys (two databases, two tables each) to one
  target while a writer inserts, updates, re-keys and deletes in every shard and the run is
  killed during the snapshot and the stream: the target then equals the union of the shards,
  each row tagged with its source database and table, nothing lost, nothing doubled. The same
  route into PostgreSQL and the changelog ends equal too.
* ``excludeTables`` keeps a matching table out of the sink entirely.
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

import pytest
from binlog_support import Case, assert_same_rows, replay_changelog

from harness.writer import RandomWriter
from sparkcdc.core.checkpoint import Checkpoint
from sparkcdc.testing.postgres import PostgresServer

SHARD_ROWS = 240
SEED = 20261126

# Their runs read snapshot waves on the driver's threads (binlog/conftest.py): no JVM per run.


def _second_db(case: Case) -> str:
    other = f"{case.db}_b"
    case.execute(f"CREATE DATABASE `{other}`")
    case.sink_dbs.append(other)  # dropped by case.cleanup()
    return other


def _create_shard(case: Case, db: str, table: str, tag: str) -> None:
    case.execute(f"CREATE TABLE `{db}`.`{table}` (id INT PRIMARY KEY, v VARCHAR(40), n INT NOT NULL)")
    case.execute(
        f"INSERT INTO `{db}`.`{table}` SELECT seq, CONCAT('{tag}', seq), seq % 13"
        f" FROM `{case.db}`.seq_1_to_{SHARD_ROWS}"
    )


def _route_pipeline(case: Case, name: str, pattern: str, **sink: Any) -> dict[str, Any]:
    pipeline = case.pipeline(name, [f"re:{pattern}"], snapshot={"chunkSize": 40})
    pipeline["spec"]["sink"].update(sink)
    return pipeline


def _tables_in(case: Case, db: str) -> list[str]:
    rows = case.execute("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s", (db,))
    return sorted(str(r[0]) for r in rows if r[0] != "sparkcdc_fence")


def test_same_named_tables_are_refused_before_any_write(case: Case) -> None:
    other = _second_db(case)
    for db in (case.db, other):
        _create_shard(case, db, "orders", db)
    pipeline = _route_pipeline(case, "clash", rf"({case.db}|{other})\.orders")
    result = case.run(case.manifest("clash.yaml", pipeline))
    assert result.returncode == 2, result.describe()
    assert f"{case.db}.orders and {other}.orders" in result.stderr, result.stderr
    assert "sink table 'orders'" in result.stderr and "spec.sink.tableName" in result.stderr
    sink = case.sink_db("clash")  # not even created: no table, no fence row
    assert case.execute(
        "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = %s", (sink,)
    ) == [(0,)]
    assert case.checkpoint("clash") is None


def test_db_table_template_replicates_both(case: Case) -> None:
    other = _second_db(case)
    for db in (case.db, other):
        _create_shard(case, db, "orders", db)
    pipeline = _route_pipeline(case, "apart", rf"({case.db}|{other})\.orders", tableName="{db}_{table}")
    case.run_ok(case.manifest("apart.yaml", pipeline))
    sink = case.sink_db("apart")
    assert _tables_in(case, sink) == sorted([f"{case.db}_orders", f"{other}_orders"])
    for db in (case.db, other):
        assert_same_rows(case.rows(db, "orders"), case.rows(sink, f"{db}_orders"), db)


def test_exclude_tables_never_reach_the_sink(case: Case) -> None:
    for table in ("keep_a", "keep_b", "skip_me"):
        _create_shard(case, case.db, table, table)
    pipeline = case.pipeline("excl", [rf"re:{case.db}\..*"])
    pipeline["spec"]["source"]["tables"] = [rf"{case.db}\.(keep|skip).*"]
    pipeline["spec"]["source"]["excludeTables"] = [rf"{case.db}\.skip.*"]
    case.run_ok(case.manifest("excl.yaml", pipeline))
    assert _tables_in(case, case.sink_db("excl")) == ["keep_a", "keep_b"]
    checkpoint = case.checkpoint("excl")
    assert checkpoint is not None and sorted(t.table for t in checkpoint.tables) == ["keep_a", "keep_b"]


class ShardWriter(RandomWriter):
    """Random small transactions over every shard: inserts (keys that exist in other shards
    too), updates, key changes and deletes, until stopped."""

    def __init__(self, case: Case, shards: list[tuple[str, str]]) -> None:
        # One transaction may touch several shards.
        super().__init__(case.server, SEED, db=case.db, most=4, pause=0.01)
        self._shards = shards
        self._keys = {s: list(range(1, SHARD_ROWS + 1)) for s in shards}

    def _free_key(self, shard: tuple[str, str]) -> int:
        used = set(self._keys[shard])
        while True:
            key = self.rng.randint(1, SHARD_ROWS * 2)
            if key not in used:
                return key

    def op(self, cur: Any) -> None:
        shard = self.rng.choice(self._shards)
        name = f"`{shard[0]}`.`{shard[1]}`"
        keys = self._keys[shard]
        kind = self.rng.choices(["insert", "update", "rekey", "delete"], [2, 4, 1, 2])[0]
        if kind == "insert" or len(keys) < 20:
            key = self._free_key(shard)
            cur.execute(f"INSERT INTO {name} VALUES (%s, %s, %s)", (key, f"i{key}", self.rng.randint(0, 99)))
            keys.append(key)
            return
        index = self.rng.randrange(len(keys))
        if kind == "update":
            cur.execute(
                f"UPDATE {name} SET v = %s WHERE id = %s", (f"u{self.rng.randint(0, 10**6)}", keys[index])
            )
        elif kind == "rekey":
            new = self._free_key(shard)
            cur.execute(f"UPDATE {name} SET id = %s WHERE id = %s", (new, keys[index]))
            keys[index] = new
        else:
            cur.execute(f"DELETE FROM {name} WHERE id = %s", (keys[index],))
            keys[index] = keys[-1]
            keys.pop()


def _shards(case: Case) -> list[tuple[str, str]]:
    other = _second_db(case)
    shards = [(db, f"orders_{i}") for db in (case.db, other) for i in (0, 1)]
    for db, table in shards:
        _create_shard(case, db, table, f"{db}.{table}:")
    return shards


def _union(case: Case, shards: list[tuple[str, str]]) -> list[tuple[Any, ...]]:
    return [(db, table, *row) for db, table in shards for row in case.rows(db, table)]


def _finished(cp: Checkpoint | None) -> int:
    return 0 if cp is None else sum(len(infos) for infos in cp.finished.values())


def _kill_after(case: Case, manifest: Path, name: str, moved: Any) -> None:
    before = case.checkpoint(name)
    run = case.start(manifest)
    try:
        if not run.wait_for(lambda: moved(before, case.checkpoint(name)), 120):
            raise AssertionError(f"no progress before the kill:\n{run.result().describe()}")
        time.sleep(random.uniform(0, 0.3))
    finally:
        run.kill()


def _more_splits(before: Checkpoint | None, now: Checkpoint | None) -> bool:
    return _finished(now) > _finished(before) or bool(now and now.snapshot_done)


def _offset_moved(before: Checkpoint | None, now: Checkpoint | None) -> bool:
    mark = before.binlog_offset if before is not None else None
    offset = now.binlog_offset if now is not None else None
    return offset is not None and (mark is None or offset > mark)


@pytest.mark.timeout(600)
def test_merging_route_under_writer_and_kills(case: Case, spark: Any) -> None:
    shards = _shards(case)
    pattern = rf"({case.db}|{case.db}_b)\.orders_[0-9]+"
    pipeline = case.pipeline("merge", [f"re:{pattern}"], snapshot={"chunkSize": 40})
    pipeline["spec"]["routes"] = [{"sourceTables": pattern, "sinkTable": "orders"}]
    manifest = case.manifest("merge.yaml", pipeline)
    writer = ShardWriter(case, shards)
    writer.start()
    try:
        for _ in range(3):
            _kill_after(case, manifest, "merge", _more_splits)
        for _ in range(3):
            _kill_after(case, manifest, "merge", _offset_moved)
    finally:
        writer.stop()
    assert writer.transactions > 20
    case.run_ok(manifest)
    sink = case.sink_db("merge")
    assert _tables_in(case, sink) == ["orders"]
    assert case.columns(sink, "orders") == ["_source_db", "_source_table", "id", "v", "n"]
    assert_same_rows(_union(case, shards), case.rows(sink, "orders"), "merged orders")
    shared = f"SELECT COUNT(*) FROM (SELECT id FROM `{sink}`.orders GROUP BY id HAVING COUNT(*) > 1) AS t"
    assert case.execute(shared)[0][0] > 100  # keys of several shards, kept apart by the source columns
    # verify compares each shard with its own rows of the merged target
    reports = case.verify(spark, manifest)
    assert sum(t.chunks for r in reports for t in r.tables) > 4


def test_merging_route_into_postgres_and_the_changelog(case: Case, postgres: PostgresServer) -> None:
    shards = _shards(case)
    pattern = rf"({case.db}|{case.db}_b)\.orders_[0-9]+"
    route = [{"sourceTables": pattern, "sinkTable": "orders", "sourceColumns": {"database": "src_db"}}]
    pg = case.pipeline("merge-pg", [f"re:{pattern}"], snapshot={"chunkSize": 40})
    database, pg_secret = case.to_postgres(pg, postgres)
    log = case.pipeline("merge-log", [f"re:{pattern}"], sink="changelog", snapshot={"chunkSize": 40})
    for pipeline in (pg, log):
        pipeline["spec"]["routes"] = route
        pipeline["spec"]["startup"] = {"mode": "initial"}
    manifest = case.manifest("merge-pg.yaml", pg_secret, pg, log)
    writer = ShardWriter(case, shards)
    writer.start()
    try:
        _kill_after(case, manifest, "merge-pg", _more_splits)
        time.sleep(1)
    finally:
        writer.stop()
    case.run_ok(manifest)
    stored = postgres.execute("SELECT src_db, _source_table, id, v, n FROM orders", database=database)
    assert_same_rows(_union(case, shards), [tuple(r) for r in stored], "orders in PostgreSQL")
    replayed = replay_changelog(
        case.changelog_dir("merge-log") / "orders",
        key=lambda d: (d["src_db"], d["_source_table"], d["id"]),
    )
    rows = [(d["src_db"], d["_source_table"], d["id"], d["v"], d["n"]) for d in replayed.values()]
    assert_same_rows(_union(case, shards), rows, "orders in the changelog")
