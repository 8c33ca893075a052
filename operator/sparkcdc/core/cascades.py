"""Referential actions the binlog does not carry, followed in the sink.

MySQL and MariaDB apply ``ON DELETE CASCADE``, ``ON DELETE SET NULL`` and ``ON UPDATE CASCADE``
inside InnoDB and log only the statement's own row change: the parent's DELETE or UPDATE. A
replica fed from the binlog alone keeps the children forever. The children a parent change
touched are decidable from the parent's before image, though: deleting parent key ``K`` deletes
(or nulls) the child rows whose foreign-key columns equal ``K``, and, level by level, the rows of
grandchildren that referenced those children. So each such parent event becomes ``Cascade``
operations: predicate writes ("rows of T whose columns match …") that the sink runs where the
source ran them, at the parent event's place in the batch.

``ReferentialPlan`` is decided once at start from the captured tables' foreign keys; what it
cannot follow exactly (a parent that is not captured, ``SET DEFAULT``, cycles, a key whose
columns another action nulls or changes only in part) is listed in ``warnings`` and skipped.
``segments`` orders a batch's events and cascades into runs the sink may apply as "cascades,
then the events' net effect" without changing the outcome.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from sparkcdc.core.events import ChangeEvent, Op, Row
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.tables import TableId

__all__ = ["Cascade", "ForeignKey", "Hop", "ReferentialPlan", "segments", "unapplied"]

CASCADE, SET_NULL, SET_DEFAULT = "CASCADE", "SET NULL", "SET DEFAULT"


@dataclass(frozen=True)
class ForeignKey:
    """A foreign key as ``information_schema.REFERENTIAL_CONSTRAINTS`` describes it."""

    name: str
    child: TableId
    child_columns: tuple[str, ...]
    parent: TableId
    parent_columns: tuple[str, ...]
    on_delete: str  # CASCADE, SET NULL, SET DEFAULT, RESTRICT, NO ACTION
    on_update: str

    def describe(self) -> str:
        return (
            f"{self.child}({', '.join(self.child_columns)}) -> "
            f"{self.parent}({', '.join(self.parent_columns)}), constraint {self.name}"
        )


@dataclass(frozen=True)
class Hop:
    """One step of a cascade: rows of ``table`` whose ``columns`` equal ``parent_columns`` of
    the rows of the previous step (of ``parent``)."""

    table: TableId
    columns: tuple[str, ...]
    parent: TableId
    parent_columns: tuple[str, ...]


@dataclass(frozen=True)
class Cascade:
    """A predicate write: delete (or set ``set_columns`` to ``values`` on) the rows of
    ``path[-1].table`` reached from the rows of ``path[0].table`` whose ``path[0].columns``
    equal ``match``."""

    action: Literal["delete", "set"]
    path: tuple[Hop, ...]
    match: tuple[Any, ...]
    set_columns: tuple[str, ...] = ()
    values: tuple[Any, ...] = ()

    @property
    def table(self) -> TableId:
        return self.path[-1].table

    @property
    def tables(self) -> frozenset[TableId]:
        """Every table whose rows the cascade changes or reads."""
        return frozenset(h.table for h in self.path)


@dataclass(frozen=True)
class _Template:
    """A cascade with its values still to be taken from the triggering event's images."""

    trigger: Op  # DELETE or UPDATE of a row of the root table
    action: Literal["delete", "set"]
    path: tuple[Hop, ...]
    root_columns: tuple[str, ...]  # the root row's columns whose before values are the match
    set_columns: tuple[str, ...] = ()
    new_from: tuple[str, ...] | None = None  # root columns giving the new values; None: NULLs

    def instantiate(self, before: Row, after: Row | None) -> Cascade | None:
        match = tuple(before.get(c) for c in self.root_columns)
        if any(v is None for v in match):
            return None  # a NULL foreign key references nothing
        if self.trigger is Op.UPDATE:
            assert after is not None
            if match == tuple(after.get(c) for c in self.root_columns):
                return None  # the referenced columns did not change
        values: tuple[Any, ...] = ()
        if self.action == "set":
            new = self.new_from
            values = (None,) * len(self.set_columns) if new is None else tuple(after.get(c) for c in new)  # type: ignore[union-attr]
        return Cascade(self.action, self.path, match, self.set_columns, values)


