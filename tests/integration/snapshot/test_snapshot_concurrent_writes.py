"""Writes during the snapshot: every split holds its key range exactly as of its high watermark.

A writer thread inserts, updates (also primary keys, moving rows between splits), deletes and
runs multi-row transactions across split boundaries while ``sparkcdc run`` reads the first half
of the splits, aiming at the splits being read right then and at the keys on their boundaries.
It records the GTID of every transaction it commits (``@@last_gtid``), and after the run the
binlog (``SHOW BINLOG EVENTS``) gives each transaction's exact end position.

That is enough to check architecture §3 rule 2 exactly, without the binlog phase: replaying the
writer's transactions onto the initial table up to a split's high watermark (from the
checkpoint) gives the source's content of the split's key range at that position, and the
sink's rows in that range must be exactly those. It runs with the waves as Spark tasks and on
the driver's threads.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import pytest
from snapshot_support import Row, Scenario, assert_no_task_failures, assert_same_rows, int_key

from harness.runner import SparkcdcProcess
from sparkcdc.core.checkpoint import Checkpoint
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.splits import SnapshotSplit
from sparkcdc.options import SNAPSHOT_IN_DRIVER_ENV as IN_DRIVER_ENV

pytestmark = pytest.mark.integration

TABLE = "w"
ROWS = 2500  # ids 10, 20, ..., 25000: room for inserts between rows
CHUNK = 150


@dataclass
class Op:
    """One committed transaction of the writer and what it did to the model."""

    gtid: str
    description: str
    # key -> new row, or None when the key was deleted
    effects: dict[int, Row | None]


@dataclass
class Writer:
    """Writes to the source table until told to stop; keeps a model of the table's rows."""

    conn: Any
    rng: random.Random
    state: dict[int, Row]
    targets: Callable[[], list[SnapshotSplit]]  # splits to aim at (being read now)
    boundaries: list[int]
    ops: list[Op] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None
    counter: int = 0

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                self.step()
        except BaseException as err:  # reported by the test
            self.error = err

    # -- choosing keys ------------------------------------------------------------------------

    def _key_near_target(self) -> int:
        targets = self.targets()
        if targets and self.rng.random() < 0.7:
            split = self.rng.choice(targets)
            low = int_key(split.start) if split.start is not None else -40
            high = int_key(split.end) if split.end is not None else 25_100
            if self.rng.random() < 0.4:
                edge = self.rng.choice([low, high])
                return edge + self.rng.choice([-1, 0, 0, 1])
            return self.rng.randint(low, high - 1)
        if self.rng.random() < 0.3:
            return self.rng.choice(self.boundaries) + self.rng.choice([-1, 0, 1])
        return self.rng.randint(-40, 25_100)

    def _existing_near_target(self) -> int | None:
        for _ in range(20):
            key = self._key_near_target()
            for probe in (key, key - key % 10, key + 10 - key % 10):
                if probe in self.state:
                    return probe
        return None

    def _absent_near_target(self) -> int:
        while True:
            key = self._key_near_target()
            if key not in self.state:
                return key

    def _row(self, key: int) -> Row:
        self.counter += 1
        n = None if self.rng.random() < 0.2 else self.rng.randint(-1000, 1000)
        return (key, f"w{self.counter}", n, Decimal(self.rng.randint(-99999, 99999)).scaleb(-2))

    # -- one transaction ----------------------------------------------------------------------

    def _exec(self, cur: Any, sql: str, params: Any, expected_rows: int) -> None:
        affected = cur.execute(sql, params)
        assert affected == expected_rows, f"{sql} {params}: {affected} rows, model expected {expected_rows}"

    def step(self) -> None:
        kind = self.rng.choices(
            ["insert", "update", "move", "delete", "range", "txn"], weights=[25, 25, 20, 15, 8, 7]
        )[0]
        effects: dict[int, Row | None] = {}
        with self.conn.cursor() as cur:
            if kind == "insert":
                row = self._row(self._absent_near_target())
                self._exec(cur, f"INSERT INTO {TABLE} VALUES (%s, %s, %s, %s)", row, 1)
                effects[row[0]] = row
            elif kind in ("update", "move", "delete"):
                key = self._existing_near_target()
                if key is None:
                    return
                if kind == "update":
                    row = self._row(key)
                    self._exec(cur, f"UPDATE {TABLE} SET v=%s, n=%s, d=%s WHERE id=%s", (*row[1:], key), 1)
                    effects[key] = row
                elif kind == "move":  # a primary-key change, often into another split
                    new = self._absent_near_target()
                    row = self._row(new)
                    self._exec(cur, f"UPDATE {TABLE} SET id=%s, v=%s WHERE id=%s", (new, row[1], key), 1)
                    effects[key] = None
                    effects[new] = (new, row[1], *self.state[key][2:])
                else:
                    self._exec(cur, f"DELETE FROM {TABLE} WHERE id=%s", (key,), 1)
                    effects[key] = None
            elif kind == "range":  # one statement on both sides of a split boundary
                edges = [int_key(t.start) for t in self.targets() if t.start is not None]
                centre = self.rng.choice(edges or self.boundaries)
                low, high = centre - 25, centre + 25
                # n = n + 1 leaves NULLs alone, and unchanged rows are neither counted nor logged
                keys = [k for k, r in self.state.items() if low <= k <= high and r[2] is not None]
                if not keys:
                    return
                sql = f"UPDATE {TABLE} SET n = n + 1 WHERE id BETWEEN %s AND %s"
                self._exec(cur, sql, (low, high), len(keys))
                for key in keys:
                    old = self.state[key]
                    effects[key] = (old[0], old[1], old[2] + 1, old[3])
            else:  # a transaction deleting one key and inserting another
                key = self._existing_near_target()
                if key is None:
                    return
                row = self._row(self._absent_near_target())
                cur.execute("START TRANSACTION")
                self._exec(cur, f"DELETE FROM {TABLE} WHERE id=%s", (key,), 1)
                self._exec(cur, f"INSERT INTO {TABLE} VALUES (%s, %s, %s, %s)", row, 1)
                cur.execute("COMMIT")
                effects[key] = None
                effects[row[0]] = row
            cur.execute("SELECT @@last_gtid")
            gtid = str(cur.fetchone()[0])
        for key, value in effects.items():
            if value is None:
                self.state.pop(key, None)
            else:
                self.state[key] = value
        assert not self.ops or self.ops[-1].gtid != gtid, f"{kind} did not commit a new transaction"
        self.ops.append(Op(gtid, kind, effects))


