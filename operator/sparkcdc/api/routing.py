"""``spec.routes``, ``spec.transforms`` and ``spec.sink.tableName``: where each captured table is
written, and which of its columns.

The rules themselves are pure (core/routing.py); these models only describe them in the spec
and refuse, already while the manifest is validated, collisions that are visible without the
source: two plain ``spec.source.tables`` names resolving to one target. Collisions through
patterns are refused by the driver once it has listed the source's tables, before it reads or
writes anything.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, ConfigDict, Field, StringConstraints, model_validator

from sparkcdc.api.base import ApiModel, SpecError, cel
from sparkcdc.core.routing import DEFAULT_SOURCE_COLUMNS, Route, Routing, check_template
from sparkcdc.core.tables import is_table_pattern
from sparkcdc.core.transforms import ColumnRules, Transform

# A column name the route adds: a plain identifier, so it quotes the same in every sink.
COLUMN_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"
_COLUMN_NAME_RX = re.compile(COLUMN_NAME_PATTERN)


def _check_template(value: str) -> str:
    try:
        check_template(value)
    except ValueError as err:
        raise SpecError(str(err)) from None
    if any(part in ("", ".", "..") for part in value.split("/")):
        raise SpecError(f"{value!r} must not have empty, '.' or '..' path segments")
    return value


def _check_column(value: str) -> str:
    if not _COLUMN_NAME_RX.match(value):
        raise SpecError(f"{value!r} is not a plain column name (letters, digits and _, at most 64)")
    return value


NameTemplate = Annotated[
    str, StringConstraints(min_length=1, max_length=256), AfterValidator(_check_template)
]
SinkTableName = Annotated[
    str, StringConstraints(min_length=1, max_length=256), AfterValidator(_check_template)
]
AddedColumn = Annotated[
    str,
    StringConstraints(min_length=1, max_length=64),
    AfterValidator(_check_column),
    Field(json_schema_extra={"pattern": COLUMN_NAME_PATTERN}),
]

TABLE_NAME_DESCRIPTION = (
    'Name of each table\'s target, with the placeholders {db} and {table} (e.g. "{db}_{table}"). '
    "Two source tables may never resolve to one target unless a spec.routes entry merges them."
)


class SourceColumns(ApiModel):
    """The columns a merging route adds to its target, holding each row's source table."""

    database: AddedColumn = Field(default=DEFAULT_SOURCE_COLUMNS[0], description="Source database column.")
    table: AddedColumn = Field(default=DEFAULT_SOURCE_COLUMNS[1], description="Source table column.")

    @model_validator(mode="after")
    def _distinct(self) -> SourceColumns:
        if self.database.lower() == self.table.lower():
            raise SpecError(f"database and table must be different columns, both are {self.database!r}")
        return self


class RouteSpec(ApiModel):
    """Send the tables matching ``sourceTables`` to one sink table."""

    source_tables: Annotated[str, StringConstraints(min_length=1, max_length=512)] = Field(
        description='"db.table", or a regular expression matching all of "db.table". A pattern route '
        "merges: its target gets the source columns as part of its primary key, so equal keys of "
        "different tables never collide.",
    )
    sink_table: SinkTableName = Field(description="The target's name (placeholders {db} and {table}).")
    source_columns: SourceColumns = Field(
        default_factory=SourceColumns, description="Columns a merging route adds (pattern routes only)."
    )

    @model_validator(mode="after")
    def _check(self) -> RouteSpec:
        from sparkcdc.api.source import check_table_entry

        try:
            check_table_entry(self.source_tables)
        except SpecError as err:
            raise SpecError(str(err), loc=("sourceTables",)) from None
        if is_table_pattern(self.source_tables) and "{" in self.sink_table:
            raise SpecError(
                "a route with a pattern merges its tables into one target, so its name cannot depend "
                "on {db} or {table}; write the target's name",
                loc=("sinkTable",),
            )
        return self

    def to_route(self) -> Route:
        columns = (self.source_columns.database, self.source_columns.table)
        return Route(self.source_tables, self.sink_table, columns)


ColumnName = Annotated[str, StringConstraints(min_length=1, max_length=64)]


class TransformSpec(ApiModel):
    """Which columns of the matching tables reach the sink, and which only masked."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                cel(
                    "!(has(self.includeColumns) && has(self.excludeColumns))",
                    "give includeColumns or excludeColumns, not both",
                )
            ]
        }
    )

    source_tables: Annotated[str, StringConstraints(min_length=1, max_length=512)] = Field(
        description='"db.table", or a regular expression matching all of "db.table"; the first '
        "matching transform applies."
    )
    include_columns: list[ColumnName] | None = Field(
        default=None,
        max_length=4096,
        description="Only these columns go to the sink (key columns always do).",
    )
    exclude_columns: list[ColumnName] | None = Field(
        default=None, max_length=4096, description="These columns never go to the sink; key columns cannot."
    )
    mask_columns: dict[ColumnName, Literal["sha256", "redact"]] = Field(
        default_factory=dict,
        max_length=4096,
        description="Columns written masked: sha256 (hex digest of the value, unsalted: joinable, but "
        "guessable for low-entropy values) or redact (NULL). Masked before the row leaves the task "
        "that read it. E.g. {email: sha256, ssn: redact}.",
    )

    @model_validator(mode="after")
    def _check(self) -> TransformSpec:
        from sparkcdc.api.source import check_table_entry

        try:
            check_table_entry(self.source_tables)
        except SpecError as err:
            raise SpecError(str(err), loc=("sourceTables",)) from None
        if self.include_columns is not None and self.exclude_columns is not None:
            raise SpecError("give includeColumns or excludeColumns, not both", loc=("excludeColumns",))
        if self.include_columns is not None:
            for name in self.mask_columns:
                if name.lower() not in {c.lower() for c in self.include_columns}:
                    raise SpecError(f"masks {name!r}, which includeColumns leaves out", loc=("maskColumns",))
        for name in self.mask_columns:
            if name.lower() in {c.lower() for c in self.exclude_columns or ()}:
                raise SpecError(f"masks {name!r}, which excludeColumns leaves out", loc=("maskColumns",))
        return self

    def to_transform(self) -> Transform:
        rules = ColumnRules(
            None if self.include_columns is None else tuple(self.include_columns),
            tuple(self.exclude_columns or ()),
            tuple(sorted(self.mask_columns.items())),
        )
        return Transform(self.source_tables, rules)


def build_routing(
    table_name: str,
    routes: list[RouteSpec],
    transforms: list[TransformSpec],
    metadata: list[str],
    soft_delete: bool,
) -> Routing:
    return Routing(
        table_name,
        tuple(r.to_route() for r in routes),
        tuple(t.to_transform() for t in transforms),
        tuple(metadata),
        soft_delete,
    )
