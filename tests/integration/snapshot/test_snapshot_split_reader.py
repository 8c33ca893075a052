"""A task's splits over one connection, and the skipped backfill (architecture §3 rule 2).

``SplitReader`` reads a task's splits one after another over one source connection; each split
still gets its own low and high watermark. When nothing was logged in between (low == high) no
binlog is read at all, which is right only if the chunk then really is the split's content at
that position, even while the table changes just before and after.

A writer changes the table in bursts with pauses, so some splits are read in a pause with equal
watermarks while the table changes around them, and writes a second table in between, so some
brackets hold only other tables' events. The check does not trust the merge: replaying the
binlog from a quiesced start onto the table read then, row by row and without any key-range
logic, gives the table at each high watermark, and every split read must equal its range there.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

import pytest

from harness.mariadb import binlog_offset
from harness.waiting import wait_until
from sparkcdc.api.spec import SnapshotSpec
from sparkcdc.core.events import ChangeEvent, Op
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.splits import Key, SnapshotSplit
from sparkcdc.core.tables import TableId
from sparkcdc.engine.planning import plan_table
from sparkcdc.mysql.binlog.reader import read_changes
from sparkcdc.mysql.connection import SourceConfig, connect
from sparkcdc.mysql.schema import TableSchema, load_table_schema
from sparkcdc.mysql.split_reader import SplitReader, SplitReadResult, read_split
from sparkcdc.testing.mariadb import MariaDBServer

pytestmark = pytest.mark.integration

Rows = dict[Key, dict[str, Any]]
# Reads go on until every kind was seen; under load that takes longer, so the bound is time.
MAX_SECONDS = 120


class BurstWriter:
    """Bursts of changes to ``t`` (inserts, updates, deletes, key moves), an insert into
    ``noise`` now and then, and a pause after each burst; until stopped."""

    def __init__(self, server: MariaDBServer, db: str) -> None:
        self._conn = server.root_connection(db)
        self._rng = random.Random(20261122)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="burst-writer", daemon=True)
        self.transactions = 0
        self.error: BaseException | None = None
        # The longest pause after a burst; the test shortens or lengthens it when one kind of
        # read is missing, because how reads and bursts interleave depends on the machine's load.
        self.pause_max = 0.03

    def __enter__(self) -> BurstWriter:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(30)
        self._conn.close()
        if self.error is not None:
            raise self.error

    def _change(self, cur: Any) -> None:
        rng = self._rng
        key = rng.randrange(-20, 6020)
        kind = rng.choice(["insert", "update", "delete", "move"])
        if kind == "insert":
            cur.execute("INSERT IGNORE INTO t VALUES (%s, %s, 'w')", (key, rng.randrange(1000)))
        elif kind == "update":
            cur.execute("UPDATE t SET v = v + 1 WHERE id BETWEEN %s AND %s", (key, key + 6))
        elif kind == "delete":
            cur.execute("DELETE FROM t WHERE id = %s", (key,))
        else:  # a primary-key change, often into another split
            cur.execute("UPDATE IGNORE t SET id = %s WHERE id = %s", (rng.randrange(-20, 6020), key))

    def _run(self) -> None:
        try:
            with self._conn.cursor() as cur:
                while not self._stop.is_set():
                    for _ in range(self._rng.randint(1, 4)):
                        self._change(cur)
                        self.transactions += 1
                    if self._rng.random() < 0.5:
                        cur.execute("INSERT INTO noise VALUES (NULL)")
                    # A pause, so that some splits are read entirely inside one.
                    self._stop.wait(self._rng.uniform(0.0, self.pause_max))
        except BaseException as exc:  # surfaced in __exit__
            self.error = exc


@pytest.fixture
def table(mariadb: MariaDBServer, fresh_db: str, source_config: SourceConfig) -> Iterator[TableSchema]:
    mariadb.execute(f"CREATE TABLE `{fresh_db}`.t (id INT PRIMARY KEY, v INT NOT NULL, pad VARCHAR(32))")
    mariadb.execute(f"CREATE TABLE `{fresh_db}`.noise (n INT AUTO_INCREMENT PRIMARY KEY)")
    mariadb.execute(
        f"INSERT INTO `{fresh_db}`.t SELECT seq * 2, seq % 7, REPEAT('p', 32) FROM `{fresh_db}`.seq_0_to_2999"
    )
    control = connect(source_config)
    try:
        yield load_table_schema(control, TableId(fresh_db, "t"))
    finally:
        control.close()


def _key(row: Mapping[str, Any]) -> Key:
    return (row["id"],)


def _apply(rows: Rows, event: ChangeEvent) -> None:
    if event.op is not Op.INSERT:
        assert event.before is not None
        del rows[_key(event.before)]
    if event.op is not Op.DELETE:
        assert event.after is not None
        rows[_key(event.after)] = dict(event.after)


def _in_split(split: SnapshotSplit, key: Key) -> bool:
    return (split.start is None or tuple(split.start) <= key) and (
        split.end is None or key < tuple(split.end)
    )


def _kinds(results: list[tuple[SnapshotSplit, SplitReadResult]]) -> dict[str, int]:
    """How many reads had equal watermarks, merged changes, or other tables' events only."""
    return {
        "equal": sum(r.low.same_position(r.high) for _, r in results),
        "merged": sum(r.backfill_events > 0 for _, r in results),
        "foreign": sum(r.high > r.low and r.backfill_events == 0 for _, r in results),
    }


