"""Parallel catch-up, the pure part: range cutting and the per-range reduce (core/catchup.py)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkcdc.core.catchup import (
    Boundary,
    CatchupRange,
    RangeReducer,
    absorb,
    backlog_bytes,
    cut_ranges,
    stretch_end,
    table_changes,
)
from sparkcdc.core.events import ChangeEvent, Op, Row
from sparkcdc.core.merge import BackfillChanges, collapse_events
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.tables import TableId

pytestmark = pytest.mark.unit

TABLES = (TableId("shop", "orders"), TableId("shop", "items"))
KEYS = {TABLES[0]: ["id"], TABLES[1]: ["k1", "k2"]}
UNIVERSE = 12
FILES = [("bin.000001", 1000), ("bin.000002", 600), ("bin.000003", 5000)]

State = dict[TableId, dict[Any, Row]]


def _offset(n: int) -> BinlogOffset:
    """The n-th event position, over the three files of ``FILES``."""
    pos = 4 + n * 37
    for name, size in FILES:
        if pos < size:
            return BinlogOffset(name, pos)
        pos -= size - 4
    raise AssertionError("history too long")


def _key(table: TableId, row: Row) -> Any:
    return tuple(row[c] for c in KEYS[table])


def _row(table: TableId, k: int, v: int) -> Row:
    if table == TABLES[0]:
        return {"id": k, "v": v}
    return {"k1": k % 3, "k2": f"s{k}", "v": v}


def _apply(state: State, event: ChangeEvent) -> None:
    rows = state.setdefault(event.table, {})
    if event.before is not None:
        del rows[_key(event.table, event.before)]
    if event.after is not None:
        rows[_key(event.table, event.after)] = event.after


@st.composite
def transactions(draw: st.DrawFn) -> list[list[ChangeEvent]]:
    """Transactions of row events over two tables: inserts, updates, key changes, deletes."""
    state: State = {}
    present: dict[TableId, set[int]] = {t: set() for t in TABLES}
    out: list[list[ChangeEvent]] = []
    for n in range(draw(st.integers(0, 14))):
        txn: list[ChangeEvent] = []
        for index in range(draw(st.integers(1, 4))):
            table = draw(st.sampled_from(TABLES))
            alive, dead = sorted(present[table]), sorted(set(range(UNIVERSE)) - present[table])
            ops = (["insert"] if dead else []) + (["update", "delete"] if alive else [])
            ops += ["move"] if alive and dead else []
            op, v, pos = draw(st.sampled_from(ops)), n * 10 + index, _offset(n)
            if op == "insert":
                k = draw(st.sampled_from(dead))
                event = ChangeEvent(table, Op.INSERT, None, _row(table, k, v), pos, index)
                present[table].add(k)
            else:
                k = draw(st.sampled_from(alive))
                before = state[table][_key(table, _row(table, k, 0))]
                if op == "delete":
                    event = ChangeEvent(table, Op.DELETE, before, None, pos, index)
                    present[table].discard(k)
                else:
                    new = draw(st.sampled_from(dead)) if op == "move" else k
                    event = ChangeEvent(table, Op.UPDATE, before, _row(table, new, v), pos, index)
                    present[table].discard(k)
                    present[table].add(new)
            _apply(state, event)
            txn.append(event)
        out.append(txn)
    return out


def _replay(initial: State, events: list[ChangeEvent]) -> State:
    state = {t: dict(rows) for t, rows in initial.items()}
    for event in events:
        _apply(state, event)
    return state


def _apply_changes(state: State, table: TableId, changes: BackfillChanges) -> None:
    rows = state.setdefault(table, {})
    for key in changes.deletes:
        rows.pop(key, None)
    rows.update(changes.upserts)


@settings(max_examples=300, deadline=None)
@given(history=transactions(), cuts=st.sets(st.integers(0, 14)), chunk=st.integers(1, 5))
def test_ranges_reduced_then_absorbed_in_order_equal_the_replay(
    history: list[list[ChangeEvent]], cuts: set[int], chunk: int
) -> None:
    events = [e for txn in history for e in txn]
    edges = [0, *sorted(c for c in cuts if 0 < c < len(history)), len(history)]
    total: dict[TableId, BackfillChanges] = {}
    for low, high in itertools.pairwise(edges):
        reducer = RangeReducer(KEYS, chunk=chunk)
        for txn in history[low:high]:
            for event in txn:
                reducer.add(event)
        for table, changes in reducer.result().items():
            assert not set(changes.upserts) & changes.deletes
            absorb(total.setdefault(table, BackfillChanges()), changes)
    sink: State = {}
    for table, changes in total.items():
        _apply_changes(sink, table, changes)
        whole = collapse_events([e for e in events if e.table == table], KEYS[table], lambda _k: True)
        assert changes == whole  # the same net effect as the single reader's collapse
    expected = _replay({}, events)
    assert {t: r for t, r in sink.items() if r} == {t: r for t, r in expected.items() if r}


def test_key_change_is_delete_of_old_key_and_insert_of_new() -> None:
    t = TABLES[0]
    reducer = RangeReducer(KEYS)
    reducer.add(ChangeEvent(t, Op.INSERT, None, {"id": 1, "v": 0}, _offset(0)))
    first = reducer.result()[t]
    later = RangeReducer(KEYS)
    later.add(ChangeEvent(t, Op.UPDATE, {"id": 1, "v": 0}, {"id": 2, "v": 5}, _offset(1)))
    second = later.result()[t]
    assert second.deletes == {(1,)} and second.upserts == {(2,): {"id": 2, "v": 5}}
    merged = absorb(first, second)
    assert merged.upserts == {(2,): {"id": 2, "v": 5}} and merged.deletes == {(1,)}
    batch = table_changes(t, merged, _offset(1))
    assert batch.deletes == [(1,)] and batch.end == _offset(1) and not batch.changelog


@st.composite
def boundary_lists(draw: st.DrawFn) -> list[Boundary]:
    positions = sorted(draw(st.sets(st.integers(1, 150), max_size=40)))
    return [Boundary(_offset(p), ddl=draw(st.integers(0, 9)) == 0) for p in positions]


@settings(max_examples=300, deadline=None)
@given(boundaries=boundary_lists(), size=st.integers(1, 3000))
def test_ranges_are_consecutive_commit_bounded_and_end_before_the_first_ddl(
    boundaries: list[Boundary], size: int
) -> None:
    start = _offset(0)
    ranges = cut_ranges(start, boundaries, FILES, size)
    end = stretch_end(start, boundaries)
    commits = {b.offset for b in boundaries if not b.ddl}
    first_ddl = next((b.offset for b in boundaries if b.ddl), None)
    assert [r.index for r in ranges] == list(range(len(ranges)))
    if not ranges:
        assert end == start
        return
    assert ranges[0].start == start and ranges[-1].stop == end
    for previous, current in itertools.pairwise(ranges):
        assert previous.stop == current.start
    for r in ranges:
        assert r.start < r.stop and r.stop in commits
        assert first_ddl is None or r.stop < first_ddl
        inner = [b.offset for b in boundaries if r.start < b.offset < r.stop]
        # cut at the first commit at or past the size: no earlier commit inside reached it
        assert all(backlog_bytes(r.start, o, FILES) < size for o in inner)
        if r is not ranges[-1]:
            assert backlog_bytes(r.start, r.stop, FILES) >= size


def test_stretch_ends_at_the_last_commit_before_ddl() -> None:
    start = _offset(0)
    bs = [Boundary(_offset(3)), Boundary(_offset(5)), Boundary(_offset(7), ddl=True), Boundary(_offset(9))]
    assert stretch_end(start, bs) == _offset(5)
    assert stretch_end(start, [Boundary(_offset(2), ddl=True), *bs]) == start
    assert cut_ranges(start, bs, FILES, 10_000) == [CatchupRange(0, start, _offset(5))]


def test_backlog_bytes_spans_files() -> None:
    assert backlog_bytes(BinlogOffset("bin.000001", 900), BinlogOffset("bin.000002", 100), FILES) == 200
    assert backlog_bytes(BinlogOffset("bin.000002", 100), BinlogOffset("bin.000001", 900), FILES) == 0
    with pytest.raises(ValueError, match=r"bin\.000009"):
        backlog_bytes(BinlogOffset("bin.000009", 4), BinlogOffset("bin.000001", 4), FILES)
