"""Consistency of ``sparkcdc run`` into Delta: snapshot and binlog under concurrent writes and
SIGKILLs, exactly-once binlog commits, and time travel (architecture §3 rules 2–6).

Two tables (an integer key and a case-insensitive string key) are written by a writer thread
for the whole test: small transactions of inserts, updates and deletes, each followed by the
binlog position it ended at, kept in a log. A chain of ``sparkcdc run`` processes on one
--state-dir is SIGKILLed (the whole process tree, like a pod kill) at three moments: at a random
time during the snapshot, right after a snapshot commit appeared in the Delta log (before the
checkpoint can record it), and at a random delay of up to 0.3 s after a binlog MERGE commit
appeared while streaming (before or after its checkpoint). Then the writer stops, the source
adds a column with a default (followed through the binlog), and a last run catches up.

Then: each Delta table equals its source table; the binlog commits of each table have strictly
increasing offsets (no batch was applied twice, whatever was replayed); and time travel to
binlog versions after the snapshot shows exactly the source's state at the offset the commit
recorded, rebuilt from the writer's log.
"""

from __future__ import annotations

import itertools
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from delta_support import (
    assert_delta_equals_source,
    assert_rows_equal,
    delta_sink,
    inspect_delta,
    normalized,
    source_rows,
    source_schema,
)

from harness.runner import SparkcdcProcess, checkpoint_path, load_checkpoint, pipeline_manifest
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.mysql.connection import SourceConfig
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks.spark_types import to_spark_arrow
from sparkcdc.testing.mariadb import MariaDBServer

PIPELINE = "delta-kills"
# Runs killed and resumed on a Delta-enabled Spark: 420 s here beside the other lanes of `make test`.
pytestmark = pytest.mark.timeout(1500)
Key = tuple[Any, ...]


@dataclass(eq=False)
class Writer(threading.Thread):
    """Random small transactions on both tables; ``log`` holds (end position, ops) per commit."""

    server: MariaDBServer
    db: str
    orders: dict[Key, dict[str, Any]]
    tags: dict[Key, dict[str, Any]]
    seed: int = 7
    log: list[tuple[BinlogOffset, list[tuple[str, Key, dict[str, Any] | None]]]] = field(default_factory=list)
    error: BaseException | None = None

    def __post_init__(self) -> None:
        threading.Thread.__init__(self, name="delta-test-writer", daemon=True)
        self.stop = threading.Event()
        self.rng = random.Random(self.seed)
        self.counter = 0

    def run(self) -> None:
        conn = self.server.root_connection()
        try:
            while not self.stop.is_set():
                self.transaction(conn)
                time.sleep(0.03)
        except BaseException as err:
            self.error = err
        finally:
            conn.close()

    def transaction(self, conn: Any) -> None:
        ops: list[tuple[str, Key, dict[str, Any] | None]] = []
        with conn.cursor() as cur:
            cur.execute("BEGIN")
            for _ in range(self.rng.randint(1, 3)):
                ops.append(self.order_op(cur) if self.rng.random() < 0.7 else self.tag_op(cur))
            cur.execute("COMMIT")
            cur.execute("SHOW MASTER STATUS")
            file, pos = cur.fetchone()[:2]
        self.log.append((BinlogOffset(str(file), int(pos)), ops))
        for table, key, row in ops:
            model = self.orders if table == "orders" else self.tags
            if row is None:
                model.pop(key, None)
            else:
                model[key] = row

    def order_op(self, cur: Any) -> tuple[str, Key, dict[str, Any] | None]:
        self.counter += 1
        kind = self.rng.random()
        key = (self.rng.randint(1, 3000),)  # an insert, unless that key exists
        if kind >= 0.4 and len(self.orders) >= 10:
            key = self.rng.choice(list(self.orders))
        if kind > 0.8 and key in self.orders:
            cur.execute(f"DELETE FROM `{self.db}`.orders WHERE id = %s", key)
            return "orders", key, None
        row = {
            "id": key[0],
            "customer": f"c{self.counter}",
            "amount": Decimal(self.rng.randint(0, 10**6)) / 100,
            "note": None if self.counter % 5 == 0 else f"w{self.counter}",
        }
        cur.execute(
            f"REPLACE INTO `{self.db}`.orders (id, customer, amount, note) VALUES (%s, %s, %s, %s)",
            (row["id"], row["customer"], row["amount"], row["note"]),
        )
        return "orders", key, row

    def tag_op(self, cur: Any) -> tuple[str, Key, dict[str, Any] | None]:
        self.counter += 1
        if self.rng.random() < 0.4 or len(self.tags) < 10:
            tag = f"{self.rng.choice(['a', 'B', 'c', 'Z', '_', 'é'])}{self.counter:06d}"
            key = (tag,)
        else:
            key = self.rng.choice(list(self.tags))
            if self.rng.random() < 0.4:
                cur.execute(f"DELETE FROM `{self.db}`.tags WHERE tag = %s", key)
                return "tags", key, None
        row = {"tag": key[0], "n": self.counter}
        cur.execute(f"REPLACE INTO `{self.db}`.tags (tag, n) VALUES (%s, %s)", (row["tag"], row["n"]))
        return "tags", key, row

    def state_at(
        self, table: str, initial: dict[Key, dict[str, Any]], offset: BinlogOffset
    ) -> list[dict[str, Any]]:
        """The table as of ``offset``: the initial rows plus every logged commit ending by then."""
        state = dict(initial)
        for end, ops in self.log:
            if end > offset:
                break
            for name, key, row in ops:
                if name != table:
                    continue
                if row is None:
                    state.pop(key, None)
                else:
                    state[key] = row
        return list(state.values())


