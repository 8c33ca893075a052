"""Which sink table each captured table goes to, and refusing two tables in one by accident.

A sink table is named by ``spec.routes`` (first match wins) or else by the sink's table name
template (``{db}``, ``{table}``). Two source tables may share a sink table only when every one of
them arrives through a *merging* route — one whose ``sourceTables`` is a pattern. Such a target
carries the source database and table as extra key columns, so equal keys of different shards
never collide and one shard's snapshot split rewrites only that shard's rows. The merging is
decided by the route, not by how many tables it matches today: a shard that appears later must
not change the target's key.

Anything else resolving to one name — ``tenant_a.orders`` and ``tenant_b.orders`` under
``{table}`` — would let each table's range rewrites delete the other's rows, so it is refused
before anything is read or written (:func:`find_collisions`), naming both tables and the fix.
Names are compared case-insensitively: MySQL with ``lower_case_table_names`` and many file
systems fold case, and a refusal costs less than a silent merge.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from sparkcdc.core.shadow_tables import shadow_candidates
from sparkcdc.core.tables import TableId, is_table_pattern, select_tables
from sparkcdc.core.transforms import ColumnRules, Transform, rules_for

TEMPLATE_FIELDS = ("db", "table")
DEFAULT_SOURCE_COLUMNS = ("_source_db", "_source_table")


def check_template(template: str) -> None:
    """Raise ``ValueError`` unless ``template`` uses only ``{db}`` and ``{table}``."""
    try:
        fields = [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]
    except ValueError as err:
        raise ValueError(
            f"{template!r} is not a valid name template ({err}); use {{db}} and {{table}}"
        ) from None
    for name in fields:
        if name not in TEMPLATE_FIELDS:
            raise ValueError(
                f"{template!r} has the placeholder {{{name}}}; only {{db}} and {{table}} are known"
            )


def render_template(template: str, table: TableId) -> str:
    return template.format(db=table.database, table=table.table)


@dataclass(frozen=True)
class Route:
    """``spec.routes[i]``: the tables matching ``source_tables`` go to ``sink_table``."""

    source_tables: str
    sink_table: str
    source_columns: tuple[str, str] = DEFAULT_SOURCE_COLUMNS

    @property
    def merges(self) -> bool:
        """A pattern route may send several tables to one target, so its target carries the
        source columns even while it matches one table."""
        return is_table_pattern(self.source_tables)

    def matches(self, table: TableId) -> bool:
        if self.merges:
            return re.fullmatch(self.source_tables, str(table)) is not None
        return str(table) == self.source_tables


@dataclass(frozen=True)
class SinkTarget:
    """Where one source table's rows go and how: the sink table's name; for a merging route,
    the constant columns (name, value) that tell this table's rows from the other shards'; the
    column rules of ``spec.transforms``; the metadata columns and soft deletes of the sink."""

    name: str
    scope: tuple[tuple[str, str], ...] = ()
    route: int | None = None  # index in spec.routes, None for the template
    columns: ColumnRules = field(default_factory=ColumnRules)
    metadata: tuple[str, ...] = ()  # core/row_metadata.py METADATA_FIELDS
    soft_delete: bool = False
    # How a rename or drop of the table is followed while streaming (engine/schema_changes.py):
    # set by discovery; None where the target was resolved without the spec at hand (the table
    # then stops at a rename, as before renames were followed). Not part of the target's identity.
    follow: CaptureRules | None = field(default=None, compare=False, repr=False)

    @property
    def plain(self) -> bool:
        """Rows go to the target as the source has them."""
        return not self.scope and self.columns.empty and not self.metadata and not self.soft_delete

    @property
    def merged(self) -> bool:
        return bool(self.scope)


@dataclass(frozen=True)
class Routing:
    """The naming rules of one pipeline's sink, built once from the spec."""

    table_name: str
    routes: tuple[Route, ...] = ()
    transforms: tuple[Transform, ...] = ()
    metadata: tuple[str, ...] = ()
    soft_delete: bool = False

    def target(self, table: TableId) -> SinkTarget:
        name, index = render_template(self.table_name, table), None
        scope: tuple[tuple[str, str], ...] = ()
        for position, route in enumerate(self.routes):
            if route.matches(table):
                name, index = render_template(route.sink_table, table), position
                if route.merges:
                    db_column, table_column = route.source_columns
                    scope = ((db_column, table.database), (table_column, table.table))
                break
        rules = rules_for(self.transforms, table)
        return SinkTarget(name, scope, index, rules, self.metadata, self.soft_delete)

    def targets(self, tables: Iterable[TableId]) -> dict[TableId, SinkTarget]:
        return {table: self.target(table) for table in tables}