def _transaction_ends(scenario: Scenario, since: BinlogOffset) -> dict[str, BinlogOffset]:
    """GTID -> end position (after its commit event) of every transaction since ``since``."""
    ends: dict[str, BinlogOffset] = {}
    files = [str(r[0]) for r in scenario.execute("SHOW BINARY LOGS")]
    for file in files[files.index(since.file) :]:
        start = since.pos if file == since.file else 4
        gtid = None
        for _, _pos, kind, _sid, end, info in scenario.execute(
            f"SHOW BINLOG EVENTS IN '{file}' FROM {start}"
        ):
            if kind == "Gtid":
                # "BEGIN GTID 0-1-7", or "BEGIN GTID 0-1-7 cid=42" when group-committed.
                gtid = str(info).split("GTID", 1)[1].split()[0]
            elif gtid is not None and (kind == "Xid" or (kind == "Query" and str(info) == "COMMIT")):
                ends[gtid] = BinlogOffset(file, int(end))
                gtid = None
    return ends


def _in_split(key: int, split: SnapshotSplit) -> bool:
    return (split.start is None or key >= int_key(split.start)) and (
        split.end is None or key < int_key(split.end)
    )


def _unfinished(checkpoint: Checkpoint | None, count: int) -> list[SnapshotSplit]:
    if checkpoint is None:
        return []
    done = {i.split.index for infos in checkpoint.finished.values() for i in infos}
    splits = [s for plan_table, plan in checkpoint.plans.items() for s in plan.splits(plan_table)]
    return [s for s in splits if s.index not in done][:count]