def _covered(results: list[tuple[SnapshotSplit, SplitReadResult]]) -> bool:
    kinds = _kinds(results)
    return kinds["equal"] >= 5 and kinds["merged"] >= 5 and kinds["foreign"] >= 1


def _pause_for(kinds: Mapping[str, int]) -> float:
    """No pauses while merged reads are missing, long ones while equal watermarks are."""
    if kinds["merged"] < 5:
        return 0.0
    if kinds["equal"] < 5:
        return 0.2
    return 0.03


@pytest.mark.parametrize("method", ["auto", "pymysql"])
def test_one_connection_per_task_each_split_exact_at_its_high_watermark(
    mariadb: MariaDBServer,
    source_config: SourceConfig,
    table: TableSchema,
    method: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    source_config = replace(source_config, chunk_reader=method)
    control = connect(source_config)
    try:
        splits = plan_table(control, table, SnapshotSpec(chunk_size=200))
    finally:
        control.close()
    assert len(splits) >= 10
    start = binlog_offset(mariadb)
    whole = SnapshotSplit(table.table, 0, None, None)
    initial = {_key(r): r for r in read_split(source_config, table, whole, 5400).data.to_pylist()}

    results: list[tuple[SnapshotSplit, SplitReadResult]] = []
    with BurstWriter(mariadb, table.table.database) as writer, SplitReader(source_config, 5401, 64) as reader:
        deadline = time.monotonic() + MAX_SECONDS
        while time.monotonic() < deadline:
            writer.pause_max = _pause_for(_kinds(results))
            results += [(split, reader.read(table, split)) for split in splits]
            if _covered(results) and writer.transactions >= 100:
                break
        # Changes after the last read too, so reads with equal watermarks lie mid-stream.
        writer.pause_max, seen = 0.0, writer.transactions
        wait_until(
            lambda: writer.transactions >= seen + 5, timeout=30, interval=0.01, message="5 more changes"
        )
    end = binlog_offset(mariadb)
    assert _covered(results), f"reads of each kind: {_kinds(results)}, {writer.transactions} transactions"

    events = list(read_changes(source_config, 5499, start, end, {table.table: table}))
    rows, pending = dict(initial), list(events)
    previous_high: BinlogOffset | None = None
    skipped_mid_stream = 0
    for split, result in results:
        # Sequential reads on one connection: each bracket starts where the previous one ended
        # or later, so the replay below only moves forward.
        assert previous_high is None or previous_high <= result.low <= result.high
        previous_high = result.high
        while pending and pending[0].offset <= result.high:
            _apply(rows, pending.pop(0))
        expected = {k: v for k, v in rows.items() if _in_split(split, k)}
        got = {_key(r): r for r in result.data.to_pylist()}
        assert len(got) == result.data.num_rows, f"split {split.split_id}: a key appears twice"
        assert got == expected, f"split {split.split_id} read in [{result.low}, {result.high}] differs"
        if result.low.same_position(result.high) and pending and len(pending) < len(events):
            skipped_mid_stream += 1  # no backfill read, with changes to the table before and after
    assert skipped_mid_stream >= 1, "no split was read with equal watermarks while the table changed"
    # The replay is trustworthy: it ends at the table as it is now.
    final = {_key(r): r for r in read_split(source_config, table, whole, 5400).data.to_pylist()}
    while pending:
        _apply(rows, pending.pop(0))
    assert rows == final
