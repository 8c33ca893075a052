"""Binlog micro-batches: filtered events reduced to what a sink applies (architecture §3 rule 5).

A batch collapses to the last image per key — an update that changes the key is a delete of the
old key and an insert of the new one — so applying it is idempotent and a replay from any
earlier committed offset converges. The changelog view keeps every change, in binlog order.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import overload

from sparkcdc.core.events import ChangeEvent, Op, Row
from sparkcdc.core.merge import collapse_events
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.splits import Key
from sparkcdc.core.tables import TableId


@dataclass(frozen=True)
class ChangelogRecord:
    op: str  # "+I", "-U", "+U", "-D"
    data: Row
    offset: BinlogOffset
    index: int
    ts_ms: int


class HeldRecords(Sequence[ChangelogRecord]):
    """A batch's changelog held in another form than records (columns, rendered lines) for the
    sink that writes that form; any other reader gets the records, made on the first use."""

    @abstractmethod
    def records(self) -> tuple[ChangelogRecord, ...]:
        """The records (made on the first call)."""

    @abstractmethod
    def first_offset(self) -> BinlogOffset: ...

    @overload
    def __getitem__(self, index: int) -> ChangelogRecord: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[ChangelogRecord]: ...

    def __getitem__(self, index: int | slice) -> ChangelogRecord | Sequence[ChangelogRecord]:
        return self.records()[index]

    def __iter__(self) -> Iterator[ChangelogRecord]:
        return iter(self.records())


@dataclass(frozen=True)
class TableChanges:
    """One table's part of a micro-batch: its net effect and its changelog."""

    table: TableId
    upserts: Mapping[Key, Row]
    deletes: Sequence[Key]
    changelog: Sequence[ChangelogRecord] = field(default_factory=tuple)
    # The batch's end: the transaction boundary after its last event (sinks record it, e.g. as
    # Delta's idempotent-write version); None when the caller does not know it.
    end: BinlogOffset | None = None

    @property
    def size(self) -> int:
        return len(self.upserts) + len(self.deletes)


def changelog_records(event: ChangeEvent) -> list[ChangelogRecord]:
    def record(op: str, data: Row | None, sub: int) -> ChangelogRecord:
        assert data is not None
        return ChangelogRecord(op, data, event.offset, event.index * 2 + sub, event.ts_ms)

    if event.op is Op.INSERT:
        return [record("+I", event.after, 0)]
    if event.op is Op.DELETE:
        return [record("-D", event.before, 0)]
    return [record("-U", event.before, 0), record("+U", event.after, 1)]


def build_batch(
    events: Iterable[ChangeEvent],
    key_columns: Mapping[TableId, Sequence[str]],
    end: BinlogOffset | None = None,
) -> list[TableChanges]:
    """Group a batch's events by table and reduce each table's to its net effect."""
    by_table: dict[TableId, list[ChangeEvent]] = {}
    for event in events:
        by_table.setdefault(event.table, []).append(event)
    batch = []
    for table, table_events in by_table.items():
        net = collapse_events(table_events, key_columns[table], lambda _key: True)
        records = [r for e in table_events for r in changelog_records(e)]
        batch.append(
            TableChanges(table, dict(net.upserts), sorted(net.deletes, key=repr), tuple(records), end)
        )
    return batch
