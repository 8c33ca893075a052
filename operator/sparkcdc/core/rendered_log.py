"""Logged row changes as the changelog's own lines: the Go decoder's rendered log mode.

For a table whose every column the Go decoder spells exactly as the changelog sink would
(binlogdec/linelog.go), it answers a batch's changes as the sink's lines themselves, and the sink
writes them as they come: no value is converted or rendered in Python (sinks/changelog.py). Any
other reader — a later batch absorbed into this one aside — reads the records the lines stand
for, parsed back from them once, on that first use (``parse``, made by mysql/binlog/rendered.py:
the canonical values, offsets and row indexes the Python reader's records carry).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from sparkcdc.core.microbatch import ChangelogRecord, HeldRecords
from sparkcdc.core.offsets import BinlogOffset

__all__ = ["RenderedLog"]

LineParser = Callable[[bytes], tuple[ChangelogRecord, ...]]


class RenderedLog(HeldRecords):
    """The lines of one table's records (``text``, each ending in a newline), written under
    ``table`` with the columns ``names``; ``op_counts`` counts the records per operation,
    ``first`` is the offset of the first."""

    def __init__(
        self,
        table: str,
        names: Sequence[str],
        text: bytes,
        op_counts: Mapping[str, int],
        first: BinlogOffset,
        parse: LineParser,
    ) -> None:
        if not text or not any(op_counts.values()):
            raise ValueError("a rendered log needs at least one record")
        self.table, self.names, self.text = table, tuple(names), text
        self.op_counts = {op: n for op, n in op_counts.items() if n}
        self.first, self._parse = first, parse
        self._records: tuple[ChangelogRecord, ...] | None = None

    def records(self) -> tuple[ChangelogRecord, ...]:
        """The records (parsed on the first call)."""
        if self._records is None:
            self._records = self._parse(self.text)
        return self._records

    def first_offset(self) -> BinlogOffset:
        return self.first

    def __len__(self) -> int:
        return sum(self.op_counts.values())

    def same_lines(self, other: RenderedLog) -> bool:
        """Whether ``other``'s lines are of the same table and columns."""
        return (self.table, self.names) == (other.table, other.names)

    def followed_by(self, then: RenderedLog) -> RenderedLog:
        """These lines, then ``then``'s (of the same table and columns)."""
        if not self.same_lines(then):
            raise ValueError(f"the lines of {then.table} cannot follow those of {self.table} as one log")
        ops = {*self.op_counts, *then.op_counts}
        counts = {op: self.op_counts.get(op, 0) + then.op_counts.get(op, 0) for op in ops}
        return RenderedLog(self.table, self.names, self.text + then.text, counts, self.first, self._parse)

    def __repr__(self) -> str:
        return f"RenderedLog({len(self)} records of {self.table}, {len(self.text)} bytes)"
