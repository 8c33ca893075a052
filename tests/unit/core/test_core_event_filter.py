from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkcdc.core.chunking import splits_from_boundaries
from sparkcdc.core.event_filter import BinlogSplitFilter, start_offset
from sparkcdc.core.events import ChangeEvent, Op, Row
from sparkcdc.core.keys import KeyOrder, key_in_range, key_of
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.splits import FinishedSplitInfo, Key, SnapshotSplit
from sparkcdc.core.tables import TableId

pytestmark = pytest.mark.unit

T = TableId("shop", "orders")
OTHER = TableId("shop", "audit")
KEYS = {T: ["id"]}
UNIVERSE = 30
BEFORE_ALL = BinlogOffset("mysql-bin.000001", 4)

State = dict[Any, Row]


def offset(group: int) -> BinlogOffset:
    return BinlogOffset(f"mysql-bin.{1 + group // 4:06d}", 120 + (group % 4) * 100)


def row(k: int, v: int) -> Row:
    return {"id": k, "v": v}


def apply_source(state: State, event: ChangeEvent) -> None:
    if event.before is not None:
        del state[(event.before["id"],)]
    if event.after is not None:
        state[(event.after["id"],)] = event.after


def apply_sink_strictly(sink: State, event: ChangeEvent) -> None:
    """Apply an emitted event, failing on anything that shows a duplicate or a gap."""
    if event.before is not None:
        old = (event.before["id"],)
        assert sink.get(old) == event.before, f"{event.op} of {old}: sink has {sink.get(old)}"
        del sink[old]
    if event.after is not None:
        new = (event.after["id"],)
        assert new not in sink, f"{event.op} of {new}: the sink already holds it"
        sink[new] = event.after


@st.composite
def event_groups(draw: st.DrawFn, initial: State) -> list[list[ChangeEvent]]:
    state = dict(initial)
    groups: list[list[ChangeEvent]] = []
    for g in range(draw(st.integers(0, 14))):
        group: list[ChangeEvent] = []
        for index in range(draw(st.integers(1, 3))):
            present = sorted(k[0] for k in state)
            absent = [k for k in range(UNIVERSE) if (k,) not in state]
            ops = (["insert"] if absent else []) + (["update", "delete"] if present else [])
            ops += ["move", "move"] if present and absent else []
            op = draw(st.sampled_from(ops))
            v = 100 * (g + 1) + index
            if op == "insert":
                k = draw(st.sampled_from(absent))
                event = ChangeEvent(T, Op.INSERT, None, row(k, v), offset(g), index)
            elif op == "delete":
                k = draw(st.sampled_from(present))
                event = ChangeEvent(T, Op.DELETE, state[(k,)], None, offset(g), index)
            else:
                k = draw(st.sampled_from(present))
                new = draw(st.sampled_from(absent)) if op == "move" else k
                event = ChangeEvent(T, Op.UPDATE, state[(k,)], row(new, v), offset(g), index)
            apply_source(state, event)
            group.append(event)
        groups.append(group)
    return groups


def state_through(initial: State, groups: Sequence[Sequence[ChangeEvent]], last_group: int) -> State:
    state = dict(initial)
    for group in groups[: last_group + 1]:
        for event in group:
            apply_source(state, event)
    return state


def owner(splits: Sequence[SnapshotSplit], key: Key) -> SnapshotSplit:
    (found,) = [s for s in splits if key_in_range(key, s.start, s.end)]
    return found


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_filter_emits_each_change_exactly_once(data: Any) -> None:
    initial = {(k,): row(k, 0) for k in data.draw(st.sets(st.integers(0, UNIVERSE - 1)))}
    groups = data.draw(event_groups(initial))
    cuts = sorted(data.draw(st.sets(st.integers(1, UNIVERSE - 1), max_size=5)))
    splits = splits_from_boundaries(T, [(c,) for c in cuts])
    # each split finished at its own high watermark: after some group (-1: before any event)
    finished_at = [data.draw(st.integers(-1, len(groups) - 1)) for _ in splits]
    infos = [
        FinishedSplitInfo(s, offset(g) if g >= 0 else BEFORE_ALL)
        for s, g in zip(splits, finished_at, strict=True)
    ]
    sink: State = {}
    for split, g in zip(splits, finished_at, strict=True):
        snapshot = state_through(initial, groups, g)
        sink.update({k: v for k, v in snapshot.items() if key_in_range(k, split.start, split.end)})

    filt = BinlogSplitFilter({T: infos}, KEYS)
    start = start_offset(infos)
    assert filt.start_offset() == start
    hw = {s: i.high_watermark for s, i in zip(splits, infos, strict=True)}
    for event in (e for group in groups for e in group if e.offset > start):
        emitted = filt.filter_event(event)
        for part in emitted:
            for image in (part.before, part.after):
                if image is not None:  # never emit what a split's snapshot already holds
                    assert part.offset > hw[owner(splits, key_of(image, ["id"]))]
            apply_sink_strictly(sink, part)
    assert sink == state_through(initial, groups, len(groups) - 1)

    top = max(i.high_watermark for i in infos)
    seen_past_top = any(e.offset > top for group in groups for e in group)
    assert (T in filt.pure_binlog_tables()) == seen_past_top