class ReferentialPlan:
    """The referential actions among the captured tables that the sink follows.

    ``followable(table)`` says whether a table's rows may be written by predicate (a plain
    target of the same name and columns): the plan skips, with a warning, every action that
    would have to write another table.
    """

    def __init__(
        self,
        foreign_keys: Iterable[ForeignKey],
        captured: Collection[TableId],
        followable: Callable[[TableId], bool] = lambda _t: True,
    ) -> None:
        self._fks = [fk for fk in foreign_keys if fk.child in captured]
        self._captured = set(captured)
        self._followable = followable
        self.warnings: list[str] = []
        self._templates: dict[TableId, list[_Template]] = {}
        self._plan()

    def __bool__(self) -> bool:
        return bool(self._templates)

    @property
    def tables(self) -> set[TableId]:
        """The tables that cascades write (children at any level)."""
        return {h.table for ts in self._templates.values() for t in ts for h in t.path}

    def linked(self, table: TableId) -> set[TableId]:
        """``table`` and every table the followed actions connect it with, at any distance: a
        failed parent's events are dropped, so its children would miss their cascades."""
        groups = [{root, *(h.table for h in t.path)} for root, ts in self._templates.items() for t in ts]
        found, grew = {table}, True
        while grew:
            grew = False
            for group in groups:
                if group & found and not group <= found:
                    found |= group
                    grew = True
        return found

    def cascades(self, event: ChangeEvent) -> list[Cascade]:
        """The predicate writes that ``event`` implies, in the order the sink must run them
        (deepest first: a level's predicate reads the level above, so that goes after)."""
        if event.op is Op.INSERT or event.before is None:
            return []
        out = []
        for template in self._templates.get(event.table, ()):
            if template.trigger is event.op:
                cascade = template.instantiate(event.before, event.after)
                if cascade is not None:
                    out.append(cascade)
        return out

    # -- planning ---------------------------------------------------------------------------

    def _children(self, parent: TableId) -> list[ForeignKey]:
        return [fk for fk in self._fks if fk.parent == parent]

    def _warn(self, fk: ForeignKey, why: str) -> None:
        self.warnings.append(f"foreign key {fk.describe()}: {why}")

    def _plan(self) -> None:
        for fk in self._fks:
            acts = fk.on_delete in (CASCADE, SET_NULL) or fk.on_update in (CASCADE, SET_NULL)
            if fk.parent not in self._captured and acts:
                self._warn(
                    fk,
                    f"the parent {fk.parent} is not captured, so the child rows its deletes and key "
                    "changes remove or change at the source stay unchanged in the sink; "
                    f"capture {fk.parent} too",
                )
            for when, action in (("DELETE", fk.on_delete), ("UPDATE", fk.on_update)):
                if action == SET_DEFAULT:
                    self._warn(fk, f"ON {when} SET DEFAULT is not followed in the sink")
        for root in sorted({fk.parent for fk in self._fks if fk.parent in self._captured}):
            templates: list[_Template] = []
            for fk in self._children(root):
                first = Hop(fk.child, fk.child_columns, root, fk.parent_columns)
                templates += self._on_delete(fk, (first,), fk.parent_columns, {root})
                templates += self._on_update(fk, first, fk.parent_columns, fk.parent_columns, {root})
            if templates:
                self._templates[root] = templates

    def _reachable(self, fk: ForeignKey, path: Sequence[Hop], seen: set[TableId]) -> bool:
        if fk.child in seen:
            self._warn(fk, "the actions form a cycle (e.g. a table referencing itself); not followed")
            return False
        unfollowable = [h.table for h in path if not self._followable(h.table)]
        if unfollowable:
            self._warn(
                fk,
                f"{unfollowable[0]} is written to a routed or transformed target, which predicate "
                "writes cannot address; not followed",
            )
            return False
        return True

    def _on_delete(
        self, fk: ForeignKey, path: tuple[Hop, ...], root_columns: tuple[str, ...], seen: set[TableId]
    ) -> list[_Template]:
        """Templates for ``fk``'s ON DELETE when rows of its parent at ``path[:-1]`` are deleted."""
        if fk.on_delete not in (CASCADE, SET_NULL) or not self._reachable(fk, path, seen):
            return []
        child = fk.child
        if fk.on_delete == SET_NULL:
            self._check_nulled(fk)
            return [_Template(Op.DELETE, "set", path, root_columns, fk.child_columns)]
        deeper: list[_Template] = []
        for grand in self._children(child):
            hop = Hop(grand.child, grand.child_columns, child, grand.parent_columns)
            deeper += self._on_delete(grand, (*path, hop), root_columns, seen | {child})
        return [*deeper, _Template(Op.DELETE, "delete", path, root_columns)]

    def _on_update(
        self,
        fk: ForeignKey,
        hop: Hop,
        root_columns: tuple[str, ...],
        new_from: tuple[str, ...],
        seen: set[TableId],
    ) -> list[_Template]:
        """Templates for ``fk``'s ON UPDATE when the root's ``root_columns`` change; ``hop``
        matches the child's columns holding those values directly."""
        if fk.on_update not in (CASCADE, SET_NULL) or not self._reachable(fk, (hop,), seen):
            return []
        if fk.on_update == SET_NULL:
            self._check_nulled(fk)
            return [_Template(Op.UPDATE, "set", (hop,), root_columns, fk.child_columns)]
        out = [_Template(Op.UPDATE, "set", (hop,), root_columns, hop.columns, new_from)]
        changed = hop.columns  # the child's columns that now change, in root_columns' order
        for grand in self._children(fk.child):
            referenced = set(grand.parent_columns)
            if not referenced & set(changed):
                continue
            if not set(changed) <= referenced:
                self._warn(
                    grand, f"references only some of the columns {list(changed)} that cascade; not followed"
                )
                continue
            mapped = tuple(grand.child_columns[grand.parent_columns.index(c)] for c in changed)
            deeper = Hop(grand.child, mapped, hop.parent, hop.parent_columns)
            out += self._on_update(grand, deeper, root_columns, new_from, seen | {fk.child})
        return out

    def _check_nulled(self, fk: ForeignKey) -> None:
        """Columns that a SET NULL clears may be referenced in turn; that second action is not
        followed (its rows are known only by the values the first one cleared)."""
        for grand in self._children(fk.child):
            if set(grand.parent_columns) & set(fk.child_columns):
                self._warn(grand, f"references columns that {fk.name} sets to NULL; not followed")


