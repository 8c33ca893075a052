"""One column-changing statement of one captured table, judged against its definitions.

The schema tracker (schema_changes.py) knows a table's definition before the statement (the one
rows were being decoded with) and reloads it from the source after; from the two and the
statement this module decides what the replica follows:

* added and dropped columns (by name, as before);
* renamed columns (``RENAME COLUMN``, ``CHANGE a b``): key columns keep the key, under their
  new names; a target shaped by ``spec.transforms`` or merged by a route names columns in the
  spec, so a rename there stops the table;
* redefined columns (``MODIFY``, ``CHANGE``) that widen (mysql/widening.py): the new
  definitions go to the target. Anything else stops the table.

The definition reloaded is the source's *now*, not necessarily the one right after the
statement: a stream that lags, or resumed from before the statement, may meet a table changed
again since. So the definition the stream goes on with is the one *as of the statement*: the
reloaded columns the statement added or redefined — only while each is still what the statement
declares (``declared_matches``; else the table stops: "changed again since") — and the previous
definition of every other column (renamed ones under their new names), so a later statement is
judged against the definition right before it. A redefinition is followed only when that previous
definition is known to predate the statement: it does once the tracker followed a statement of the
table (``loaded_before``), or when it differs from the reloaded one. Otherwise — the stream's first
definition, loaded after the statement, as after a crash between the target's change and the
checkpoint past a MODIFY, or a MODIFY made while the pipeline was stopped — whether the change kept
every value cannot be told any more, and the table stops. A rename met with the later definition
(its new name already there) is followed by name; rows decoded since the stream started were
decoded with the later names, which the consumer checks (``Evolution.decoded_late``). A key column
a later statement renamed or dropped is missing from the reloaded definition: the key as of the
statement is the previous one, and the later statement is judged where the stream meets it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from sparkcdc.core.tables import TableId
from sparkcdc.mysql.columns import Column
from sparkcdc.mysql.ddl import TableDdl, column_defaults
from sparkcdc.mysql.errors import SourceError
from sparkcdc.mysql.flavor import detect_flavor
from sparkcdc.mysql.schema import TableSchema, load_table_schema
from sparkcdc.mysql.widening import declared_conflicts, declared_matches, widening_problem
from sparkcdc.mysql.zero_dates import keep_zero_dates
from sparkcdc.sinks.base import AddedColumn

__all__ = ["Evolution", "evolve"]


@dataclass(frozen=True)
class Evolution:
    """A table whose columns changed: its new schema, and what the target follows."""

    table: TableId
    schema: TableSchema
    added: tuple[AddedColumn, ...] = ()
    dropped: tuple[str, ...] = ()
    renamed: tuple[tuple[str, str], ...] = ()
    altered: tuple[Column, ...] = ()  # new definitions of widened columns
    # The rename was met with the table's later definition: rows of the table decoded since
    # the stream started lacked the renamed columns' values (schema_apply.py stops the table).
    decoded_late: bool = False

    def column_summary(self) -> str:
        parts = [f"added {[a.column.name for a in self.added]}", f"dropped {list(self.dropped)}"]
        if self.renamed:
            parts.append("renamed " + ", ".join(f"{a} to {b}" for a, b in self.renamed))
        if self.altered:
            parts.append("widened " + ", ".join(f"{c.name} to {c.column_type}" for c in self.altered))
        return ", ".join(parts)


def _find(schema: TableSchema, name: str) -> Column | None:
    lower = name.lower()
    return next((c for c in schema.columns if c.name.lower() == lower), None)


def _shape(column: Column) -> tuple[Any, ...]:
    """What decides stored values (not the name, position or default)."""
    c = column
    return (c.column_type.lower(), c.nullable, c.charset, c.collation, c.members)


def _altered(entry: TableDdl, old: TableSchema, new: TableSchema, loaded_before: bool) -> list[Column]:
    back = {n.lower(): o for o, n in entry.renamed}
    altered = []
    for name, declared in entry.modified:
        column = _find(new, name)
        if column is None:
            raise SourceError(f"column {name!r} is gone from the source's definition since (changed again)")
        if not declared_matches(column, declared):
            raise SourceError(
                f"column {name!r} is {column.column_type} on the source now, not what the statement "
                f"declares ({declared!r}): it changed again since, so this change cannot be judged"
            )
        before = _find(old, back.get(name.lower(), name)) or _find(old, name)
        if before is None:
            raise SourceError(f"column {name!r} was not known before the statement")
        if _shape(before) == _shape(column):
            if loaded_before:
                continue  # same type: a comment, default or position changed
            raise SourceError(
                "the stream resumed from before this statement with the table's later definition, so "
                "whether the change kept every stored value cannot be told"
            )
        problem = widening_problem(before, column)
        if problem is not None:
            raise SourceError(f"{problem}; stored values may have changed without row events")
        altered.append(column)
    return altered


def _check_added(entry: TableDdl, new: TableSchema) -> None:
    for name, declared in entry.declared_added:
        column = _find(new, name)
        if column is not None and declared_conflicts(column, declared):
            raise SourceError(
                f"added column {name!r} is {column.column_type} on the source now, not what the statement "
                f"declares ({declared!r}): it changed again since, so the rows after it cannot be decoded "
                "as they were written"
            )


def _as_of_statement(entry: TableDdl, old: TableSchema, new: TableSchema) -> TableSchema:
    """The definition right after the statement (module docstring): ``new``'s keys and order, the
    reloaded columns the statement added or redefined, the previous definition of the others;
    columns a later statement added are left out, those it dropped kept."""
    touched = {n.lower() for n in entry.added} | {n.lower() for n, _ in entry.modified}
    back = {n.lower(): o for o, n in entry.renamed}
    freed = {d.lower() for d in entry.dropped} | {o.lower() for o, _ in entry.renamed}
    columns: list[Column] = []
    for column in new.columns:
        key = column.name.lower()
        if key in touched:
            columns.append(column)
            continue
        before = _find(old, back.get(key, column.name)) or _find(old, column.name)
        if before is not None:
            columns.append(replace(before, name=column.name, ordinal=column.ordinal))
    present = {c.name.lower() for c in columns}
    later = [c for c in old.columns if c.name.lower() not in present and c.name.lower() not in freed]
    return replace(new, columns=(*columns, *later))


def evolve(
    conn: Any, entry: TableDdl, old: TableSchema, override: list[str] | None, loaded_before: bool
) -> Evolution:
    """Judge ``entry`` (mysql/ddl.py) of a table defined as ``old`` before it; ``SourceError``
    says why the table must stop instead."""
    # A row key that is not a source key (sinkKeyColumns, or all columns) stays what it was.
    renames = {o.lower(): n for o, n in entry.renamed}
    sink_key = None if old.row_key_unique else tuple(renames.get(k.lower(), k) for k in old.row_key)
    new = replace(load_table_schema(conn, entry.table, override, sink_key), target=old.target)
    if any(c.zero_dates for c in old.columns):
        new = keep_zero_dates(new)  # the sink stores zero dates (zero_dates.py)
    target = old.target
    shaped = target is not None and not target.columns.empty
    if (entry.renamed and (old.scope or shaped)) or (entry.modified and old.scope):
        raise SourceError(
            "its target is merged by a route or shaped by spec.transforms, which would be left naming "
            "other columns, or other types than the other merged tables'"
        )
    late = any(_find(old, o) is None and _find(old, n) is not None for o, n in entry.renamed)

    def mapped(keys: tuple[str, ...]) -> list[str]:
        # Met with the later definition, the key already has its new names.
        return list(keys) if late else [renames.get(k.lower(), k) for k in keys]

    for name in entry.dropped:
        if name in old.row_key:
            raise SourceError(f"key column {name!r} was dropped")
    if any(_find(new, k) is None for k in mapped(old.row_key)):
        # A later statement renamed or dropped a key column (the stream lags): the key as of this
        # statement is the previous one, under this statement's names; that statement is judged
        # where the stream meets it.
        new = replace(
            new,
            row_key=tuple(mapped(old.row_key)),
            chunk_key=tuple(mapped(old.chunk_key)),
            primary_key=tuple(mapped(old.primary_key)),
        )
    elif mapped(old.row_key) != list(new.row_key) or mapped(old.chunk_key) != list(new.chunk_key):
        raise SourceError(f"its key changed from {list(old.row_key)} to {list(new.row_key)}")
    _check_added(entry, new)
    altered = _altered(entry, old, new, loaded_before)
    defaults = column_defaults(conn, entry.table, detect_flavor(conn).is_mariadb) if entry.added else {}
    names = [c.name for c in new.columns]
    lower = {n.lower(): n for n in names}
    added: list[AddedColumn] = []
    for wanted in entry.added:
        found = lower.get(wanted.lower())
        if found is None:
            continue  # dropped again since: nothing to add
        index = names.index(found)
        after = names[index - 1] if index > 0 else None
        added.append(AddedColumn(new.columns[index], defaults.get(found), after))
    schema = _as_of_statement(entry, old, new)
    return Evolution(
        entry.table, schema, tuple(added), tuple(entry.dropped), tuple(entry.renamed), tuple(altered), late
    )
