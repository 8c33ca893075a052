"""Key order: compare split keys the way the database does (architecture §3 rule 1).

Any comparison of keys done outside the database — which split owns a binlog event's key, range
checks during a watermark merge, validating planned boundaries — must agree with MySQL's order:

* numbers are compared exactly (``int`` / ``Decimal``; never converted to ``float``), bytes by
  their bytes, temporal values naturally;
* strings compare by the column's collation, not by Python's ``<``. ``collation_sort_key`` (from
  ``sparkcdc.core.collation``, re-exported here) maps a collation name to a sort-key function.
  ``*_bin`` and ``binary`` collations are exact; the linguistic ones are a documented
  approximation (see ``sparkcdc.core.collation``).

``KeyOrder`` turns a whole ``Key`` (one value per split-key column) into a tuple that Python
compares in the database's order. ``NULL`` sorts first, as in MySQL.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sparkcdc.core.collation import (
    PadSpaceKey,
    ValueSortKey,
    collation_is_exact,
    collation_sort_key,
    column_sort_keys,
)
from sparkcdc.core.events import Row
from sparkcdc.core.splits import Key, KeyValue

SortKey = tuple[Any, ...]

__all__ = [
    "KeyOrder",
    "PadSpaceKey",
    "SortKey",
    "ValueSortKey",
    "collation_is_exact",
    "collation_sort_key",
    "key_in_range",
    "key_of",
]


# --------------------------------------------------------------------------------------------
# Key order
# --------------------------------------------------------------------------------------------


def _natural(value: Any) -> Any:
    return value


def _null_first(inner: ValueSortKey) -> ValueSortKey:
    def sort_key(value: Any) -> Any:
        return (0,) if value is None else (1, inner(value))

    return sort_key


_NATURAL = _null_first(_natural)


class KeyOrder:
    """The database's order over keys of one split-key column list.

    ``KeyOrder()`` is the natural order (exact for ints, ``Decimal``, bytes, temporal values;
    strings by code point, i.e. a NO PAD binary collation). ``KeyOrder.for_columns`` gives each
    string column its collation's order.
    """

    __slots__ = ("_columns",)

    def __init__(self, column_keys: Sequence[ValueSortKey | None] = ()) -> None:
        self._columns: tuple[ValueSortKey, ...] = tuple(
            _NATURAL if f is None else _null_first(f) for f in column_keys
        )

    @classmethod
    def natural(cls) -> KeyOrder:
        return cls()

    @classmethod
    def for_columns(cls, collations: Sequence[str | None]) -> KeyOrder:
        """One entry per split-key column: its collation, or ``None`` for a non-string column."""
        return cls(column_sort_keys(collations))

    def value_key(self, position: int, value: KeyValue | None) -> Any:
        """Sort key of one column value at ``position`` in the key."""
        column = self._columns[position] if position < len(self._columns) else _NATURAL
        return column(value)

    def sort_key(self, key: Key) -> SortKey:
        """A tuple that Python compares in the database's order (row-tuple comparison)."""
        columns = self._columns
        if not columns:
            return tuple(_NATURAL(v) for v in key)
        return tuple(self.value_key(i, v) for i, v in enumerate(key))

    def compare(self, a: Key, b: Key) -> int:
        """-1, 0 or 1 as ``a`` sorts before, equal to, or after ``b``."""
        ka, kb = self.sort_key(a), self.sort_key(b)
        return -1 if ka < kb else (1 if kb < ka else 0)

    def equal(self, a: Key, b: Key) -> bool:
        return self.sort_key(a) == self.sort_key(b)

    def in_range(self, key: Key, start: Key | None, end: Key | None) -> bool:
        """``start <= key < end`` with ``None`` unbounded."""
        sk = self.sort_key(key)
        if start is not None and sk < self.sort_key(start):
            return False
        return end is None or sk < self.sort_key(end)


_DEFAULT_ORDER = KeyOrder()


def key_in_range(key: Key, start: Key | None, end: Key | None, order: KeyOrder | None = None) -> bool:
    """Whether ``key`` lies in the half-open range ``[start, end)``; ``None`` bounds are open."""
    return (order or _DEFAULT_ORDER).in_range(key, start, end)


def key_of(row: Row, columns: Sequence[str]) -> Key:
    """The split key of a row image."""
    return tuple(row[c] for c in columns)
