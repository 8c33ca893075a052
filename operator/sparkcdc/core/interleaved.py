"""Snapshotting a table while the binlog streams on (DBLog): which events go where, exactly.

A table added to a streaming pipeline — by a spec edit, a ``CREATE TABLE`` that matches it, a
resnapshot request — is read split by split while the one binlog stream keeps the other tables
current. The stream's consumer owns the order. When it asks for split ``s`` at a batch boundary,
every event of ``s``'s keys it meets from then on is held back (buffered); the split is then read
like any snapshot split (architecture §3 rule 2: low watermark, chunk, high watermark ``H``,
backfill), so its content is exact as of ``H``. Since the request came first, ``H`` lies after
every event the consumer had let pass or dropped for those keys. Once the consumer has committed
past ``H`` it writes the split (range replace, rule 3) and then the held-back events after ``H``;
from then on the split is finished and its keys' events after ``H`` go straight through (rule 4).
Events of splits not asked for yet are dropped: a later read covers them.

``SplitRouter`` is that decision for one table; the functions below record plans and finished
splits in the checkpoint the same way the snapshot phase does.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from enum import Enum

from sparkcdc.core.checkpoint import Checkpoint, Phase, TablePlan, TableState
from sparkcdc.core.events import ChangeEvent, Op
from sparkcdc.core.keys import KeyOrder, SortKey, key_of
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.splits import FinishedSplitInfo, Key, SnapshotSplit
from sparkcdc.core.tables import TableId

__all__ = [
    "Route",
    "SplitRouter",
    "interleaved_tables",
    "unfinished_splits",
    "with_finished_split",
    "with_plan",
    "without_snapshot",
]


class Route(Enum):
    EMIT = "emit"  # the key's split is finished and the event is after its high watermark
    HOLD = "hold"  # the key's split is asked for: held back until its content is written
    DROP = "drop"  # covered by a split's content (finished, or read later)


@dataclass
class SplitRouter:
    """Routes one table's events by the split owning each key (see the module docstring)."""

    splits: Sequence[SnapshotSplit]  # the table's whole plan, in key order
    key_columns: tuple[str, ...]
    order: KeyOrder = field(default_factory=KeyOrder)
    finished: dict[int, BinlogOffset] = field(default_factory=dict)  # split index -> high watermark
    asked: set[int] = field(default_factory=set)  # split indexes asked for and not finished

    def __post_init__(self) -> None:
        starts = [s.start for s in self.splits[1:]]
        assert all(start is not None for start in starts), "only a plan's first split starts unbounded"
        self._starts: list[SortKey] = [self.order.sort_key(start) for start in starts if start is not None]

    def owner(self, key: Key) -> int:
        """The index of the split whose range holds ``key``."""
        return self.splits[bisect.bisect_right(self._starts, self.order.sort_key(key))].index

    def route_key(self, key: Key, offset: BinlogOffset) -> tuple[Route, int]:
        index = self.owner(key)
        if index in self.finished:
            return (Route.EMIT if offset > self.finished[index] else Route.DROP), index
        return (Route.HOLD if index in self.asked else Route.DROP), index

    def route(self, event: ChangeEvent) -> list[tuple[Route, int, ChangeEvent]]:
        """The event's routes; a key-changing update whose old and new keys lie in splits
        routed differently becomes its delete half and its insert half."""
        if event.op is not Op.UPDATE:
            return [(*self.route_key(key_of(event.image, self.key_columns), event.offset), event)]
        assert event.before is not None and event.after is not None
        old = self.route_key(key_of(event.before, self.key_columns), event.offset)
        new = self.route_key(key_of(event.after, self.key_columns), event.offset)
        if old == new:
            return [(*old, event)]
        return [
            (*old, replace(event, op=Op.DELETE, after=None)),
            (*new, replace(event, op=Op.INSERT, before=None)),
        ]

    def is_done(self) -> bool:
        return len(self.finished) == len(self.splits)


def interleaved_tables(checkpoint: Checkpoint) -> list[TableId]:
    """Tables of a streaming pipeline whose snapshot is still to be done."""
    return [t for t, s in checkpoint.tables.items() if s.phase is Phase.SNAPSHOT]


def without_snapshot(checkpoint: Checkpoint, tables: Sequence[TableId]) -> Checkpoint:
    """``tables`` to be snapshotted (again) while streaming: no plan, nothing finished."""
    gone = set(tables)
    return replace(
        checkpoint,
        tables={**checkpoint.tables, **{t: TableState(Phase.SNAPSHOT) for t in gone}},
        plans={t: p for t, p in checkpoint.plans.items() if t not in gone},
        finished={t: f for t, f in checkpoint.finished.items() if t not in gone},
    )


def with_plan(
    checkpoint: Checkpoint, table: TableId, splits: Sequence[SnapshotSplit], key: Sequence[str]
) -> Checkpoint:
    """The table's complete plan, recorded before any of its splits is written (a rerun after a
    crash must read the same ranges)."""
    plan = TablePlan.from_splits(splits, complete=True, key_columns=key)
    return replace(checkpoint, plans={**checkpoint.plans, table: plan})


def unfinished_splits(checkpoint: Checkpoint, table: TableId) -> list[SnapshotSplit]:
    plan = checkpoint.plans.get(table)
    if plan is None:
        return []
    done = {i.split.index for i in checkpoint.finished.get(table, ())}
    return [s for s in plan.splits(table) if s.index not in done]


def with_finished_split(checkpoint: Checkpoint, info: FinishedSplitInfo) -> Checkpoint:
    """The split committed as of its high watermark; its table enters the binlog phase with
    its last split."""
    table = info.split.table
    kept = [i for i in checkpoint.finished.get(table, ()) if i.split.index != info.split.index]
    finished = {**checkpoint.finished, table: (*kept, info)}
    plan = checkpoint.plans[table]
    tables = dict(checkpoint.tables)
    if len(finished[table]) == plan.split_count():
        tables[table] = TableState(Phase.BINLOG)
    return replace(checkpoint, finished=finished, tables=tables)
