"""Binlog phase filter (architecture §3 rule 4): emit each change exactly once after the snapshot.

The binlog phase starts at the minimum high watermark of all finished splits (``start_offset``).
A split's sink content is exact as of its high watermark, so an event on key ``k`` must be
emitted only when its offset is after the high watermark of the split that owns ``k``. Once the
stream has passed a table's maximum high watermark every later event of that table qualifies:
the table is in the pure binlog phase and the per-split lookup is skipped.

Tables without any finished split are emitted only when they were named ``streaming`` at
construction — tables captured without a snapshot (startup mode ``latest``/``earliest``/
``specific-offset``/``timestamp``, or a table added to a running pipeline in such a mode). Any
other table's events are dropped: they are not captured, or their snapshot has not finished.

An update whose key changes may move a row between splits with different high watermarks;
``filter_event`` then emits only the half that the sink does not hold yet (a delete of the old
key and/or an insert of the new one).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from sparkcdc.core.events import ChangeEvent, Op
from sparkcdc.core.keys import KeyOrder, SortKey, key_of
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.splits import FinishedSplitInfo, Key
from sparkcdc.core.tables import TableId

__all__ = ["BinlogSplitFilter", "start_offset"]


def start_offset(finished_infos: Iterable[FinishedSplitInfo]) -> BinlogOffset:
    """Where the binlog phase starts: the minimum high watermark of all finished splits."""
    watermarks = [info.high_watermark for info in finished_infos]
    if not watermarks:
        raise ValueError("no finished splits: the binlog start offset is undefined")
    return min(watermarks, key=BinlogOffset.sort_key)


@dataclass(frozen=True)
class _TableSplits:
    """One table's finished splits, sorted by start, with their high watermarks."""

    key_columns: tuple[str, ...]
    order: KeyOrder
    starts: list[SortKey]  # sort keys of the starts of splits 1..n-1 (split 0 starts at None)
    watermarks: list[BinlogOffset]
    max_watermark: BinlogOffset

    def watermark_of(self, key: Key) -> BinlogOffset:
        position = bisect.bisect_right(self.starts, self.order.sort_key(key))
        return self.watermarks[position]


def _build_table(
    table: TableId, infos: Sequence[FinishedSplitInfo], key_columns: Sequence[str], order: KeyOrder
) -> _TableSplits:
    """Sort a table's split infos and check they cover its whole key space exactly once."""

    def start_key(info: FinishedSplitInfo) -> tuple[int, SortKey]:
        start = info.split.start
        return (0, ()) if start is None else (1, order.sort_key(start))

    ordered = sorted(infos, key=start_key)
    previous_end: Key | None = None
    for position, info in enumerate(ordered):
        split = info.split
        contiguous = (
            (split.start is None)
            if position == 0
            else (
                split.start is not None
                and previous_end is not None
                and order.equal(split.start, previous_end)
            )
        )
        if not contiguous or (split.end is None) != (position == len(ordered) - 1):
            raise ValueError(
                f"finished splits of {table} do not cover its key space exactly once "
                f"(at split {split.split_id}: [{split.start!r}, {split.end!r}))"
            )
        previous_end = split.end
    watermarks = [info.high_watermark for info in ordered]
    return _TableSplits(
        key_columns=tuple(key_columns),
        order=order,
        starts=[order.sort_key(info.split.start) for info in ordered[1:]],  # type: ignore[arg-type]
        watermarks=watermarks,
        max_watermark=max(watermarks, key=BinlogOffset.sort_key),
    )


