"""Logged row changes held column by column: the Go decoder's log-mode answer, as the changelog
sink writes it.

The changelog keeps every change as it happened: a record per insert and delete, two per update
(``-U`` with the image before, ``+U`` with the one after). The Go decoder answers a batch's changes
as rows of values, converted to canonical values one column at a time (mysql/binlog/native.py);
a ``ChangelogRecord`` with a dict per image, made only for the sink to render it field by field,
cost more than the conversion. ``LoggedColumns`` is the batch's ``changelog`` sequence that keeps
the columns: the changelog sink renders them column-wise (sinks/changelog_columns.py); any other
reader — a route or transform, another sink, a later batch absorbed into this one — reads it as
the sequence of records it is, made once, on that first use.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import itemgetter
from typing import Any

from sparkcdc.core.microbatch import ChangelogRecord, HeldRecords
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.rendered_log import RenderedLog

__all__ = ["LoggedColumns", "joined"]


class LoggedColumns(HeldRecords):
    """Records given field by field, one entry per record in each of ``ops``, ``files``,
    ``positions``, ``indexes`` and ``times``; the image of record ``r`` is row ``picks[r]`` of
    ``images`` (one column per name, all as long)."""

    def __init__(
        self,
        names: Sequence[str],
        images: Sequence[Sequence[Any]],
        picks: Sequence[int],
        ops: Sequence[str],
        files: Sequence[str],
        positions: Sequence[int],
        indexes: Sequence[int],
        times: Sequence[int],
    ) -> None:
        fields = (picks, ops, files, positions, indexes, times)
        if not names or len(names) != len(images) or len({len(c) for c in images}) > 1:
            raise ValueError("logged columns need one image column per name, all as long")
        if len(set(map(len, fields))) > 1:
            raise ValueError("logged columns need every field of every record")
        self.names = tuple(names)
        self.images, self.picks = images, picks
        self.ops, self.files, self.positions, self.indexes, self.times = ops, files, positions, indexes, times
        self._records: tuple[ChangelogRecord, ...] | None = None

    def data_columns(self) -> list[Sequence[Any]]:
        """Each record's image, column by column (in ``names`` order)."""
        if len(self.picks) == 1:
            return [[column[self.picks[0]]] for column in self.images]
        if not self.picks:
            return [[] for _ in self.images]
        take = itemgetter(*self.picks)
        return [take(column) for column in self.images]

    def records(self) -> tuple[ChangelogRecord, ...]:
        """The records (made on the first call)."""
        if self._records is None:
            rows = [dict(zip(self.names, values, strict=True)) for values in zip(*self.images, strict=True)]
            records, offset = [], BinlogOffset("", 0)
            fields = zip(
                self.picks, self.ops, self.files, self.positions, self.indexes, self.times, strict=True
            )
            for pick, op, file, pos, index, ts_ms in fields:
                if pos != offset.pos or file != offset.file:  # the rows of one event share their offset
                    offset = BinlogOffset(file, pos)
                records.append(ChangelogRecord(op, rows[pick], offset, index, ts_ms))
            self._records = tuple(records)
        return self._records

    def first_offset(self) -> BinlogOffset:
        return BinlogOffset(self.files[0], self.positions[0])

    def __len__(self) -> int:
        return len(self.ops)

    def followed_by(self, then: LoggedColumns) -> LoggedColumns:
        """These records, then ``then``'s (of the same names)."""
        shift = len(self.images[0])
        return LoggedColumns(
            self.names,
            [[*mine, *theirs] for mine, theirs in zip(self.images, then.images, strict=True)],
            [*self.picks, *(p + shift for p in then.picks)],
            [*self.ops, *then.ops],
            [*self.files, *then.files],
            [*self.positions, *then.positions],
            [*self.indexes, *then.indexes],
            [*self.times, *then.times],
        )

    def __repr__(self) -> str:
        return f"LoggedColumns({len(self)} records of {', '.join(self.names)})"


def joined(first: Sequence[ChangelogRecord], then: Sequence[ChangelogRecord]) -> Sequence[ChangelogRecord]:
    """``first``'s records, then ``then``'s: columns (or lines) still when both are columns (or
    lines) of one table definition (a batch absorbed into the one before it), records otherwise."""
    if not first:
        return then
    if isinstance(first, LoggedColumns) and isinstance(then, LoggedColumns) and first.names == then.names:
        return first.followed_by(then)
    if isinstance(first, RenderedLog) and isinstance(then, RenderedLog) and first.same_lines(then):
        return first.followed_by(then)
    return (*first, *then)
