"""Chaos: SIGKILL ``sparkcdc run`` over and over while the source is written, then check the
replica and the changelog against the source (architecture §3 rules 2–6, the issue's chaos test).

A writer thread keeps inserting, updating (also the primary key) and deleting across three
tables — an integer key, a string key under a case-insensitive collation, a composite key — in
small transactions. One manifest runs two pipelines over them in ``initial`` mode: a JDBC
replica and a changelog. A chain of runs on one --state-dir is killed with SIGKILL (the whole
process tree, as a pod kill) at 30+ moments spread over the snapshot (after the run committed
more splits, plus a few blind kills during start-up), the handoff (right after the snapshot is
complete, while splits still filter the stream) and streaming (after the offset moved), each
moment with a random delay. Then the writer stops and a last run with --exit-when-caught-up
must exit 0, after which

* every replica table equals its source table row for row, and
* the changelog of every table, replayed in file order (snapshot files, then binlog batches by
  offset; +I/+U upsert, -U/-D delete), reproduces the source table.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

import pytest
from binlog_support import Case, assert_same_rows, replay_changelog

from harness.runner import SparkcdcProcess
from harness.writer import RandomWriter
from sparkcdc.core.checkpoint import Checkpoint

TABLES = ("c1", "c2", "c3")
KEYS: dict[str, tuple[str, ...]] = {"c1": ("id",), "c2": ("code",), "c3": ("a", "b")}
SEED = 20240611


def _create(case: Case) -> None:
    db = case.db
    case.execute(f"CREATE TABLE `{db}`.c1 (id INT PRIMARY KEY, v VARCHAR(30), n INT)")
    case.execute(f"INSERT INTO `{db}`.c1 SELECT seq, CONCAT('v', seq), seq % 97 FROM `{db}`.seq_1_to_1500")
    case.execute(
        f"CREATE TABLE `{db}`.c2 (code VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"
        " PRIMARY KEY, qty INT NOT NULL)"
    )
    case.execute(
        f"INSERT INTO `{db}`.c2 SELECT CONCAT(ELT(1 + seq % 3, 'a', 'B', 'c'), LPAD(seq, 6, '0')), seq"
        f" FROM `{db}`.seq_1_to_700"
    )
    case.execute(f"CREATE TABLE `{db}`.c3 (a INT, b INT, payload VARCHAR(40), PRIMARY KEY (a, b))")
    case.execute(
        f"INSERT INTO `{db}`.c3 SELECT seq DIV 10, seq MOD 10, CONCAT('p', seq) FROM `{db}`.seq_1_to_700"
    )


class Writer(RandomWriter):
    """Random small transactions (1 to 4 operations) over the three tables until stopped; the
    only writer, so it knows the live keys."""

    def __init__(self, case: Case) -> None:
        super().__init__(case.server, SEED, db=case.db, most=4, pause=0.01, name="chaos-writer")
        db = case.db
        self._keys: dict[str, list[tuple[Any, ...]]] = {
            t: [tuple(r) for r in case.execute(f"SELECT {', '.join(KEYS[t])} FROM `{db}`.`{t}`")]
            for t in TABLES
        }
        self._next = 10_000

    def _new_key(self, table: str) -> tuple[Any, ...]:
        """Mostly a free key inside the table's range (so the snapshot's last split does not
        grow without end), sometimes one above it."""
        used = {_norm_key(k) for k in self._keys[table]}
        while True:
            if self.rng.random() < 0.8:
                n = self.rng.randint(1, 3000 if table == "c1" else 1400)
            else:
                self._next += 1
                n = self._next
            if table == "c1":
                key: tuple[Any, ...] = (n,)
            elif table == "c2":
                key = (f"{('aBc' if n < 10_000 else 'xYz')[n % 3]}{n:06d}",)
            else:
                key = (n // 10, n % 10)
            if _norm_key(key) not in used:
                return key

    def _where(self, table: str) -> str:
        return " AND ".join(f"`{c}` = %s" for c in KEYS[table])

    def op(self, cur: Any) -> None:
        rng, db = self.rng, self.db
        table = rng.choice(TABLES)
        keys = self._keys[table]
        kind = rng.choices(["insert", "update", "rekey", "delete"], [2, 4, 1, 2])[0]
        if kind == "insert" or len(keys) < 50:
            key = self._new_key(table)
            if table == "c1":
                cur.execute(
                    f"INSERT INTO `{db}`.c1 VALUES (%s, %s, %s)", (*key, f"i{key[0]}", rng.randint(0, 99))
                )
            elif table == "c2":
                cur.execute(f"INSERT INTO `{db}`.c2 VALUES (%s, %s)", (*key, rng.randint(0, 999)))
            else:
                cur.execute(f"INSERT INTO `{db}`.c3 VALUES (%s, %s, %s)", (*key, f"i{key}"))
            keys.append(key)
            return
        index = rng.randrange(len(keys))
        key = keys[index]
        if kind == "update":
            column, value = {
                "c1": ("v", f"u{rng.randint(0, 10**6)}"),
                "c2": ("qty", rng.randint(0, 999)),
            }.get(table, ("payload", f"u{rng.randint(0, 10**6)}"))
            cur.execute(
                f"UPDATE `{db}`.`{table}` SET `{column}` = %s WHERE {self._where(table)}", (value, *key)
            )
        elif kind == "rekey":
            new = self._new_key(table)
            sets = ", ".join(f"`{c}` = %s" for c in KEYS[table])
            cur.execute(f"UPDATE `{db}`.`{table}` SET {sets} WHERE {self._where(table)}", (*new, *key))
            keys[index] = new
        else:
            cur.execute(f"DELETE FROM `{db}`.`{table}` WHERE {self._where(table)}", key)
            keys[index] = keys[-1]
            keys.pop()


def _finished(cp: Checkpoint | None) -> int:
    return 0 if cp is None else sum(len(infos) for infos in cp.finished.values())


def _collapsed(cp: Checkpoint | None) -> bool:
    return cp is not None and cp.snapshot_done and all(not p.boundaries for p in cp.plans.values())


Trigger = Callable[[Case, str, Checkpoint | None], Callable[[], bool]]


def after_more_splits(case: Case, pipeline: str, before: Checkpoint | None) -> Callable[[], bool]:
    count = _finished(before)
    return lambda: (
        _finished(case.checkpoint(pipeline)) > count
        or bool((cp := case.checkpoint(pipeline)) and cp.snapshot_done)
    )


def at_handoff(case: Case, pipeline: str, before: Checkpoint | None) -> Callable[[], bool]:
    """The moment the snapshot completes; once it has, the first batches of a run, which start
    at the minimum high watermark and still filter events per split."""
    if before is None or not before.snapshot_done:
        return lambda: bool((cp := case.checkpoint(pipeline)) and cp.snapshot_done)
    return after_offset_moved(case, pipeline, before)


def after_offset_moved(case: Case, pipeline: str, before: Checkpoint | None) -> Callable[[], bool]:
    mark = before.binlog_offset if before is not None else None

    def moved() -> bool:
        cp = case.checkpoint(pipeline)
        offset = cp.binlog_offset if cp is not None else None
        return offset is not None and (mark is None or offset > mark)

    return moved


def in_streaming(case: Case, pipeline: str, before: Checkpoint | None) -> Callable[[], bool]:
    """Past every split's watermark (the split lists collapsed), and the offset moved on."""
    moved = after_offset_moved(case, pipeline, before)
    return lambda: moved() and _collapsed(case.checkpoint(pipeline))