def _load(server: MariaDBServer, db: str) -> None:
    server.execute(
        f"CREATE TABLE `{db}`.orders (id BIGINT PRIMARY KEY, customer VARCHAR(20) NOT NULL,"
        " amount DECIMAL(12,2) NOT NULL, note VARCHAR(40))"
    )
    server.execute(
        f"INSERT INTO `{db}`.orders SELECT seq * 2, CONCAT('c', seq), seq / 4, IF(seq % 3 = 0, NULL, 'n')"
        f" FROM `{db}`.seq_1_to_1400"
    )
    server.execute(
        f"CREATE TABLE `{db}`.tags (tag VARCHAR(24) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"
        " PRIMARY KEY, n INT NOT NULL)"
    )
    server.execute(
        f"INSERT INTO `{db}`.tags SELECT CONCAT(ELT(1 + seq % 5, 'a', 'B', 'c', 'Z', '_'),"
        f" LPAD(seq, 5, '0')), seq FROM `{db}`.seq_1_to_500"
    )


def _by_key(schema: TableSchema, data: pa.Table) -> dict[Key, dict[str, Any]]:
    return {tuple(r[k] for k in schema.row_key): r for r in data.to_pylist()}


def _delta_commits(path: Path) -> int:
    log = path / "_delta_log"
    return len(list(log.glob("*.json"))) if log.is_dir() else 0


@dataclass
class Chain:
    manifest: Path
    state: Path
    logs: Path
    report: list[str] = field(default_factory=list)

    def kill_when(self, name: str, trigger: Callable[[SparkcdcProcess], bool], *, streaming: bool) -> None:
        with SparkcdcProcess(self.manifest, self.state, self.logs, exit_when_caught_up=not streaming) as run:
            fired = run.wait_for(lambda: trigger(run), timeout=600, interval=0.01)
            if fired:
                run.kill()
                self.report.append(f"{name}: killed after {time.monotonic() - run.started:.1f}s")
                return
            result = run.wait(60)
        assert result.returncode == 0, result.describe()
        self.report.append(f"{name}: the run ended before the moment ({result.seconds:.1f}s)")

    def checkpoint(self) -> Any:
        return load_checkpoint(self.state, PIPELINE)