def captures(
    tables: Sequence[str], exclude: Sequence[str], table: TableId, available: Iterable[TableId] | None = None
) -> bool:
    """Whether ``source.tables`` (``tables``) and ``excludeTables`` (``exclude``) capture ``table``:
    named exactly, or matched and not an online schema-change tool's table (core/shadow_tables.py)
    — one beside its base among ``available``; without ``available`` (a name that appears while
    streaming) any name that reads as such a table counts as one."""
    if not select_tables(tables, [table]) or excluded(table, exclude):
        return False
    if any(not is_table_pattern(e) and e == str(table) for e in tables):
        return True
    candidates = shadow_candidates(table.table)
    if available is None or not candidates:
        return not candidates
    beside = [t.table for t in available if t.database == table.database and t != table]
    return not any(c.names(other) for c in candidates for other in beside)


@dataclass(frozen=True)
class CaptureRules:
    """What a pipeline captures by name, where each table goes, and what a source ``DROP TABLE``
    does to its target (``spec.sink.onTableDrop``): what the stream needs to follow a table's
    rename (is the new name captured, and where does it go) or drop."""

    tables: tuple[str, ...]
    exclude: tuple[str, ...]
    routing: Routing
    on_table_drop: str = "keep"  # or "drop"

    def captures(self, table: TableId) -> bool:
        return captures(self.tables, self.exclude, table)

    def names(self, table: TableId) -> bool:
        """Whether an entry names ``table`` exactly (not by a pattern): discovery then wants it to
        exist, so a start without it fails unless the table is marked failed."""
        return any(not is_table_pattern(e) and e == str(table) for e in self.tables)

    def target(self, table: TableId) -> SinkTarget:
        return replace(self.routing.target(table), follow=self)


@dataclass(frozen=True)
class Collision:
    """Source tables that would share ``target`` without a merging route."""

    target: str
    tables: tuple[TableId, ...]

    def message(self) -> str:
        names = " and ".join(str(t) for t in self.tables[:2])
        more = f" (and {len(self.tables) - 2} more)" if len(self.tables) > 2 else ""
        return (
            f"source tables {names}{more} would both be written to the sink table {self.target!r}, and "
            "each would overwrite the other's rows; name targets apart with spec.sink.tableName "
            '(e.g. "{db}_{table}"), merge them on purpose with a spec.routes entry whose sourceTables '
            "is a pattern matching all of them, or leave one out with spec.source.excludeTables"
        )


def find_collisions(targets: dict[TableId, SinkTarget]) -> list[Collision]:
    """Targets that several tables resolve to where at least one of them is not merged."""
    by_name: dict[str, list[TableId]] = {}
    for table, target in sorted(targets.items()):
        by_name.setdefault(target.name.lower(), []).append(table)
    collisions = []
    for tables in by_name.values():
        if len(tables) > 1 and not all(targets[t].merged for t in tables):
            collisions.append(Collision(targets[tables[0]].name, tuple(tables)))
    return collisions


def excluded(table: TableId, patterns: Sequence[str]) -> bool:
    """True when an entry of ``spec.source.excludeTables`` names or fully matches ``table``."""
    name = str(table)
    return any((re.fullmatch(p, name) is not None) if is_table_pattern(p) else p == name for p in patterns)