class BinlogSplitFilter:
    """Decides which binlog events the binlog phase emits (Flink CDC's ``shouldEmit``).

    ``finished_infos`` maps each snapshotted table to all its finished splits (they must cover
    the table's key space: one split starting at ``None``, one ending at ``None``, contiguous).
    ``key_columns`` gives each such table's split-key columns, ``orders`` its ``KeyOrder``
    (natural order when missing). ``streaming`` names tables captured without a snapshot.
    """

    def __init__(
        self,
        finished_infos: Mapping[TableId, Sequence[FinishedSplitInfo]],
        key_columns: Mapping[TableId, Sequence[str]],
        orders: Mapping[TableId, KeyOrder] | None = None,
        streaming: Iterable[TableId] = (),
    ) -> None:
        orders = orders or {}
        self._tables: dict[TableId, _TableSplits] = {}
        for table, infos in finished_infos.items():
            if not infos:
                continue
            if table not in key_columns:
                raise ValueError(f"no split-key columns given for {table}")
            order = orders.get(table, KeyOrder())
            self._tables[table] = _build_table(table, infos, key_columns[table], order)
        self._streaming = frozenset(streaming)
        self._pure: set[TableId] = set()

    # -- queries --------------------------------------------------------------------------

    def start_offset(self) -> BinlogOffset:
        """The minimum high watermark over all tables (where the binlog reader starts)."""
        if not self._tables:
            raise ValueError("no finished splits: the binlog start offset is undefined")
        return min((w for t in self._tables.values() for w in t.watermarks), key=BinlogOffset.sort_key)

    def max_watermark(self, table: TableId) -> BinlogOffset | None:
        splits = self._tables.get(table)
        return None if splits is None else splits.max_watermark

    def pure_binlog_tables(self) -> set[TableId]:
        """Snapshotted tables whose every split's high watermark the stream has passed."""
        return set(self._pure)

    def is_captured(self, table: TableId) -> bool:
        return table in self._tables or table in self._streaming

    # -- decisions ------------------------------------------------------------------------

    def advance_to(self, offset: BinlogOffset) -> None:
        """Record that every event ending at or before ``offset`` has been processed (e.g. on a
        heartbeat or a rotate event); tables whose maximum watermark is ``<= offset`` turn pure."""
        for table, splits in self._tables.items():
            if splits.max_watermark <= offset:
                self._pure.add(table)

    def _key_after_watermark(self, splits: _TableSplits, key: Key, offset: BinlogOffset) -> bool:
        return offset > splits.watermark_of(key)

    def _pure_or_none(self, event: ChangeEvent) -> bool | None:
        """True when the event is emitted regardless of its key, False when it is dropped,
        None when the per-split check decides."""
        table = event.table
        splits = self._tables.get(table)
        if splits is None:
            return table in self._streaming
        if table in self._pure:
            return True
        if event.offset > splits.max_watermark:
            self._pure.add(table)
            return True
        return None

    def should_emit(self, event: ChangeEvent) -> bool:
        """Whether the event is after the high watermark of the split owning its key (the after
        image's key for updates). Use ``filter_event`` to handle key-changing updates exactly."""
        decided = self._pure_or_none(event)
        if decided is not None:
            return decided
        splits = self._tables[event.table]
        return self._key_after_watermark(splits, key_of(event.image, splits.key_columns), event.offset)

    def filter_event(self, event: ChangeEvent) -> list[ChangeEvent]:
        """What to emit for ``event``: ``[event]``, ``[]``, or for a key-changing update whose
        old and new keys' splits disagree, just its delete half or just its insert half (both
        keep the event's offset, index and timestamp)."""
        decided = self._pure_or_none(event)
        if decided is not None:
            return [event] if decided else []
        splits = self._tables[event.table]
        if event.op is not Op.UPDATE:
            emit = self._key_after_watermark(splits, key_of(event.image, splits.key_columns), event.offset)
            return [event] if emit else []
        assert event.before is not None and event.after is not None
        emit_old = self._key_after_watermark(splits, key_of(event.before, splits.key_columns), event.offset)
        emit_new = self._key_after_watermark(splits, key_of(event.after, splits.key_columns), event.offset)
        if emit_old and emit_new:
            return [event]
        if emit_old:
            return [replace(event, op=Op.DELETE, after=None)]
        if emit_new:
            return [replace(event, op=Op.INSERT, before=None)]
        return []