def test_delta_pipeline_kills_exactly_once_and_time_travel(
    mariadb: MariaDBServer, source_config: SourceConfig, fresh_db: str, tmp_path: Path
) -> None:
    db = fresh_db
    _load(mariadb, db)
    orders, tags = source_schema(source_config, db, "orders"), source_schema(source_config, db, "tags")
    initial = {"orders": _by_key(orders, source_rows(source_config, orders))}
    initial["tags"] = _by_key(tags, source_rows(source_config, tags))
    lake = tmp_path / "lake"
    paths = {"orders": lake / db / "orders", "tags": lake / db / "tags"}
    assert mariadb.cdc_password
    manifest = pipeline_manifest(
        tmp_path / "pipeline.yaml",
        name=PIPELINE,
        host=mariadb.host,
        port=mariadb.port,
        password=mariadb.cdc_password,
        tables=[f"{db}.orders", f"{db}.tags"],
        sink=delta_sink(lake),
        mode="initial",
        chunk_size=350,  # 4 + 2 splits: enough waves to kill between, few commits to wait for
        parallelism=2,
        binlog={"batchIntervalMs": 300},
    )
    chain = Chain(manifest, tmp_path / "state", tmp_path / "logs")
    writer = Writer(mariadb, db, dict(initial["orders"]), dict(initial["tags"]))
    writer.start()
    rng = random.Random(20240611)

    def after_plan(delay: float) -> Callable[[SparkcdcProcess], bool]:
        """``delay`` seconds after the run first wrote the checkpoint (right after planning)."""
        marks: dict[str, float] = {"wall": time.time() - 0.01}
        where = checkpoint_path(chain.state, PIPELINE)

        def trigger(run: SparkcdcProcess) -> bool:
            try:
                written = where.stat().st_mtime >= marks["wall"]
            except FileNotFoundError:
                return False
            if not written:
                return False
            marks.setdefault("plan", time.monotonic())
            return time.monotonic() - marks["plan"] >= delay

        return trigger

    def new_commit(table: str, *, streaming: bool, delay: float = 0.0) -> Callable[[SparkcdcProcess], bool]:
        """``delay`` seconds after a new commit appeared in the table's Delta log."""
        marks: dict[str, float] = {}

        def trigger(run: SparkcdcProcess) -> bool:
            if "seen" in marks:
                return time.monotonic() - marks["seen"] >= delay
            cp = chain.checkpoint()
            if streaming and (cp is None or cp.binlog_offset is None or not cp.snapshot_done):
                return False
            count = _delta_commits(paths[table])
            marks.setdefault("start", count)
            if count > marks["start"]:
                marks["seen"] = time.monotonic()
                return delay <= 0
            return False

        return trigger

    try:
        # Three kills, one per window that matters: mid-read (nothing written yet), between a
        # wave's Delta commit and its checkpoint (the re-run must replace, not append), and
        # around a MERGE commit while streaming (a random delay of up to 0.3 s lands before or
        # after the checkpoint write: the replay must be skipped by txnVersion, or resume).
        chain.kill_when("snapshot, random", after_plan(rng.uniform(0.2, 3.0)), streaming=False)
        chain.kill_when(
            "snapshot, right after a Delta commit", new_commit("orders", streaming=False), streaming=False
        )
        chain.kill_when(
            "streaming, around a MERGE commit",
            new_commit("orders", streaming=True, delay=rng.uniform(0.0, 0.3)),
            streaming=True,
        )
    finally:
        writer.stop.set()
        writer.join(30)
    assert not writer.is_alive(), "the writer did not stop"
    assert writer.error is None, writer.error
    assert len(writer.log) > 50, f"the writer committed only {len(writer.log)} transactions"

    # A column added at the source while streaming: existing rows get its default in Delta too.
    before_ddl = BinlogOffset(*mariadb.binlog_position())
    mariadb.execute(f"ALTER TABLE `{db}`.orders ADD COLUMN extra INT NOT NULL DEFAULT 7")
    mariadb.execute(f"UPDATE `{db}`.orders SET extra = 8 WHERE id % 10 = 0")
    target = BinlogOffset(*mariadb.binlog_position())
    with SparkcdcProcess(manifest, chain.state, chain.logs, exit_when_caught_up=False) as run:
        caught_up = run.wait_for(
            lambda: (
                (cp := chain.checkpoint()) is not None
                and cp.binlog_offset is not None
                and cp.binlog_offset >= target
            ),
            timeout=600,
            interval=0.2,
        )
        if not caught_up:
            raise AssertionError(f"the last run did not catch up to {target}:\n{run.wait(5).describe()}")
        run.kill()
    final = chain.checkpoint()
    assert final is not None and final.snapshot_done and final.snapshot_end_offset is not None
    after = str(final.snapshot_end_offset)
    pick = {
        "orders": {"after": after, "through": str(before_ddl), "count": 3},
        "tags": {"after": after, "through": str(before_ddl), "count": 2},
    }
    dumps = inspect_delta(tmp_path, {n: p for n, p in paths.items()}, pick)

    orders_now = source_schema(source_config, db, "orders")
    assert_delta_equals_source(source_config, orders_now, dumps["orders"].latest, "orders")
    assert_delta_equals_source(source_config, tags, dumps["tags"].latest, "tags")
    assert set(dumps["orders"].latest.column("extra").to_pylist()) == {7, 8}

    checked = []
    for name, schema in (("orders", orders), ("tags", tags)):
        commits = dumps[name].binlog_commits()
        offsets = [BinlogOffset.parse(o) for _, o in commits]
        assert all(a < b for a, b in itertools.pairwise(offsets)), (
            f"{name}: binlog commits are not strictly increasing (a batch applied twice?): {commits}"
        )
        by_version = dict(commits)
        assert dumps[name].versions, f"{name}: no binlog version after the snapshot to travel to: {commits}"
        for version, rows in sorted(dumps[name].versions.items()):
            offset = BinlogOffset.parse(by_version[version])
            expected = writer.state_at(name, initial[name], offset)
            table = pa.Table.from_pylist(expected, schema=schema.arrow_schema())
            want = normalized(schema, to_spark_arrow(schema, table))
            got = normalized(schema, rows, schema.column_names)
            assert_rows_equal(schema, want, got, f"{name} version {version} (offset {offset})")
            checked.append(f"{name}@v{version}")
    print("\n".join([*chain.report, f"time travel checked: {', '.join(checked)}"]))
