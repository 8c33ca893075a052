"""SQL text shared by the JDBC sink's dialects: identifiers and key-range predicates."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sparkcdc.core.splits import Key


def range_predicate(
    columns: Sequence[str], start: Key | None, end: Key | None, quote: Any
) -> tuple[str, list[Any]]:
    """``(k1, k2) >= (%s, %s) AND (k1, k2) < (%s, %s)`` for a half-open key range.

    Row-constructor comparison keeps composite keys in tuple order, the same order the
    source used to cut the split. An unbounded side is left out; both unbounded is ``1=1``.
    """
    cols = ", ".join(quote(c) for c in columns)
    marks = ", ".join(["%s"] * len(columns))
    lhs = f"({cols})" if len(columns) > 1 else cols
    rhs = f"({marks})" if len(columns) > 1 else marks
    clauses: list[str] = []
    params: list[Any] = []
    if start is not None:
        clauses.append(f"{lhs} >= {rhs}")
        params.extend(start)
    if end is not None:
        clauses.append(f"{lhs} < {rhs}")
        params.extend(end)
    return (" AND ".join(clauses) or "1=1"), params


def key_in_list_predicate(columns: Sequence[str], count: int, quote: Any) -> str:
    """``(k1, k2) IN ((%s, %s), …)`` for ``count`` keys."""
    if len(columns) == 1:
        return f"{quote(columns[0])} IN ({', '.join(['%s'] * count)})"
    one = "(" + ", ".join(["%s"] * len(columns)) + ")"
    cols = "(" + ", ".join(quote(c) for c in columns) + ")"
    return f"{cols} IN ({', '.join([one] * count)})"
