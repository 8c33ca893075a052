"""A table snapshotted beside the stream ends exactly like its source (core/interleaved.py).

The property test plays the protocol engine/interleaved.py follows against a model source: a
consumer reads the binlog in order behind the source, asks for splits at batch boundaries, each
read lands at a watermark between the consumer's position and the source's head, and a split is
written once the consumer committed past it, followed by what it held back after it. Whatever the
history, timing and key changes, the sink ends equal to the source.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkcdc.core.checkpoint import Checkpoint, Phase, TableState
from sparkcdc.core.events import ChangeEvent, Op
from sparkcdc.core.interleaved import (
    Route,
    SplitRouter,
    interleaved_tables,
    unfinished_splits,
    with_finished_split,
    with_plan,
    without_snapshot,
)
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.splits import FinishedSplitInfo, SnapshotSplit
from sparkcdc.core.tables import TableId

T = TableId("db", "t")
KEYS = 12


def at(i: int) -> BinlogOffset:
    return BinlogOffset("b.000001", 100 + i)


def plan(cuts: list[int]) -> list[SnapshotSplit]:
    bounds: list[int | None] = [None, *sorted(set(cuts)), None]
    return [
        SnapshotSplit(T, i, None if lo is None else (lo,), None if hi is None else (hi,))
        for i, (lo, hi) in enumerate(itertools.pairwise(bounds))
    ]


@dataclass
class Write:
    key: int
    value: int | None  # None: delete
    new_key: int | None = None  # an update that moves the row


def history_events(writes: list[Write]) -> tuple[list[ChangeEvent], list[dict[int, int]]]:
    """One event per transaction, event i at offset i+1; states[i] is the source after i events."""
    state: dict[int, int] = {}
    states, events = [dict(state)], []
    for i, w in enumerate(writes):
        offset = at(i + 1)
        old = state.get(w.key)
        if w.value is None:
            if old is None:
                events.append(ChangeEvent(T, Op.INSERT, None, {"k": w.key, "v": 0}, offset))
                state[w.key] = 0
            else:
                events.append(ChangeEvent(T, Op.DELETE, {"k": w.key, "v": old}, None, offset))
                del state[w.key]
        elif old is None:
            events.append(ChangeEvent(T, Op.INSERT, None, {"k": w.key, "v": w.value}, offset))
            state[w.key] = w.value
        else:
            target = w.key if w.new_key is None or w.new_key in state else w.new_key
            events.append(
                ChangeEvent(T, Op.UPDATE, {"k": w.key, "v": old}, {"k": target, "v": w.value}, offset)
            )
            del state[w.key]
            state[target] = w.value
        states.append(dict(state))
    return events, states


def apply(sink: dict[int, int], event: ChangeEvent) -> None:
    if event.before is not None:
        sink.pop(event.before["k"], None)
    if event.after is not None:
        sink[event.after["k"]] = event.after["v"]


def in_split(split: SnapshotSplit, key: int) -> bool:
    return (split.start is None or key >= split.start[0]) and (split.end is None or key < split.end[0])


writes = st.lists(
    st.builds(
        Write,
        st.integers(0, KEYS - 1),
        st.one_of(st.none(), st.integers(1, 99)),
        st.one_of(st.none(), st.integers(0, KEYS - 1)),
    ),
    min_size=1,
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(writes, st.lists(st.integers(1, KEYS - 1), max_size=3), st.data())
def test_the_sink_ends_equal_to_the_source(
    history: list[Write], cuts: list[int], data: st.DataObject
) -> None:
    events, states = history_events(history)
    head = len(events)
    splits = plan(cuts)
    router = SplitRouter(splits, ("k",))
    # The sink held stale rows of this table before (a resnapshot): they must go too.
    sink: dict[int, int] = {k: -1 for k in data.draw(st.sets(st.integers(0, KEYS - 1)), label="stale")}
    held: dict[int, list[ChangeEvent]] = {}
    reads: dict[int, int] = {}  # split index -> the high watermark its read landed at
    position = data.draw(st.integers(0, head), label="added at")  # events before it: not captured
    while not router.is_done() or position < head:
        # A batch boundary: write what was read as of a watermark the consumer has passed.
        for index in sorted(reads):
            high = reads[index]
            if high > position:
                continue
            split = splits[index]
            for key in [k for k in sink if in_split(split, k)]:
                del sink[key]
            sink.update({k: v for k, v in states[high].items() if in_split(split, k)})
            for event in held.pop(index):
                if event.offset > at(high):
                    apply(sink, event)
            router.finished[index] = at(high)
            router.asked.discard(index)
            del reads[index]
        for split in splits:  # ask for up to two; each read lands between here and the head
            if (
                split.index not in router.finished
                and split.index not in router.asked
                and len(router.asked) < 2
            ):
                router.asked.add(split.index)
                held[split.index] = []
                reads[split.index] = data.draw(st.integers(position, head), label="watermark")
        if position < head:
            for route, index, part in router.route(events[position]):
                if route is Route.EMIT:
                    apply(sink, part)
                elif route is Route.HOLD:
                    held[index].append(part)
            position += 1
    assert sink == states[head]


def test_checkpoint_bookkeeping() -> None:
    splits = plan([4, 8])
    checkpoint = without_snapshot(Checkpoint(tables={T: TableState(Phase.BINLOG)}), [T])
    assert interleaved_tables(checkpoint) == [T] and T not in checkpoint.plans
    checkpoint = with_plan(checkpoint, T, splits, ("k",))
    assert unfinished_splits(checkpoint, T) == splits
    for split in splits[:2]:
        checkpoint = with_finished_split(checkpoint, FinishedSplitInfo(split, at(5), 3))
    assert checkpoint.tables[T].phase is Phase.SNAPSHOT and unfinished_splits(checkpoint, T) == splits[2:]
    checkpoint = with_finished_split(checkpoint, FinishedSplitInfo(splits[2], at(9), 1))
    assert checkpoint.tables[T].phase is Phase.BINLOG and interleaved_tables(checkpoint) == []


@pytest.mark.parametrize(("key", "owner"), [(0, 0), (3, 0), (4, 1), (7, 1), (8, 2), (100, 2)])
def test_the_owner_of_a_key(key: int, owner: int) -> None:
    assert SplitRouter(plan([4, 8]), ("k",)).owner((key,)) == owner
