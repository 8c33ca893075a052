"""The column order right after a statement, as its row events carry their values.

Without ``binlog_row_metadata=FULL`` a row image is decoded by position, so the definition a
stream goes on with after a statement must list the columns in the order the statement left:
the previous order, dropped columns removed, renamed ones in place, added ones where ``FIRST``
or ``AFTER`` put them (else last), redefined ones moved the same way. The definition reloaded
from the source gives the columns but, in a replay, the order of a later time (column_changes.py
builds on it); this puts them back in the statement's order.
"""

from __future__ import annotations

import re
from dataclasses import replace

from sparkcdc.engine.column_changes import Evolution
from sparkcdc.mysql.ddl import TableDdl
from sparkcdc.mysql.ddl_alter import unquote
from sparkcdc.mysql.schema import TableSchema

__all__ = ["in_statement_order"]

_PLACE = re.compile(r"\s(FIRST|AFTER\s+(`(?:[^`]|``)+`|[\w$]+))\s*$", re.IGNORECASE)


def _place(order: list[str], name: str, declared: str) -> None:
    """Move ``name`` (lower case, already in ``order`` or not) where ``declared`` puts it."""
    found = _PLACE.search(declared)
    if found is None:
        if name not in order:
            order.append(name)
        return
    if name in order:
        order.remove(name)
    if found.group(1).upper() == "FIRST":
        order.insert(0, name)
        return
    after = unquote(found.group(2)).lower()
    order.insert(order.index(after) + 1 if after in order else len(order), name)


def in_statement_order(entry: TableDdl, old: TableSchema, evolution: Evolution) -> Evolution:
    """``evolution`` with its columns in the order ``entry`` left them in, and each added column
    placed after its neighbour in that order."""
    by_name = {c.name.lower(): c for c in evolution.schema.columns}
    renames = {o.lower(): n.lower() for o, n in entry.renamed}
    dropped = {d.lower() for d in entry.dropped}
    order = [
        renames.get(c.name.lower(), c.name.lower()) for c in old.columns if c.name.lower() not in dropped
    ]
    order = [n for n in order if n in by_name]
    declared = dict((n.lower(), d) for n, d in entry.declared_added)
    for name in entry.added:
        if name.lower() in by_name:
            _place(order, name.lower(), declared.get(name.lower(), ""))
    for name, definition in entry.modified:
        if name.lower() in order and _PLACE.search(definition):
            _place(order, name.lower(), definition)
    order += [n for n in by_name if n not in order]
    columns = tuple(replace(by_name[n], ordinal=i + 1) for i, n in enumerate(order))
    added = []
    for add in evolution.added:
        index = order.index(add.column.name.lower())
        added.append(replace(add, after=by_name[order[index - 1]].name if index > 0 else None))
    schema = replace(evolution.schema, columns=columns)
    return replace(evolution, schema=schema, added=tuple(added))
