from __future__ import annotations

import itertools
import random
from collections.abc import Sequence
from functools import partial
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkcdc.core.events import ChangeEvent, Op, Row
from sparkcdc.core.keys import key_in_range
from sparkcdc.core.merge import BackfillChanges, collapse_events, merge_snapshot
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.splits import Key
from sparkcdc.core.tables import TableId

pytestmark = pytest.mark.unit

T = TableId("shop", "orders")
KEYS = ["id"]
UNIVERSE = 24


def offset(group: int) -> BinlogOffset:
    """Offsets of event groups, rolling over binlog files now and then."""
    return BinlogOffset(f"mysql-bin.{1 + group // 5:06d}", 200 + (group % 5) * 100)


def row(k: int, v: int) -> Row:
    return {"id": k, "v": v}


State = dict[Any, Row]


def apply(state: State, event: ChangeEvent) -> None:
    """Replay one event onto a whole-table state (the source's behaviour)."""
    if event.before is not None:
        del state[(event.before["id"],)]
    if event.after is not None:
        state[(event.after["id"],)] = event.after


@st.composite
def histories(draw: st.DrawFn) -> tuple[State, list[list[ChangeEvent]]]:
    """An initial table and a list of event groups (one binlog event each, sharing an offset)."""
    initial = {(k,): row(k, 0) for k in draw(st.sets(st.integers(0, UNIVERSE - 1), max_size=UNIVERSE))}
    state = dict(initial)
    groups: list[list[ChangeEvent]] = []
    for g in range(draw(st.integers(0, 12))):
        group: list[ChangeEvent] = []
        for index in range(draw(st.integers(1, 3))):
            present = sorted(k[0] for k in state)
            absent = [k for k in range(UNIVERSE) if (k,) not in state]
            ops = (["insert"] if absent else []) + (["update", "delete"] if present else [])
            ops += ["move"] if present and absent else []
            if not ops:
                break
            op = draw(st.sampled_from(ops))
            v = g * 10 + index + 1
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
            apply(state, event)
            group.append(event)
        groups.append(group)
    return initial, groups


def replay(initial: State, groups: Sequence[Sequence[ChangeEvent]]) -> State:
    state = dict(initial)
    for group in groups:
        for event in group:
            apply(state, event)
    return state


def in_range(key: Key, start: Key | None, end: Key | None) -> bool:
    return key_in_range(key, start, end)


def restrict(state: State, start: Key | None, end: Key | None) -> State:
    return {k: v for k, v in state.items() if key_in_range(k, start, end)}


@settings(max_examples=300, deadline=None)
@given(
    history=histories(),
    cuts=st.sets(st.integers(1, UNIVERSE - 1), max_size=4),
    data=st.data(),
)
def test_merge_equals_replay_to_high_watermark(
    history: tuple[State, list[list[ChangeEvent]]], cuts: set[int], data: Any
) -> None:
    initial, groups = history
    edges: list[Key | None] = [None, *[(c,) for c in sorted(cuts)], None]
    final = replay(initial, groups)
    events = [e for group in groups for e in group]
    random.Random(data.draw(st.integers(0, 1000))).shuffle(events)  # order comes from offsets
    for start, end in itertools.pairwise(edges):
        # the chunk read is a consistent read at any point between the watermarks
        prefix = data.draw(st.integers(0, len(groups)))
        snapshot = restrict(replay(initial, groups[:prefix]), start, end)
        changes = collapse_events(events, KEYS, partial(in_range, start=start, end=end))
        assert not (set(changes.upserts) & changes.deletes)
        assert merge_snapshot(snapshot, changes) == restrict(final, start, end)


def test_key_change_moves_row_between_splits() -> None:
    w = BinlogOffset("mysql-bin.000001", 500)
    move = ChangeEvent(T, Op.UPDATE, row(5, 1), row(15, 2), w)
    left = collapse_events([move], KEYS, lambda k: key_in_range(k, None, (10,)))
    right = collapse_events([move], KEYS, lambda k: key_in_range(k, (10,), None))
    assert left == BackfillChanges({}, {(5,)})
    assert right == BackfillChanges({(15,): row(15, 2)}, set())
    assert merge_snapshot({(5,): row(5, 1)}, left) == {}
    assert merge_snapshot({}, right) == {(15,): row(15, 2)}


def test_last_image_wins_in_offset_then_index_order() -> None:
    a = BinlogOffset("mysql-bin.000002", 4)
    b = BinlogOffset("mysql-bin.000001", 900)
    events = [
        ChangeEvent(T, Op.INSERT, None, row(1, 3), a, 0),
        ChangeEvent(T, Op.DELETE, row(1, 2), None, b, 1),
        ChangeEvent(T, Op.UPDATE, row(1, 1), row(1, 2), b, 0),
    ]
    changes = collapse_events(events, KEYS, lambda k: True)
    assert changes.upserts == {(1,): row(1, 3)} and not changes.deletes
    assert changes.touched() == {(1,)}
    assert bool(changes) and not BackfillChanges()
