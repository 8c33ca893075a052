"""An order-preserving rank of strings under a MySQL collation, for PostgreSQL sinks.

String keys and split ranges. A split must delete exactly the sink's rows whose chunk key lies
in ``[start, end)`` *as MySQL orders them* (rule 3), and PostgreSQL's text order is not MySQL's
(``utf8mb4_general_ci`` puts ``'a' = 'A' < 'B'``, punctuation sorts differently, …). When the
chunk key has a string column the sink therefore selects a superset of candidates in SQL and
keeps the exact set in Python with ``KeyOrder`` (the same order the reader and the merge use),
then deletes those keys. The superset for a leading string column uses an order-preserving
"rank" of strings made of printable ASCII (``StringRank``): each character maps to the rank of
its collation class (so ``a``/``A`` share one under ``*_ci``), and a string's rank is bounded by
the ranks of the longest ASCII prefixes of the split's bounds. Strings with any other character
rank as ``''`` and are always candidates, so the superset holds every key that ``KeyOrder``
places in the range (it is as exact as ``KeyOrder`` is, see sparkcdc.core.collation); an
expression index on the rank (created with the table; absent when ``createTables`` is false,
which only costs a scan) keeps the selection cheap. The character
classes are derived from ``KeyOrder`` and then checked against it on random strings; a
collation that fails the check gets no rank (every row is a candidate). When the key starts with
non-string columns the candidates are bounded by those columns (PostgreSQL orders them as MySQL
does). Keys of numbers, dates, times and bytes use a plain range ``DELETE``.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import random
from typing import Any

from sparkcdc.core.keys import KeyOrder
from sparkcdc.core.splits import Key
from sparkcdc.mysql.schema import TableSchema

__all__ = ["StringRank", "candidates_predicate", "quote_ident", "rank_index_sql"]


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(text: str) -> str:
    """An ASCII string constant with every non-alphanumeric character escaped (``E'\\x25'``), so the
    SQL has no quote, backslash or ``%`` that a driver's placeholder parsing would see."""
    return "E'" + "".join(ch if ch.isalnum() and ch.isascii() else f"\\x{ord(ch):02x}" for ch in text) + "'"


class StringRank:
    """An order-preserving rank of printable-ASCII strings under one MySQL collation.

    ``sql(col)`` is a PostgreSQL expression: the string with each character replaced by its
    class rank (a byte, compared under ``COLLATE "C"``), or ``''`` when the string has any
    character outside the alphabet. For strings over the alphabet, ``x <= y`` in the collation
    (as ``KeyOrder`` orders it) implies ``rank(x) <= rank(y)``.
    """

    def __init__(self, collation: str, alphabet: str, ranks: str) -> None:
        self.collation = collation
        self.alphabet = alphabet
        self.ranks = ranks
        self._table = str.maketrans(alphabet, ranks)

    @classmethod
    def for_collation(cls, collation: str) -> StringRank | None:
        """The rank for ``collation``; None when it cannot be made to agree with ``KeyOrder``."""
        return _rank_for(collation)

    @classmethod
    def derive(cls, collation: str) -> StringRank | None:
        order = KeyOrder.for_columns([collation])

        def key(text: str) -> Any:
            return order.value_key(0, text)

        empty = key("")
        chars = sorted((chr(c) for c in range(0x21, 0x7F) if key(chr(c)) > empty), key=key)
        if len(chars) < 2:
            return None
        low, high = chars[0], chars[-1]
        ranks, rank = [], 0
        for i, ch in enumerate(chars):
            # A new class unless the second character still decides: prev+high sorts after ch+low.
            if i and not key(chars[i - 1] + high) > key(ch + low):
                rank += 1
            ranks.append(chr(0x21 + rank))
        candidate = cls(collation, "".join(chars), "".join(ranks))
        return candidate if candidate._agrees_with(key) else None

    def _agrees_with(self, key: Any, samples: int = 4000) -> bool:
        rng = random.Random(0x5EED)
        words = ["".join(rng.choice(self.alphabet) for _ in range(rng.randint(0, 4))) for _ in range(samples)]
        words += [a + b for a in self.alphabet[::7] for b in self.alphabet[::5]]
        ordered = sorted(words, key=key)
        ranked = [self.rank(w) for w in ordered]
        return all(a <= b for a, b in itertools.pairwise(ranked))

    def rank(self, text: str) -> str:
        return text.translate(self._table)

    def safe_prefix(self, text: str) -> str:
        for i, ch in enumerate(text):
            if ord(ch) not in self._table:
                return text[:i]
        return text

    def sql(self, column_sql: str) -> str:
        src = f'{column_sql} COLLATE "C"'
        alphabet = _literal(self.alphabet)
        return (
            f"(CASE WHEN translate({src}, {alphabet}, '') = '' "
            f"THEN translate({src}, {alphabet}, {_literal(self.ranks)}) ELSE '' END) COLLATE \"C\""
        )

    def bounds(self, start: str | None, end: str | None) -> tuple[str | None, str | None]:
        """(lo, hi): every string over the alphabet in ``[start, end)`` ranks in ``[lo, hi)``."""
        lo = None if start is None else self.rank(self.safe_prefix(str(start)))
        hi = None if end is None else self.rank(self.safe_prefix(str(end)))
        return lo or None, (hi + "\x7f" if hi else None)


