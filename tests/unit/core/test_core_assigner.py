from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkcdc.core.assigner import SnapshotSplitAssigner
from sparkcdc.core.checkpoint import Checkpoint, Phase, TableState, decode, encode
from sparkcdc.core.chunking import splits_from_boundaries
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.splits import FinishedSplitInfo, SnapshotSplit
from sparkcdc.core.tables import TableId

pytestmark = pytest.mark.unit

T1 = TableId("shop", "orders")
T2 = TableId("shop", "order_items")


def wm(pos: int) -> BinlogOffset:
    return BinlogOffset("mysql-bin.000001", pos)


def done(splits: list[SnapshotSplit], pos: int) -> list[FinishedSplitInfo]:
    return [FinishedSplitInfo(s, wm(pos), rows=10) for s in splits]


def round_trip(checkpoint: Checkpoint) -> Checkpoint:
    return decode(json.loads(json.dumps(encode(checkpoint))))


def split_key(split: SnapshotSplit) -> tuple[TableId, Any, Any]:
    return split.table, split.start, split.end


@settings(max_examples=200, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 12), min_size=1, max_size=3),
    data=st.data(),
)
def test_resume_hands_out_the_rest_exactly_once(sizes: list[int], data: Any) -> None:
    tables = [TableId("db", f"t{i}") for i in range(len(sizes))]
    plans = {
        t: splits_from_boundaries(t, [(10 * k,) for k in range(1, n + 1)])
        for t, n in zip(tables, sizes, strict=True)
    }
    assigner = SnapshotSplitAssigner.from_splits(s for splits in plans.values() for s in splits)
    total = sum(len(s) for s in plans.values())
    assert assigner.progress() == (0, total)

    finished: set[tuple[TableId, Any, Any]] = set()
    for round_no in range(data.draw(st.integers(0, 6))):
        wave = assigner.next_wave(data.draw(st.integers(1, 5)))
        assert not {split_key(s) for s in wave} & finished
        completed = [s for s in wave if data.draw(st.booleans())]
        assigner.on_finished(done(completed, 100 + round_no))
        finished |= {split_key(s) for s in completed}
    # the driver dies here: splits in flight are not finished

    resumed = SnapshotSplitAssigner(round_trip(assigner.to_checkpoint()))
    assert resumed.progress() == (len(finished), total)
    handed: list[tuple[TableId, Any, Any]] = []
    while wave := resumed.next_wave(data.draw(st.integers(1, 4))):
        handed += [split_key(s) for s in wave]
        resumed.on_finished(done(wave, 999))
    all_splits = {split_key(s) for splits in plans.values() for s in splits}
    assert len(handed) == len(set(handed))
    assert set(handed) == all_splits - finished
    assert resumed.is_finished() and resumed.progress() == (total, total)
    assert resumed.next_wave(10) == []


def test_waves_release_and_duplicate_reports() -> None:
    splits = splits_from_boundaries(T1, [(10,), (20,), (30,)])
    assigner = SnapshotSplitAssigner.from_splits(splits, {T1: ["id"]})
    first = assigner.next_wave(2)
    assert first == splits[:2]
    assert assigner.next_wave(5) == splits[2:]
    assigner.release([splits[1]])
    assert assigner.next_wave(5) == [splits[1]]
    assigner.on_finished(done(splits, 100))
    assigner.on_finished(done([splits[0]], 200))  # a retried split: the later commit counts
    assert [i.high_watermark for i in assigner.finished_infos(T1)] == [wm(200), wm(100), wm(100), wm(100)]
    assert assigner.is_finished()
    assert assigner.state(T1) == TableState(Phase.BINLOG)
    cp = assigner.to_checkpoint()
    assert cp.plans[T1].key_columns == ("id",)
    with pytest.raises(ValueError, match="not planned"):
        assigner.on_finished(done([SnapshotSplit(T1, 0, None, (11,))], 1))


