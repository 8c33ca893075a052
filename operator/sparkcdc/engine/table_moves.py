"""A captured table renamed or dropped at the source, judged while streaming.

``RENAME TABLE a TO b`` (or ``ALTER TABLE a RENAME TO b``) and ``DROP TABLE a`` (``DROP
DATABASE``, ``CREATE OR REPLACE TABLE``) are judged here in the reader's thread
(schema_changes.py), before the next event is decoded, and followed by the consumer at the
statement's place (schema_apply.py, engine/streaming.py):

* a rename to a name ``spec.source.tables`` captures (core/routing.py ``captures``): the table
  goes on streaming under ``b``, without a snapshot: decoded with ``a``'s definition (a rename
  changes no column), written to ``b``'s target (the sink renames ``a``'s target when they
  differ), its checkpoint entries moved to ``b``;
* a rename to a name not captured, and a drop: the table stops being captured; its target is
  kept or dropped as ``spec.sink.onTableDrop`` says, its checkpoint entries are removed.

What stops the table instead, naming the statement: a target shared through a merging route
(its rows carry the source table's name in the scope columns, which a rename would have to
rewrite), ``spec.transforms`` that treat the new name differently, a rename to a name an online
schema-change tool gives the table it swaps out (gh-ost's two-step cut-over: the tool's atomic
swap is followed as an ALTER, online_schema_change.py), and a statement that takes a name
another of its renames frees (``RENAME TABLE a TO tmp, b TO a``) or renames a table twice: a
target renamed half-way by a crash could not tell, from the names it shows, which of the
statement's renames were done.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace

from sparkcdc.core.routing import CaptureRules
from sparkcdc.core.shadow_tables import is_shadow_of
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.ddl import DdlKind, TableDdl, rename_pairs
from sparkcdc.mysql.schema import TableSchema

__all__ = ["TableMove", "judge_moves"]


@dataclass(frozen=True)
class TableMove:
    """One captured table renamed (``new``, with ``schema``: its definition under the new name and
    target) or gone (``new`` None): then ``drop_target`` says whether its target is dropped."""

    table: TableId
    new: TableId | None = None
    schema: TableSchema | None = None
    drop_target: bool = False
    reason: str = ""  # why the table is gone, for the log

    def describe(self) -> str:
        if self.new is not None:
            return f"renamed to {self.new}"
        return (
            f"no longer captured ({self.reason}); its target is {'dropped' if self.drop_target else 'kept'}"
        )


def judge_moves(
    entries: Sequence[TableDdl],
    schemas: Mapping[TableId, TableSchema],
    statement: str,
    default_schema: str,
    swapped: Collection[TableId] = (),
) -> tuple[list[TableMove], dict[TableId, str]]:
    """The renames and drops among ``entries`` (captured tables' effects of one statement, in
    order) as moves, and the tables that stop instead with the reason (module docstring);
    ``swapped``: tables an online schema-change tool's swap concerns, followed as an ALTER."""
    moves: list[TableMove] = []
    refused: dict[TableId, str] = {}
    reused = _reused_names(statement, default_schema, swapped)
    for entry in entries:
        if entry.table in swapped or entry.kind not in (DdlKind.RENAME, DdlKind.DROP):
            continue
        schema = schemas[entry.table]
        rules = schema.target.follow if schema.target is not None else None
        drop_target = rules is not None and rules.on_table_drop == "drop"
        if entry.kind is DdlKind.DROP:
            moves.append(TableMove(entry.table, drop_target=drop_target, reason=entry.reason))
            continue
        assert entry.new_name is not None
        why = _refusal(entry.table, entry.new_name, schema, rules, reused)
        if why is not None:
            refused[entry.table] = why
        elif rules is None or not rules.captures(entry.new_name):
            reason = f"renamed to {entry.new_name}, which spec.source.tables does not capture"
            moves.append(TableMove(entry.table, drop_target=drop_target, reason=reason))
        else:
            target = rules.target(entry.new_name)
            moved = replace(schema, table=entry.new_name, target=target)
            moves.append(TableMove(entry.table, entry.new_name, moved))
    return moves, refused


def _refusal(
    table: TableId, new: TableId, schema: TableSchema, rules: CaptureRules | None, reused: Collection[TableId]
) -> str | None:
    """Why the rename of ``table`` to ``new`` stops the table, or None when it is followed."""
    if table in reused or new in reused:
        return (
            f"it renames {table} to {new} in a statement that renames a table twice or takes a name another "
            "of its renames frees: a target renamed half-way by a crash could not tell which renames were "
            "done; rename in separate statements"
        )
    if new.database == table.database and is_shadow_of(new.table, table.table):
        return (
            f"{table} was renamed to {new}, a name an online schema-change tool gives the table it swaps "
            "out, but not in the tool's atomic swap (gh-ost --cut-over=two-step?)"
        )
    if rules is None:
        return f"{table} was renamed to {new}, and the pipeline's capture rules are not known here"
    if not rules.captures(new):
        return None  # followed as a drop
    old_target, new_target = schema.target, rules.target(new)
    if (old_target is not None and old_target.merged) or new_target.merged:
        return (
            f"the target of {table} or {new} is shared through a merging route (spec.routes): its rows carry "
            "the source table's name in the route's source columns, which a rename would have to rewrite"
        )
    if old_target is not None and old_target.columns != new_target.columns:
        return f"spec.transforms treat {new} differently from {table}, so its target's columns would change"
    return None


def _reused_names(statement: str, default_schema: str, swapped: Collection[TableId]) -> set[TableId]:
    """Tables a ``RENAME TABLE`` statement both renames and renames to (outside the swaps)."""
    pairs = [
        (a, b) for a, b in rename_pairs(statement, default_schema) if a not in swapped and b not in swapped
    ]
    sources = [a for a, _ in pairs]
    targets = [b for _, b in pairs]
    return ({*sources} & {*targets}) | {t for t in sources if sources.count(t) > 1}
