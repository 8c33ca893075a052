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
from dataclasses import dataclass, field

from sparkcdc.core.tables import TableId, is_table_pattern
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