def test_incremental_planning_and_added_tables() -> None:
    assigner = SnapshotSplitAssigner()
    everything = splits_from_boundaries(T1, [(10,), (20,), (30,)])
    assigner.add_table(T1, everything[:2], complete=False)
    assert assigner.tables_awaiting_plan() == [T1]
    assert assigner.next_wave(10) == everything[:2]
    assigner.on_finished(done(everything[:2], 50))
    assert not assigner.is_finished()
    resumed = SnapshotSplitAssigner(round_trip(assigner.to_checkpoint()))
    resumed.extend_plan(T1, everything[2:], complete=True)
    assert resumed.tables_awaiting_plan() == []
    assert resumed.next_wave(10) == everything[2:]
    resumed.on_finished(done(everything[2:], 60))
    assert resumed.is_finished()

    late = splits_from_boundaries(T2, [])
    resumed.add_table(T2, late)
    assert not resumed.is_finished()
    assert resumed.next_wave(10) == late
    resumed.on_finished(done(late, 70))
    assert resumed.is_finished()
    with pytest.raises(ValueError, match="already planned"):
        resumed.add_table(T2, late)
    with pytest.raises(ValueError):
        resumed.extend_plan(T1, [SnapshotSplit(T1, 4, (30,), None)], complete=True)


def test_reset_tables() -> None:
    splits = splits_from_boundaries(T1, [(10,)])
    assigner = SnapshotSplitAssigner.from_splits(splits)
    assigner.on_finished(done(assigner.next_wave(5), 10))
    assigner.reset_tables([T1])
    assert assigner.progress() == (0, 2) and not assigner.is_finished()
    assert assigner.next_wave(5) == splits
    assigner.reset_tables([T1], replan=True)
    assert assigner.progress() == (0, 0)
    assert assigner.tables_awaiting_plan() == [T1] and not assigner.is_finished()
    assigner.add_table(T1, splits_from_boundaries(T1, [(5,), (50,)]))
    assert len(assigner.next_wave(5)) == 3


def test_failed_tables_do_not_block() -> None:
    assigner = SnapshotSplitAssigner.from_splits(
        [*splits_from_boundaries(T1, []), *splits_from_boundaries(T2, [])]
    )
    assigner.set_state(T2, TableState(Phase.FAILED, "table dropped"))
    (only,) = assigner.next_wave(5)
    assert only.table == T1
    assigner.on_finished(done([only], 5))
    assert assigner.is_finished()
    assert round_trip(assigner.to_checkpoint()).tables[T2] == TableState(Phase.FAILED, "table dropped")


def test_resplit_renumbers_and_keeps_in_flight_splits() -> None:
    splits = splits_from_boundaries(T1, [(10,), (20,)])
    assigner = SnapshotSplitAssigner.from_splits(splits)
    assigner.on_finished(done([splits[0]], 5))
    in_flight = assigner.next_wave(1)
    assert in_flight == [splits[1]]
    with pytest.raises(ValueError, match="in flight"):
        assigner.resplit(splits[1], [(15,)])
    assigner.resplit(splits[2], [(100,), (1000,)])
    assert [(s.start, s.end) for s in assigner.splits(T1)] == [
        (None, (10,)),
        ((10,), (20,)),
        ((20,), (100,)),
        ((100,), (1000,)),
        ((1000,), None),
    ]
    assert [s.index for s in assigner.splits(T1)] == [0, 1, 2, 3, 4]
    assigner.on_finished(done(in_flight, 6))
    rest = assigner.next_wave(10)
    assert [s.index for s in rest] == [2, 3, 4]
    assigner.on_finished(done(rest, 7))
    assert assigner.is_finished() and assigner.progress() == (5, 5)
    # resplitting in the middle shifts finished splits after it
    more = SnapshotSplitAssigner.from_splits(splits_from_boundaries(T2, [(10,), (20,)]))
    more.on_finished(done([more.splits(T2)[2]], 9))
    more.resplit(more.splits(T2)[1], [(15,)])
    (moved,) = more.finished_infos(T2)
    assert moved.split == SnapshotSplit(T2, 3, (20,), None)
    assert round_trip(more.to_checkpoint()).finished[T2] == (moved,)


def test_to_checkpoint_keeps_other_fields() -> None:
    base = Checkpoint(binlog_offset=wm(4), server_ids=(5400, 5403), snapshot_done=False)
    assigner = SnapshotSplitAssigner(base)
    assigner.add_table(T1, splits_from_boundaries(T1, []))
    cp = assigner.to_checkpoint()
    assert cp.binlog_offset == wm(4) and cp.server_ids == (5400, 5403)
    assert cp.tables == {T1: TableState(Phase.SNAPSHOT)}