@pytest.mark.parametrize("where", ["spark", "driver"])
def test_writes_during_snapshot_each_split_exact_at_its_high_watermark(
    scenario: Scenario, where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Waves as Spark tasks, or on the driver's threads (as before Spark is up, engine/wave_runner.py).
    monkeypatch.setenv(IN_DRIVER_ENV, "never" if where == "spark" else "always")
    db = scenario.db
    scenario.execute(
        f"CREATE TABLE {db}.{TABLE} (id INT PRIMARY KEY, v VARCHAR(40) NOT NULL, n INT NULL,"
        " d DECIMAL(12,2) NOT NULL)"
    )
    scenario.execute(
        f"INSERT INTO {db}.{TABLE} SELECT seq * 10, CONCAT('r', seq), IF(seq % 9 = 0, NULL, seq),"
        f" seq / 100 FROM {db}.seq_1_to_{ROWS}"
    )
    initial = {int(r[0]): tuple(r) for r in scenario.rows(db, TABLE)}
    manifest = scenario.manifest("writes", [TABLE], chunk_size=CHUNK, parallelism=2, splits_per_task=2)
    start = BinlogOffset(*scenario.server.binlog_position())

    latest: list[Checkpoint | None] = [None]
    conn = scenario.server.root_connection(db)
    writer = Writer(conn, random.Random(20240229), dict(initial), lambda: _unfinished(latest[0], 4), [])
    thread = threading.Thread(target=writer.run, name="writer", daemon=True)
    with SparkcdcProcess(manifest, scenario.state_dir, scenario.log_dir) as run:

        def planned() -> bool:
            latest[0] = scenario.checkpoint("writes")
            return latest[0] is not None and bool(latest[0].plans)

        assert run.wait_for(planned, timeout=120), run.result().describe()
        checkpoint = latest[0]
        assert checkpoint is not None
        plan_splits = [s for t, p in checkpoint.plans.items() for s in p.splits(t)]
        writer.boundaries = [int_key(s.start) for s in plan_splits if s.start is not None]
        assert len(plan_splits) >= 12, plan_splits
        thread.start()

        def half_done() -> bool:
            latest[0] = scenario.checkpoint("writes")
            assert latest[0] is not None
            finished = sum(len(i) for i in latest[0].finished.values())
            return finished * 2 >= len(plan_splits)

        try:
            run.wait_for(half_done, timeout=180, interval=0.05)
        finally:
            writer.stop.set()
            thread.join(30)
        result = run.wait(240)
    conn.close()
    if writer.error is not None:
        raise writer.error
    assert result.returncode == 0, result.describe()
    assert_no_task_failures(result)
    # The writer runs from planning until half the splits are done, so how many it commits follows
    # the machine's load (193 once in a CI run with every core busy): enough to land in splits.
    assert len(writer.ops) >= 100, f"the writer committed only {len(writer.ops)} transactions"

    # The model of the writer is right about the source's final content.
    assert_same_rows(list(writer.state.values()), scenario.rows(db, TABLE), "model vs source")

    final = scenario.checkpoint("writes")
    assert final is not None and final.snapshot_done
    ends = _transaction_ends(scenario, start)
    missing = [op.gtid for op in writer.ops if op.gtid not in ends]
    assert not missing, f"transactions not found in the binlog: {missing[:5]}"

    infos = sorted(final.all_finished_infos(), key=lambda i: i.high_watermark.sort_key())
    plan = [s for t, p in final.plans.items() for s in p.splits(t)]
    assert {i.split.index for i in infos} == {s.index for s in plan}
    sink_rows = scenario.rows(scenario.sink_db, TABLE)
    state = dict(initial)
    pending = sorted(writer.ops, key=lambda op: ends[op.gtid].sort_key())
    mid_stream = 0  # splits whose expected content is neither the initial nor the final one
    for info in infos:
        while pending and ends[pending[0].gtid] <= info.high_watermark:
            for key, value in pending.pop(0).effects.items():
                if value is None:
                    state.pop(key, None)
                else:
                    state[key] = value
        split = info.split
        expected = [r for k, r in state.items() if _in_split(k, split)]
        actual = [r for r in sink_rows if _in_split(int(r[0]), split)]
        what = f"split {split.index} [{split.start}, {split.end}) at high watermark {info.high_watermark}"
        assert_same_rows(expected, actual, what)
        assert info.rows == len(expected), what
        at_start = [r for k, r in initial.items() if _in_split(k, split)]
        at_end = [r for k, r in writer.state.items() if _in_split(k, split)]
        mid_stream += set(expected) != set(at_start) and set(expected) != set(at_end)
    # The writes really interleaved with the split reads.
    print(f"{len(writer.ops)} transactions, {len(infos)} splits, {mid_stream} read while the writer ran")
    assert mid_stream >= 1, "every split was read entirely before or after the writes"
    assert len(sink_rows) == len({r[0] for r in sink_rows})
