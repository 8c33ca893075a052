"""Referential actions (core/cascades.py) as SQL for the JDBC sink.

A cascade is a predicate write: ``DELETE FROM child WHERE (fk) IN (…)`` or ``UPDATE child SET
fk = … WHERE …``, a grandchild's reached through a subquery on the child (``(gfk) IN (SELECT
key FROM child WHERE (fk) IN (…))``), which is why the deepest level runs first: its subquery
needs the rows the level above is about to delete. Consecutive cascades that differ only in
their match values become one statement.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from sparkcdc.core.cascades import Cascade, Hop
from sparkcdc.core.tables import TableId
from sparkcdc.sinks.jdbc.sql import key_in_list_predicate

__all__ = ["cascade_statements"]

Quote = Callable[[str], str]


def _columns(columns: Sequence[str], quote: Quote) -> str:
    names = ", ".join(quote(c) for c in columns)
    return names if len(columns) == 1 else f"({names})"


def _predicate(path: Sequence[Hop], count: int, names: Mapping[TableId, str], quote: Quote) -> str:
    """Rows of ``path[-1].table`` reached from ``count`` match tuples of ``path[0]``."""
    first = path[0]
    where = key_in_list_predicate(first.columns, count, quote)
    for hop in path[1:]:
        parents = ", ".join(quote(c) for c in hop.parent_columns)
        where = (
            f"{_columns(hop.columns, quote)} IN "
            f"(SELECT {parents} FROM {quote(names[hop.parent])} WHERE {where})"
        )
    return where


def _groups(cascades: Sequence[Cascade], limit: int) -> Iterator[list[Cascade]]:
    group: list[Cascade] = []
    for cascade in cascades:
        if group and (_shape(group[0]) != _shape(cascade) or len(group) >= limit):
            yield group
            group = []
        group.append(cascade)
    if group:
        yield group


def _shape(cascade: Cascade) -> tuple[Any, ...]:
    return (cascade.action, cascade.path, cascade.set_columns, cascade.values)


def cascade_statements(
    cascades: Sequence[Cascade], names: Mapping[TableId, str], quote: Quote, batch: int = 500
) -> list[tuple[str, list[Any]]]:
    """The statements (with parameters) that apply ``cascades`` in order; ``names`` maps each
    table to its target table."""
    out = []
    for group in _groups(cascades, max(1, batch)):
        head = group[0]
        where = _predicate(head.path, len(group), names, quote)
        params = [v for c in group for v in c.match]
        target = quote(names[head.table])
        if head.action == "delete":
            out.append((f"DELETE FROM {target} WHERE {where}", params))
        else:
            sets = ", ".join(f"{quote(c)} = %s" for c in head.set_columns)
            out.append((f"UPDATE {target} SET {sets} WHERE {where}", [*head.values, *params]))
    return out
