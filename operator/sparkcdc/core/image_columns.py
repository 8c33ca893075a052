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

Where the JDBC sink loads rows with ``LOAD DATA``, the decoder also renders the images as the
text that statement reads (binlogdec/loadtext.go): ``load_text``. The columns are then made only
when something asks for them — the sink when the load falls back to ``INSERT``, any other reader
of the mapping — from a function given instead of the columns; the text, like the columns, is
dropped once the images were read as rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping, Sequence
from typing import Any, NamedTuple

from sparkcdc.core.events import Row
from sparkcdc.core.splits import Key

__all__ = ["ImageColumns", "LoadText", "columns_of"]


Columns = Sequence[Sequence[Any]]


class LoadText(NamedTuple):
    """The images as ``LOAD DATA``'s text (sinks/jdbc/bulk_load.py), one line per image."""

    text: bytes
    rows: int


class ImageColumns(MutableMapping[Key, Row]):
    """Rows given as ``columns`` (one sequence per name, all as long; or a function that makes
    them, called once, when first needed), keyed by the values at ``key_at``; no two rows may have
    the same key. ``load``: the same rows as load text."""

    def __init__(
        self,
        names: Sequence[str],
        columns: Columns | Callable[[], Columns],
        key_at: Sequence[int],
        load: LoadText | None = None,
    ) -> None:
        self.names = tuple(names)
        self._load = load
        self._make = columns if callable(columns) else None
        self._columns: Columns | None = None
        if not callable(columns):
            self._columns = self._checked(columns)
        self._key_at = tuple(key_at)
        self._rows: dict[Key, Row] | None = None
        self._key_set: set[Key] | None = None  # the keys held, once absorb needed them
        self._owned: list[list[Any]] | None = None  # the columns, once absorb copied them

    def _checked(self, columns: Columns) -> Columns:
        if len(self.names) != len(columns) or len({len(c) for c in columns}) > 1:
            raise ValueError("image columns need one column per name, all of the same length")
        if self._load is not None and columns and len(columns[0]) != self._load.rows:
            raise ValueError("image columns hold other rows than their load text")
        return columns

    @property
    def columns(self) -> Columns | None:
        """The images column by column, in ``names`` order; None once they were read as rows."""
        if self._make is not None and self._rows is None:
            make, self._make = self._make, None
            self._columns = self._checked(make())
        return self._columns

    @property
    def load_text(self) -> LoadText | None:
        """The images as load text, while they were not read as rows."""
        return self._load

    def column_keys(self) -> list[Key]:
        """The keys in column order, without making the rows."""
        if self._rows is not None:
            return list(self._rows)
        columns = self.columns or [()] * len(self.names)
        return list(zip(*(columns[i] for i in self._key_at), strict=True))

    def absorb(self, later: Mapping[Key, Row], removed: Iterable[Key] = ()) -> bool:
        """Append ``later``'s images to these, column by column, when ``later`` holds columns of the
        same names and key and neither it nor ``removed`` (keys deleted after these images) has a
        key of these: no image here is replaced. False otherwise, and nothing changed: the caller
        absorbs row by row. Gathered batches of a backlog stay columns so; the columns and the set
        of keys held grow in place, so a run of absorbs costs per row absorbed, not per row held."""
        if not isinstance(later, ImageColumns) or (later.names, later._key_at) != (self.names, self._key_at):
            return False
        mine, theirs = self.columns, later.columns
        if mine is None or theirs is None:
            return False
        held = self._held_keys()
        added = later.column_keys()
        if any(key in held for key in added) or any(key in held for key in removed):
            return False
        held.update(added)
        if self._load is not None and later._load is not None:
            self._load = LoadText(self._load.text + later._load.text, self._load.rows + later._load.rows)
        else:
            self._load = None
        if self._owned is None:  # the given columns may be the caller's: copied once
            self._owned = [list(column) for column in mine]
            self._columns = self._owned
        for column, more in zip(self._owned, theirs, strict=True):
            column.extend(more)
        return True

    def _held_keys(self) -> set[Key]:
        if self._key_set is None:
            self._key_set = set(self.column_keys())
        return self._key_set

    def rows(self) -> dict[Key, Row]:
        """The images as rows by key (made on the first call; the columns are dropped then)."""
        if self._rows is None:
            columns = self.columns or [()] * len(self.names)
            keys = zip(*(columns[i] for i in self._key_at), strict=True)
            images = (dict(zip(self.names, values, strict=True)) for values in zip(*columns, strict=True))
            self._rows = dict(zip(keys, images, strict=True))
            if len(self._rows) != (len(columns[0]) if columns else 0):
                raise ValueError("image columns hold two rows of the same key")
            self._columns, self._load, self._key_set, self._owned = None, None, None, None
        return self._rows

    def __len__(self) -> int:
        if self._rows is None and self._make is not None and self._load is not None:
            return self._load.rows  # without making the columns
        if self._rows is None:
            columns = self.columns
            return len(columns[0]) if columns else 0
        return len(self._rows)

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


def columns_of(upserts: Mapping[Key, Row], names: Sequence[str]) -> Columns:
    """The images column by column, in ``names`` order: as the Go decoder's batches hold them,
    else taken from the rows."""
    if isinstance(upserts, ImageColumns) and upserts.names == tuple(names) and upserts.columns is not None:
        return upserts.columns
    images = list(upserts.values())
    return [[image.get(n) for image in images] for n in names]
