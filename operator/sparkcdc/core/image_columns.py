"""Last row images held column by column: the Go decoder's answer, as sinks that write columns
take it.

A reduced batch from the Go decoder arrives as rows of values, is converted to canonical values
one column at a time (mysql/binlog/native.py) and is written by the JDBC sink one column at a
time (sinks/jdbc/arrow_sql.py). Building a dict per row in between, only for the sink to take
the rows apart into columns again, cost about as much as the conversion itself. ``ImageColumns``
is the ``upserts`` mapping of such a batch (key → row, as ``BackfillChanges`` holds it) that keeps
the columns: a sink asks for ``columns`` and writes them; any other reader — a route or transform
rewriting rows, a sink that writes rows, a later batch absorbed into this one — reads or changes
it as the mapping it is, and the rows are made once, on that first use, after which the columns
are gone (they would no longer say what the mapping holds).
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping, Sequence
from typing import Any

from sparkcdc.core.events import Row
from sparkcdc.core.splits import Key

__all__ = ["ImageColumns"]


class ImageColumns(MutableMapping[Key, Row]):
    """Rows given as ``columns`` (one sequence per name, all as long), keyed by the values at
    ``key_at``; no two rows may have the same key."""

    def __init__(self, names: Sequence[str], columns: Sequence[Sequence[Any]], key_at: Sequence[int]) -> None:
        if len(names) != len(columns) or len({len(c) for c in columns}) > 1:
            raise ValueError("image columns need one column per name, all of the same length")
        self.names = tuple(names)
        self._columns: Sequence[Sequence[Any]] | None = columns
        self._key_at = tuple(key_at)
        self._rows: dict[Key, Row] | None = None

    @property
    def columns(self) -> Sequence[Sequence[Any]] | None:
        """The images column by column, in ``names`` order; None once they were read as rows."""
        return self._columns

    def rows(self) -> dict[Key, Row]:
        """The images as rows by key (made on the first call; the columns are dropped then)."""
        if self._rows is None:
            columns = self._columns or [()] * len(self.names)
            keys = zip(*(columns[i] for i in self._key_at), strict=True)
            images = (dict(zip(self.names, values, strict=True)) for values in zip(*columns, strict=True))
            self._rows = dict(zip(keys, images, strict=True))
            if len(self._rows) != (len(columns[0]) if columns else 0):
                raise ValueError("image columns hold two rows of the same key")
            self._columns = None
        return self._rows

    def __len__(self) -> int:
        if self._columns is not None:
            return len(self._columns[0]) if self._columns else 0
        return len(self.rows())

    def __getitem__(self, key: Key) -> Row:
        return self.rows()[key]

    def __setitem__(self, key: Key, image: Row) -> None:
        self.rows()[key] = image

    def __delitem__(self, key: Key) -> None:
        del self.rows()[key]

    def __iter__(self) -> Iterator[Key]:
        return iter(self.rows())

    def __repr__(self) -> str:
        return f"ImageColumns({len(self)} rows of {', '.join(self.names)})"