@functools.lru_cache(maxsize=64)
def _rank_for(collation: str) -> StringRank | None:
    return StringRank.derive(collation)


def _leading_rank(schema: TableSchema) -> StringRank | None:
    first = schema.chunk_key_columns[0]
    if not first.is_text or not first.collation:
        return None
    return StringRank.for_collation(first.collation)


def rank_index_sql(schema: TableSchema) -> str | None:
    """``CREATE INDEX`` on the rank of a leading string chunk-key column, if it has one."""
    rank = _leading_rank(schema)
    if rank is None:
        return None
    table = schema.sink_name
    expr = rank.sql(quote_ident(schema.chunk_key[0]))
    digest = hashlib.sha1(expr.encode()).hexdigest()[:8]
    name = f"{table[:40]}_sparkcdc_rank_{digest}"
    return f"CREATE INDEX IF NOT EXISTS {quote_ident(name)} ON {quote_ident(table)} (({expr}))"


def candidates_predicate(schema: TableSchema, start: Key | None, end: Key | None) -> tuple[str, list[Any]]:
    """A SQL predicate true for (at least) every row whose chunk key lies in ``[start, end)``."""
    columns = schema.chunk_key_columns
    prefix = 0
    while prefix < len(columns) and not columns[prefix].is_text:
        prefix += 1
    clauses: list[str] = []
    params: list[Any] = []
    if prefix:
        names = ", ".join(quote_ident(c.name) for c in columns[:prefix])
        marks = ", ".join(["%s"] * prefix)
        lhs, rhs = (f"({names})", f"({marks})") if prefix > 1 else (names, marks)
        if start is not None:
            clauses.append(f"{lhs} >= {rhs}")
            params.extend(start[:prefix])
        if end is not None:
            clauses.append(f"{lhs} <= {rhs}")
            params.extend(end[:prefix])
    elif (rank := _leading_rank(schema)) is not None:
        lo, hi = rank.bounds(None if start is None else str(start[0]), None if end is None else str(end[0]))
        expr = rank.sql(quote_ident(columns[0].name))
        bounded = [f"{expr} >= %s"] * (lo is not None) + [f"{expr} < %s"] * (hi is not None)
        if bounded:  # strings outside the alphabet rank as '' and are always candidates
            clauses.append(f"({expr} = '' OR ({' AND '.join(bounded)}))")
            params.extend(v for v in (lo, hi) if v is not None)
    return (" AND ".join(clauses) or "TRUE"), params
