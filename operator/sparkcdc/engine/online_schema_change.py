"""The swap of an online schema-change tool (gh-ost, pt-online-schema-change), followed as an ALTER.

Both tools change a table ``x`` without ``ALTER TABLE x``: they create a copy (``_x_gho``,
``_x_new``: core/shadow_tables.py), run the user's ALTER on the copy, fill it from ``x`` while
mirroring every write of ``x`` into it (gh-ost from the binlog, pt-osc through triggers), and
end with one atomic ``RENAME TABLE x TO <old>, <copy> TO x``. For the replica:

* the copy's rows are ``x``'s rows again: ``x``'s own row events carry every write, so the sink
  holds them already. The copies are never captured (engine/discovery.py leaves them out), and
  their row events are not decoded (the reader decodes captured tables only);
* the swap is where ``x``'s definition changes: rows before it are ``x``'s previous definition,
  rows after it the copy's. It is followed like an ALTER at that place (schema_changes.py,
  schema_apply.py), with the changes told from ``x``'s definitions before and after the swap.

Why the definitions and not the ALTER run on the copy: that statement is often far behind the
swap (the copy may take hours), and the checkpoint moves past it with other commits and
heartbeats. A pipeline killed during the copy resumes after it, so anything only remembered from
it would be lost; keeping it would need the checkpoint to carry it. The definitions do not depend
on where the stream resumed:

* *before* is the definition rows of ``x`` were decoded with — when it is known to have been
  loaded before the swap (``loaded_at``: the pipeline started or resumed during the copy, or ran
  throughout); else, when the stream resumed from before the swap after it happened (a kill
  right after the cut-over), the old table the swap renamed ``x`` to, while it still exists
  (gh-ost keeps ``_x_del`` unless ``--ok-to-drop-table``; pt-osc drops ``_x_old`` right away unless
  ``--no-drop-old-table``): it is ``x`` before the swap, untouched since. With neither, ``x`` stops;
* *after* is ``x``'s definition reloaded at the swap.

From the two: columns only after are added (with the source's default, as the tool's copy filled
them), columns only before dropped, columns in both with another type redefined (followed only
where mysql/widening.py finds it widening, by column_changes.py). A rename is indistinguishable
from a drop and an add — following it that way would lose the column's values — so a swap that
both adds and drops columns stops ``x``. Met with the old table's definition, rows of ``x`` before
the swap were decoded with the later one, by the column names of each row event: that is exact
for columns added or dropped since, and for a redefinition that leaves what the decoder takes from
the definition (signedness, ENUM/SET labels, charset) as it was — a widened integer of the same
signedness, a longer VARCHAR, a wider DECIMAL, ``NULL`` allowed; any other redefinition stops ``x``.

A stream that lags may reload ``x`` after a later statement changed it again: that change is then
followed at the swap (the target gets it early; a later ADD or DROP is skipped where the target
already shows it), not at its own place.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from sparkcdc.core.shadow_tables import Role, is_shadow_of
from sparkcdc.core.tables import TableId
from sparkcdc.engine.column_changes import Evolution, evolve
from sparkcdc.mysql.columns import Column
from sparkcdc.mysql.ddl import DdlKind, TableDdl, rename_pairs
from sparkcdc.mysql.errors import SourceError
from sparkcdc.mysql.schema import TableSchema, load_table_schema

__all__ = ["follow_swap", "swaps"]


def swaps(statement: str, default_schema: str, captured: Iterable[TableId]) -> dict[TableId, TableId]:
    """Each captured table ``statement`` swaps the way the tools do, with the old table it was
    renamed to: ``RENAME TABLE x TO <old of x>, <copy of x> TO x`` (other pairs may come along)."""
    pairs = rename_pairs(statement, default_schema)
    out: dict[TableId, TableId] = {}
    for table in set(captured):
        away = [to for source, to in pairs if source == table]
        into = [source for source, to in pairs if to == table]
        if len(away) != 1 or len(into) != 1:
            continue
        old, copy = away[0], into[0]
        if old.database != table.database or copy.database != table.database:
            continue
        name = table.table
        if is_shadow_of(old.table, name, Role.OLD) and is_shadow_of(copy.table, name, Role.GHOST):
            out[table] = old
    return out


def _shape(column: Column) -> tuple[Any, ...]:
    c = column
    return (c.column_type.lower(), c.nullable, c.charset, c.collation, c.members)


def _derived(table: TableId, before: TableSchema, after: TableSchema) -> TableDdl:
    """The swap as the ALTER it amounts to (module docstring)."""
    old = {c.name.lower(): c for c in before.columns}
    new = {c.name.lower(): c for c in after.columns}
    added = tuple(c.name for c in after.columns if c.name.lower() not in old)
    dropped = tuple(c.name for c in before.columns if c.name.lower() not in new)
    if added and dropped:
        raise SourceError(
            f"the online schema change swapped in a table that adds {list(added)} and drops {list(dropped)}: "
            "a renamed column looks the same, and following it as a drop and an add would lose its values"
        )
    modified = []
    for column in after.columns:
        previous = old.get(column.name.lower())
        if previous is not None and _shape(previous) != _shape(column):
            null = "NULL" if column.nullable else "NOT NULL"
            modified.append((column.name, f"{column.column_type} {null}"))
    kind = DdlKind.EVOLVE if added or dropped or modified else DdlKind.IGNORE
    return TableDdl(table, kind, added, dropped, modified=tuple(modified))


def _decoded_as_written(entry: TableDdl, before: TableSchema, after: TableSchema) -> None:
    """Rows before the swap were decoded with the later definition (the stream resumed from
    before it): a value reads the same only where the decoder's borrowed attributes — signedness,
    ENUM/SET labels, charset (mysql/binlog/reader.py ``complete_column``; type, length and
    precision come from the binlog's table map) — did not change."""
    old = {c.name.lower(): c for c in before.columns}
    for name, _ in entry.modified:
        previous, column = old[name.lower()], next(c for c in after.columns if c.name == name)
        if (previous.unsigned, previous.members, previous.charset) != (
            column.unsigned,
            column.members,
            column.charset,
        ):
            raise SourceError(
                "the stream resumed from before the online schema change's swap with the table's later "
                f"definition, and the swap changed how {name!r} is decoded: rows before it were decoded "
                "with the later definition"
            )


def _old_table(conn: Any, old: TableId, override: list[str] | None, known: TableSchema) -> TableSchema:
    try:
        loaded = load_table_schema(conn, old, override)
    except SourceError as err:
        raise SourceError(
            f"the stream resumed from before the online schema change's swap with the table's later "
            f"definition, and the old table {old} is gone ({err}), so what the swap changed cannot be told"
        ) from err
    return replace(known, columns=loaded.columns)


def follow_swap(
    conn: Any, table: TableId, old: TableId, schema: TableSchema, override: list[str] | None, known: bool
) -> Evolution:
    """The swap of ``table`` (renamed to ``old``) judged; ``schema``: the definition the stream
    decodes it with, ``known``: loaded before the swap. ``SourceError`` says why it stops instead."""
    before = schema if known else _old_table(conn, old, override, schema)
    after = load_table_schema(conn, table, override)
    entry = _derived(table, before, after)
    if not known:
        _decoded_as_written(entry, before, after)
    if entry.kind is DdlKind.IGNORE:
        return Evolution(table, schema)  # a rebuild (``ENGINE=InnoDB``) or index change: rows unchanged
    # Redefinitions are judged there (widening or a stop), against ``before``.
    return evolve(conn, entry, before, override, loaded_before=True)
