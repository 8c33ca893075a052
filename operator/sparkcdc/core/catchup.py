"""Parallel catch-up of a binlog backlog, the pure part (architecture §4).

A large backlog is cut at transaction boundaries into consecutive ranges ``(start, stop]``;
Spark tasks decode the ranges at once, each reducing its own events to the last image per key
(``collapse_events``, as the single reader's micro-batches do); the driver absorbs the ranges'
results in binlog order — a later range's image or delete of a key replaces an earlier one's —
and applies the sum like one micro-batch. Because every range ends at a commit, the sum equals
the collapse of the whole stretch, so the sink ends exactly where the single reader would.

DDL is never inside a range: the stretch ends at the last commit before the first DDL
statement, and the single reader takes the DDL (it alone tracks schema changes).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from sparkcdc.core.events import ChangeEvent
from sparkcdc.core.merge import BackfillChanges, collapse_events
from sparkcdc.core.microbatch import TableChanges
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.tables import TableId

__all__ = [
    "Boundary",
    "CatchupRange",
    "RangeReducer",
    "absorb",
    "backlog_bytes",
    "cut_ranges",
    "stretch_end",
    "table_changes",
]


@dataclass(frozen=True)
class Boundary:
    """The offset just after a transaction's commit, or after a DDL statement (``ddl``)."""

    offset: BinlogOffset
    ddl: bool = False


@dataclass(frozen=True)
class CatchupRange:
    """Events in ``(start, stop]``; both are transaction boundaries."""

    index: int
    start: BinlogOffset
    stop: BinlogOffset


def _linear(offset: BinlogOffset, files: Sequence[tuple[str, int]]) -> int:
    """A byte count from the first listed file's start: files are in binlog order with sizes."""
    total = 0
    for name, size in files:
        if name == offset.file:
            return total + offset.pos
        total += size
    raise ValueError(f"binlog file {offset.file} is not among the source's binlogs")


def backlog_bytes(start: BinlogOffset, end: BinlogOffset, files: Sequence[tuple[str, int]]) -> int:
    """Bytes of binlog between two offsets (``files``: ``SHOW BINARY LOGS`` rows, in order)."""
    return max(0, _linear(end, files) - _linear(start, files))


def stretch_end(start: BinlogOffset, boundaries: Sequence[Boundary]) -> BinlogOffset:
    """Where a catch-up from ``start`` must end: the last commit before the first DDL (or the
    last commit listed). ``start`` itself when a DDL comes first."""
    end = start
    for boundary in boundaries:
        if boundary.ddl:
            break
        if boundary.offset > end:
            end = boundary.offset
    return end


def cut_ranges(
    start: BinlogOffset,
    boundaries: Sequence[Boundary],
    files: Sequence[tuple[str, int]],
    range_bytes: int,
) -> list[CatchupRange]:
    """Consecutive ranges from ``start`` to ``stretch_end``, each cut at the first commit at or
    past ``range_bytes`` from its start (a single transaction larger than that is one range)."""
    end = stretch_end(start, boundaries)
    ranges: list[CatchupRange] = []
    low = start
    for boundary in boundaries:
        if boundary.offset > end:
            break
        if boundary.offset <= low:
            continue
        if boundary.offset == end or backlog_bytes(low, boundary.offset, files) >= range_bytes:
            ranges.append(CatchupRange(len(ranges), low, boundary.offset))
            low = boundary.offset
    return ranges


@dataclass
class RangeReducer:
    """A range's events, in binlog order, reduced to the last image per key and table.

    Events are collapsed in chunks (``collapse_events``) and each chunk absorbed into the total:
    the chunks are consecutive, so the result equals collapsing all events at once.
    """

    key_columns: Mapping[TableId, Sequence[str]]
    chunk: int = 20_000
    events: int = 0
    _pending: list[ChangeEvent] = field(default_factory=list)
    _total: dict[TableId, BackfillChanges] = field(default_factory=dict)

    def add(self, event: ChangeEvent) -> None:
        self._pending.append(event)
        self.events += 1
        if len(self._pending) >= self.chunk:
            self._flush()

    def _flush(self) -> None:
        by_table: dict[TableId, list[ChangeEvent]] = {}
        for event in self._pending:
            by_table.setdefault(event.table, []).append(event)
        self._pending = []
        for table, events in by_table.items():
            net = collapse_events(events, self.key_columns[table], lambda _key: True)
            absorb(self._total.setdefault(table, BackfillChanges()), net)

    def result(self) -> dict[TableId, BackfillChanges]:
        self._flush()
        return self._total


def absorb(into: BackfillChanges, later: BackfillChanges) -> BackfillChanges:
    """``into`` followed by ``later`` (which happened after it): ``later`` wins per key."""
    for key in later.deletes:
        into.delete(key)
    for key, row in later.upserts.items():
        into.upsert(key, row)
    return into


def table_changes(table: TableId, changes: BackfillChanges, end: BinlogOffset) -> TableChanges:
    """A reduced stretch as one micro-batch of ``table`` for ``Sink.apply_changes`` (no
    changelog: catch-up serves sinks that apply net effects only)."""
    return TableChanges(table, changes.upserts, sorted(changes.deletes, key=repr), (), end)