def test_should_emit_uses_split_watermarks() -> None:
    low, mid, high = (BinlogOffset("mysql-bin.000003", p) for p in (100, 200, 300))
    infos = [
        FinishedSplitInfo(SnapshotSplit(T, 0, None, (10,)), high),
        FinishedSplitInfo(SnapshotSplit(T, 1, (10,), None), low),
    ]
    filt = BinlogSplitFilter({T: infos}, KEYS)
    assert filt.start_offset() == low
    ins_left = ChangeEvent(T, Op.INSERT, None, row(5, 1), mid)
    ins_right = ChangeEvent(T, Op.INSERT, None, row(15, 1), mid)
    assert not filt.should_emit(ins_left)
    assert filt.should_emit(ins_right)
    # a key change from the right split (HW low) to the left split (HW high) at mid:
    # the right split's snapshot still has the old row -> emit only the delete
    move = ChangeEvent(T, Op.UPDATE, row(15, 1), row(5, 2), mid, 3, ts_ms=7)
    (delete,) = filt.filter_event(move)
    assert delete.op is Op.DELETE and delete.before == row(15, 1) and delete.after is None
    assert (delete.offset, delete.index, delete.ts_ms) == (mid, 3, 7)
    back = ChangeEvent(T, Op.UPDATE, row(5, 2), row(16, 3), mid)
    (insert,) = filt.filter_event(back)
    assert insert.op is Op.INSERT and insert.after == row(16, 3) and insert.before is None
    assert filt.pure_binlog_tables() == set()
    after = ChangeEvent(T, Op.INSERT, None, row(5, 9), BinlogOffset("mysql-bin.000004", 4))
    assert filt.filter_event(after) == [after]
    assert filt.pure_binlog_tables() == {T}


def test_tables_without_splits() -> None:
    infos = [FinishedSplitInfo(SnapshotSplit(T, 0, None, None), BEFORE_ALL)]
    filt = BinlogSplitFilter({T: infos}, KEYS, streaming=[OTHER])
    late = ChangeEvent(OTHER, Op.INSERT, None, {"id": 1}, offset(0))
    unknown = ChangeEvent(TableId("shop", "x"), Op.INSERT, None, {"id": 1}, offset(0))
    assert filt.filter_event(late) == [late]
    assert filt.filter_event(unknown) == []
    assert filt.is_captured(OTHER) and not filt.is_captured(unknown.table)


def test_advance_to_marks_tables_pure() -> None:
    infos = [FinishedSplitInfo(SnapshotSplit(T, 0, None, None), offset(3))]
    filt = BinlogSplitFilter({T: infos}, KEYS)
    filt.advance_to(offset(2))
    assert filt.pure_binlog_tables() == set()
    filt.advance_to(offset(3))
    assert filt.pure_binlog_tables() == {T}
    assert filt.max_watermark(T) == offset(3)


def test_collated_keys_pick_the_right_split() -> None:
    order = KeyOrder.for_columns(["utf8mb4_general_ci"])
    early, late = BinlogOffset("b.000001", 100), BinlogOffset("b.000001", 200)
    infos = [
        FinishedSplitInfo(SnapshotSplit(T, 0, None, ("m",)), late),
        FinishedSplitInfo(SnapshotSplit(T, 1, ("m",), None), early),
    ]
    filt = BinlogSplitFilter({T: infos}, {T: ["name"]}, {T: order})
    event = ChangeEvent(T, Op.INSERT, None, {"name": "Z"}, BinlogOffset("b.000001", 150))
    assert filt.should_emit(event)  # "Z" > "m" case-insensitively, though "Z" < "m" in Python
    same = ChangeEvent(T, Op.INSERT, None, {"name": "M  "}, BinlogOffset("b.000001", 150))
    assert filt.should_emit(same)  # equal to the boundary "m": owned by split 1


def test_incomplete_coverage_is_rejected() -> None:
    infos = [
        FinishedSplitInfo(SnapshotSplit(T, 0, None, (10,)), BEFORE_ALL),
        FinishedSplitInfo(SnapshotSplit(T, 2, (20,), None), BEFORE_ALL),
    ]
    with pytest.raises(ValueError, match="cover"):
        BinlogSplitFilter({T: infos}, KEYS)
    with pytest.raises(ValueError):
        start_offset([])
