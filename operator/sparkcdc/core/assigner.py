"""Snapshot split assigner: hands splits out in waves and tracks which are finished.

This is the driver-side bookkeeping of Flink CDC's ``MySqlSnapshotSplitAssigner``. Splits are
handed out at most once while the assigner lives; a split handed out but not reported finished
is handed out again only after ``release`` (a failed task) or after a restart — the handed-out
set is deliberately not part of the checkpoint, so a resumed driver re-reads exactly the splits
that were not committed.

Finished reports are matched to planned splits by their key range, not by index, so
``resplit`` can renumber a table's splits while other splits of it are in flight.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from sparkcdc.core.checkpoint import Checkpoint, Phase, TablePlan, TableState
from sparkcdc.core.chunking import split_oversized
from sparkcdc.core.keys import KeyOrder
from sparkcdc.core.splits import FinishedSplitInfo, Key, SnapshotSplit
from sparkcdc.core.tables import TableId

__all__ = ["SnapshotSplitAssigner"]

_Range = tuple[Key | None, Key | None]


@dataclass
class _TableProgress:
    splits: list[SnapshotSplit]
    complete: bool
    key_columns: tuple[str, ...]
    finished: dict[int, FinishedSplitInfo] = field(default_factory=dict)
    handed_out: set[int] = field(default_factory=set)

    def position_of(self, split: SnapshotSplit) -> int:
        wanted: _Range = (split.start, split.end)
        if 0 <= split.index < len(self.splits):
            candidate = self.splits[split.index]
            if (candidate.start, candidate.end) == wanted:
                return split.index
        for i, planned in enumerate(self.splits):
            if (planned.start, planned.end) == wanted:
                return i
        raise ValueError(f"split {split.split_id} [{split.start!r}, {split.end!r}) is not planned")

    def plan(self) -> TablePlan:
        return TablePlan.from_splits(self.splits, complete=self.complete, key_columns=self.key_columns)

    def is_done(self) -> bool:
        return self.complete and len(self.finished) == len(self.splits)


def _renumber(splits: Iterable[SnapshotSplit], first: int) -> list[SnapshotSplit]:
    return [replace(s, index=first + i) for i, s in enumerate(splits)]


class SnapshotSplitAssigner:
    """Assigns snapshot splits of all tables; built from a checkpoint or from planned splits."""

    def __init__(self, checkpoint: Checkpoint | None = None) -> None:
        base = checkpoint or Checkpoint()
        self._base = base
        self._states: dict[TableId, TableState] = dict(base.tables)
        self._tables: dict[TableId, _TableProgress] = {}
        for table, plan in base.plans.items():
            finished = {i.split.index: i for i in base.finished.get(table, ())}
            splits = plan.splits(table)
            self._tables[table] = _TableProgress(splits, plan.complete, plan.key_columns, finished)
            self._states.setdefault(table, TableState())

    @classmethod
    def from_splits(
        cls, splits: Iterable[SnapshotSplit], key_columns: Mapping[TableId, Sequence[str]] | None = None
    ) -> SnapshotSplitAssigner:
        """A fresh assigner from complete plans (all splits of each table, in any order)."""
        by_table: dict[TableId, list[SnapshotSplit]] = {}
        for split in splits:
            by_table.setdefault(split.table, []).append(split)
        assigner = cls()
        for table, table_splits in by_table.items():
            columns = (key_columns or {}).get(table, ())
            assigner.add_table(table, sorted(table_splits, key=lambda s: s.index), key_columns=columns)
        return assigner

    # -- planning -------------------------------------------------------------------------

    def add_table(
        self,
        table: TableId,
        splits: Sequence[SnapshotSplit],
        *,
        key_columns: Sequence[str] = (),
        complete: bool = True,
    ) -> None:
        """Register a table's planned splits (``complete=False``: planning continues with
        ``extend_plan``). Also for a table captured after the pipeline started."""
        if table in self._tables:
            raise ValueError(f"{table} is already planned")
        if any(s.table != table for s in splits):
            raise ValueError(f"splits of another table given for {table}")
        TablePlan.from_splits(splits, complete=complete)  # validates contiguity
        self._tables[table] = _TableProgress(list(splits), complete, tuple(key_columns))
        self._states[table] = TableState(Phase.SNAPSHOT)

    def extend_plan(self, table: TableId, splits: Sequence[SnapshotSplit], *, complete: bool) -> None:
        """Append splits planned since the last call (``iter_uneven_splits`` progress)."""
        progress = self._tables[table]
        if progress.complete:
            raise ValueError(f"the plan of {table} is already complete")
        combined = [*progress.splits, *splits]
        TablePlan.from_splits(combined, complete=complete)  # validates contiguity
        progress.splits = combined
        progress.complete = complete

    def resplit(self, split: SnapshotSplit, boundaries: Sequence[Key], order: KeyOrder | None = None) -> None:
        """Cut an unfinished split that is not in flight at ``boundaries`` (e.g. the tail of a
        table that grew during the snapshot); later splits of the table are renumbered."""
        progress = self._tables[split.table]
        position = progress.position_of(split)
        if position in progress.finished or position in progress.handed_out:
            raise ValueError(f"split {split.split_id} is finished or in flight")
        pieces = split_oversized(progress.splits[position], boundaries, order=order)
        tail = _renumber(progress.splits[position + 1 :], position + len(pieces))
        progress.splits = [*progress.splits[:position], *pieces, *tail]

        def moved(i: int) -> int:
            return i + len(pieces) - 1 if i > position else i

        progress.finished = {
            moved(i): replace(info, split=progress.splits[moved(i)]) for i, info in progress.finished.items()
        }
        progress.handed_out = {moved(i) for i in progress.handed_out}

    def reset_tables(self, tables: Iterable[TableId], *, replan: bool = False) -> None:
        """Forget the finished splits of ``tables`` so they are snapshotted again; with
        ``replan`` also drop their plans (the driver then calls ``add_table`` again)."""
        for table in tables:
            self._states[table] = TableState(Phase.SNAPSHOT)
            progress = self._tables.get(table)
            if progress is None:
                continue
            if replan:
                del self._tables[table]
            else:
                progress.finished.clear()
                progress.handed_out.clear()

    def set_state(self, table: TableId, state: TableState) -> None:
        """Record a table's phase (e.g. ``TableState(Phase.FAILED, error)``; failed tables are
        not handed out and do not hold up ``is_finished``)."""
        self._states[table] = state

    # -- waves ----------------------------------------------------------------------------

    def next_wave(self, max_splits: int) -> list[SnapshotSplit]:
        """Up to ``max_splits`` unfinished splits not handed out yet, table by table."""
        wave: list[SnapshotSplit] = []
        for table, progress in self._tables.items():
            if self._states.get(table, TableState()).phase is Phase.FAILED:
                continue
            for position, split in enumerate(progress.splits):
                if len(wave) >= max_splits:
                    return wave
                if position not in progress.finished and position not in progress.handed_out:
                    progress.handed_out.add(position)
                    wave.append(split)
        return wave

    def release(self, splits: Iterable[SnapshotSplit]) -> None:
        """Hand these unfinished splits out again (their read or commit failed)."""
        for split in splits:
            progress = self._tables[split.table]
            progress.handed_out.discard(progress.position_of(split))

    def on_finished(self, infos: Sequence[FinishedSplitInfo]) -> None:
        """Record splits committed to the sink. A split reported twice keeps the later report:
        the sink holds the content of its last commit."""
        for info in infos:
            progress = self._tables.get(info.split.table)
            if progress is None:
                raise ValueError(f"finished split {info.split.split_id} of an unplanned table")
            position = progress.position_of(info.split)
            progress.finished[position] = replace(info, split=progress.splits[position])
            progress.handed_out.discard(position)
            if progress.is_done() and self._states[info.split.table].phase is Phase.SNAPSHOT:
                self._states[info.split.table] = TableState(Phase.BINLOG)

    # -- queries --------------------------------------------------------------------------

    def is_finished(self) -> bool:
        """Whether every table that is not failed has all its splits finished."""
        for table, state in self._states.items():
            if state.phase is Phase.FAILED:
                continue
            progress = self._tables.get(table)
            if progress is None:
                if state.phase is Phase.SNAPSHOT:
                    return False  # awaiting a plan
            elif not progress.is_done():
                return False
        return True

    def tables_awaiting_plan(self) -> list[TableId]:
        """Tables in the snapshot phase without a complete plan."""
        return [
            t
            for t, s in self._states.items()
            if s.phase is Phase.SNAPSHOT and (t not in self._tables or not self._tables[t].complete)
        ]

    def progress(self) -> tuple[int, int]:
        """``(finished, total)`` splits over all planned tables."""
        finished = sum(len(p.finished) for p in self._tables.values())
        return finished, sum(len(p.splits) for p in self._tables.values())

    def table_progress(self, table: TableId) -> tuple[int, int]:
        progress = self._tables.get(table)
        return (0, 0) if progress is None else (len(progress.finished), len(progress.splits))

    def splits(self, table: TableId) -> list[SnapshotSplit]:
        progress = self._tables.get(table)
        return [] if progress is None else list(progress.splits)

    def finished_infos(self, table: TableId) -> list[FinishedSplitInfo]:
        progress = self._tables.get(table)
        return [] if progress is None else [progress.finished[i] for i in sorted(progress.finished)]

    def state(self, table: TableId) -> TableState | None:
        return self._states.get(table)

    def tables(self) -> list[TableId]:
        return list(self._states)

    def to_checkpoint(self, base: Checkpoint | None = None) -> Checkpoint:
        """The assigner's tables, plans and finished splits on top of ``base`` (default: the
        checkpoint it was built from), whose other fields are kept."""
        return replace(
            base or self._base,
            tables=dict(self._states),
            plans={t: p.plan() for t, p in self._tables.items()},
            finished={t: tuple(self.finished_infos(t)) for t, p in self._tables.items() if p.finished},
        )