def segments(
    events: Sequence[ChangeEvent], marks: Sequence[tuple[int, Cascade]]
) -> list[tuple[list[Cascade], list[ChangeEvent]]]:
    """Split a batch into runs of (cascades, events) whose application "cascades first, then the
    events' net effect" gives what the source did in order.

    ``marks`` places each cascade after the first ``n`` events. A cascade may move ahead of the
    events before it in its run only if none of them touches a table the cascade reads or
    writes; otherwise it opens a new run.
    """
    runs: list[tuple[list[Cascade], list[ChangeEvent]]] = [([], [])]
    touched: set[TableId] = set()
    position = 0
    for at, cascade in sorted(marks, key=lambda m: m[0]):
        for event in events[position:at]:
            runs[-1][1].append(event)
            touched.add(event.table)
        position = max(position, at)
        if touched & cascade.tables:
            runs.append(([], []))
            touched = set()
        runs[-1][0].append(cascade)
    runs[-1][1].extend(events[position:])
    return [r for r in runs if r[0] or r[1]]


def unapplied(
    events: Sequence[ChangeEvent], marks: Sequence[tuple[int, Cascade]], through: BinlogOffset | None
) -> tuple[Sequence[ChangeEvent], list[tuple[int, Cascade]]]:
    """A batch without what the sink already holds: the events up to ``through`` (a batch end the
    sink recorded) and the cascades placed among them. Replaying those is not idempotent: a
    cascade of two hops finds its rows through a table the first application already changed."""
    if through is None:
        return events, list(marks)
    cut = 0
    while cut < len(events) and not events[cut].offset > through:
        cut += 1  # the batch is in stream order: what the sink holds is a prefix
    return events[cut:], [(at - cut, cascade) for at, cascade in marks if at > cut]