def started(case: Case, pipeline: str, before: Checkpoint | None) -> Callable[[], bool]:
    return lambda: True


def _moments(rng: random.Random) -> list[tuple[str, Trigger, float]]:
    """(phase, trigger, extra random delay bound in seconds)."""
    plan: list[tuple[str, Trigger, float]] = []
    plan += [("start-up", started, 4.0)] * 3
    plan += [("snapshot", after_more_splits, 0.6)] * 9
    plan += [("handoff", at_handoff, 0.1)] * 6
    plan += [("streaming", in_streaming, 1.5)] * 14
    head, tail = plan[:12], plan[12:]
    rng.shuffle(head)
    return head + tail


@pytest.mark.usefixtures("waves_on_spark")  # the snapshot must last for kills to land in it
@pytest.mark.timeout(1800)  # 30+ runs, each a JVM start, beside the other lanes of `make test`
def test_chaos(case: Case) -> None:
    rng = random.Random(SEED)
    _create(case)
    # Small chunks (37 splits per pipeline): a run commits splits within a second, and the nine
    # snapshot moments must still find splits left to read.
    snapshot = {"chunkSize": 80, "parallelism": 2, "splitsPerTask": 1}
    binlog = {"batchIntervalMs": 150, "batchRows": 100, "heartbeatIntervalSeconds": 1}
    pipelines = {
        "chaos-jdbc": case.pipeline("chaos-jdbc", list(TABLES), snapshot=snapshot, binlog=binlog),
        "chaos-log": case.pipeline(
            "chaos-log", list(TABLES), sink="changelog", snapshot=snapshot, binlog=binlog
        ),
    }
    manifest = case.manifest("chaos.yaml", *pipelines.values())
    writer = Writer(case)
    writer.start()
    kills: list[str] = []
    try:
        for number, (phase, trigger, delay) in enumerate(_moments(rng)):
            pipeline = rng.choice(list(pipelines))
            before = case.checkpoint(pipeline)
            condition = trigger(case, pipeline, before)
            with SparkcdcProcess(manifest, case.state_dir, case.log_dir, exit_when_caught_up=False) as run:
                reached = run.wait_for(condition, timeout=300, interval=0.05)
                if reached:
                    end = time.monotonic() + rng.uniform(0, delay)
                    while time.monotonic() < end and run.poll() is None:
                        time.sleep(0.02)
                assert run.poll() is None, f"run {number} ended by itself:\n{run.result().describe()}"
                where = _summary(case.checkpoint(pipeline))
                assert reached, (
                    f"run {number} ({phase}) never got there ({where}):\n{run.result().describe()}"
                )
                run.kill()
            kills.append(_phase(case.checkpoint(pipeline)))
    finally:
        writer.stop()
    # Where the kills really landed, judged by the checkpoint each left behind. The handoff (from
    # the minimum high watermark until the stream passed every split's) is short: the backlog it
    # replays is read in a second or two, so only some of its moments land inside it.
    landed = {phase: kills.count(phase) for phase in ("snapshot", "handoff", "streaming")}
    assert len(kills) >= 30 and writer.transactions > 200, (landed, writer.transactions)
    assert landed["snapshot"] >= 6 and landed["handoff"] >= 1 and landed["streaming"] >= 10, landed

    print(f"chaos: {len(kills)} kills landed {landed}; {writer.transactions} source transactions")
    final = case.run_ok(manifest, timeout=600)
    for table in TABLES:
        source = case.rows(case.db, table)
        assert_same_rows(source, case.rows(case.sink_db("chaos_jdbc"), table), f"replica {table}")
        names = case.columns(case.db, table)
        replayed = replay_changelog(
            case.changelog_dir("chaos-log") / f"{case.db}.{table}",
            key=lambda data, t=table: tuple(_norm(data[c]) for c in KEYS[t]),
        )
        rows = [tuple(data[c] for c in names) for data in replayed.values()]
        assert_same_rows(source, rows, f"changelog {table}")
    for pipeline in pipelines:
        assert _collapsed(case.checkpoint(pipeline)), final.describe()


def _phase(cp: Checkpoint | None) -> str:
    if cp is None or not cp.snapshot_done:
        return "snapshot"
    return "streaming" if _collapsed(cp) else "handoff"


def _summary(cp: Checkpoint | None) -> str:
    if cp is None:
        return "none"
    return (
        f"{_finished(cp)} splits finished of {sum(p.split_count() for p in cp.plans.values())}, "
        f"snapshot done {cp.snapshot_done}, offset {cp.binlog_offset}"
    )


def _norm_key(key: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(_norm(v) for v in key)


def _norm(value: Any) -> Any:
    # c2's key compares case-insensitively at the source: so must a consumer's replay.
    return value.lower() if isinstance(value, str) else value
