"""A renamed table's checkpoint entries move to its new name; a dropped one's go (core/checkpoint.py)."""

from __future__ import annotations

import pytest

from sparkcdc.core.checkpoint import (
    Checkpoint,
    Phase,
    TablePlan,
    TableState,
    decode,
    encode,
    move_table,
    without_table,
)
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.splits import FinishedSplitInfo
from sparkcdc.core.tables import TableId

pytestmark = pytest.mark.unit

A, B, C = TableId("shop", "a"), TableId("shop", "b"), TableId("shop", "c")


def off(pos: int) -> BinlogOffset:
    return BinlogOffset("b.000001", pos)


def snapshotted(table: TableId, wm: int) -> Checkpoint:
    plan = TablePlan(((10,),), True, ("id",))
    splits = plan.splits(table)
    return Checkpoint(
        tables={table: TableState(Phase.BINLOG)},
        plans={table: plan},
        finished={table: tuple(FinishedSplitInfo(s, off(wm + s.index), 5) for s in splits)},
        binlog_offset=off(500),
        definitions={table: {"doc": str(table)}},
    )


def merged(*checkpoints: Checkpoint) -> Checkpoint:
    out = Checkpoint(binlog_offset=off(500))
    for cp in checkpoints:
        out = Checkpoint(
            tables={**out.tables, **cp.tables},
            plans={**out.plans, **cp.plans},
            finished={**out.finished, **cp.finished},
            binlog_offset=off(500),
            definitions={**out.definitions, **cp.definitions},
        )
    return out


def test_move_carries_every_entry_to_the_new_name() -> None:
    before = merged(snapshotted(A, 100), snapshotted(C, 200))
    after = move_table(before, A, B)
    assert A not in after.tables and A not in after.plans and A not in after.finished
    assert A not in after.definitions
    assert after.tables[B] == before.tables[A] and after.plans[B] == before.plans[A]
    assert after.definitions[B] == {"doc": "shop.a"}
    assert [i.split.table for i in after.finished[B]] == [B, B]
    assert [(i.split.index, i.high_watermark, i.rows) for i in after.finished[B]] == [
        (i.split.index, i.high_watermark, i.rows) for i in before.finished[A]
    ]
    assert after.max_watermark(B) == before.max_watermark(A)
    # Other tables and the offset are untouched, and the result encodes (plans match splits).
    assert after.finished[C] == before.finished[C] and after.binlog_offset == before.binlog_offset
    assert decode(encode(after)) == after


def test_move_replaces_what_the_new_name_had_and_repeats_as_nothing() -> None:
    before = merged(snapshotted(A, 100), Checkpoint(tables={B: TableState(Phase.BINLOG)}))
    after = move_table(before, A, B)
    assert after.tables[B] == before.tables[A] and after.finished[B]
    assert move_table(after, A, B) is after  # a replay of the statement
    assert move_table(after, B, B) is after


def test_a_failed_table_moves_failed() -> None:
    failed = Checkpoint(tables={A: TableState(Phase.FAILED, "table shop.a stopped")})
    after = move_table(failed, A, B)
    assert after.tables == {B: TableState(Phase.FAILED, "table shop.a stopped")}


def test_without_table_forgets_it() -> None:
    before = merged(snapshotted(A, 100), snapshotted(C, 200))
    after = without_table(before, A)
    assert after == merged(snapshotted(C, 200))
    assert without_table(after, A) == after
