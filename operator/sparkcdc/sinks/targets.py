"""The sink's view of a captured table: its target's schema, rows and changes.

Everything the sink writes passes through here first, in the task or the driver that writes it:
the snapshot's split rows, the binlog's collapsed changes, the tables ``prepare`` creates. What
the view does is decided once per table at discovery (core/routing.py ``SinkTarget``); a plain
target passes unchanged, at no cost. Otherwise, in this order:

* ``spec.transforms`` drops the columns the target does not keep and masks the masked ones
  (core/transforms.py), so a left-out or unmasked value never reaches a sink, a log or a file;
* a merging route puts the scope columns (``_source_db``, ``_source_table``) in front of the
  columns and of the key, filled with the table's own database and name, so that equal keys of
  two shards are two rows and a key-list delete of one shard never touches another's (range
  rewrites of snapshot splits are confined by the sinks themselves with ``scoped``, since a
  split's bounds are in the source's chunk-key terms);
* ``spec.sink.metadataColumns`` appends ``_op``, ``_ts_ms``… (core/row_metadata.py), and
  ``deleteMode: soft`` appends ``_deleted`` and turns a batch's deletes into upserts of the
  deleted rows' last images.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import pyarrow as pa

from sparkcdc.core.keys import key_of
from sparkcdc.core.microbatch import TableChanges
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.row_metadata import (
    DELETED_COLUMN,
    RowOrigin,
    last_origins,
    snapshot_origin,
)
from sparkcdc.core.transforms import mask_value
from sparkcdc.mysql.columns import Column
from sparkcdc.mysql.errors import SourceError
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks.base import AddedColumn

__all__ = [
    "comparable",
    "scoped",
    "sink_added",
    "sink_changes",
    "sink_rows",
    "sink_schema",
    "sink_schemas",
    "visible",
]

# MySQL's longest database and table names; binary collation: names compare exactly.
_NAME_LENGTH = 64


def _text_column(name: str, length: int, charset: str = "utf8mb4") -> Column:
    return Column(
        name=name,
        ordinal=0,
        data_type="varchar",
        column_type=f"varchar({length})",
        length=length,
        charset=charset,
        collation=f"{charset}_bin",
    )


def scope_column(name: str) -> Column:
    return replace(_text_column(name, _NAME_LENGTH), nullable=False)


_METADATA_COLUMNS: dict[str, Column] = {
    "op": _text_column("_op", 1, "ascii"),
    "ts_ms": Column("_ts_ms", 0, "bigint", "bigint(20)"),
    "binlog_file": _text_column("_binlog_file", 255),
    "binlog_pos": Column("_binlog_pos", 0, "bigint", "bigint(20) unsigned", unsigned=True),
    "gtid": _text_column("_gtid", 4096, "ascii"),
    "source_db": _text_column("_source_db", _NAME_LENGTH),
    "source_table": _text_column("_source_table", _NAME_LENGTH),
}
_DELETED = Column(DELETED_COLUMN, 0, "tinyint", "tinyint(1)", nullable=False, default_sql="0")


def _masked(column: Column, kind: str | None) -> Column:
    if kind is None:
        return column
    if kind == "redact":  # the type stays, the value is NULL
        return replace(column, nullable=True, default_sql=None)
    return replace(_text_column(column.name, 64, "ascii"), nullable=column.nullable, column_type="char(64)")


def sink_schema(schema: TableSchema) -> TableSchema:
    """The schema of ``schema``'s target (module docstring); ``table`` stays the source table,
    so that messages name it. ``SourceError`` names the table and column it cannot be made for."""
    target = schema.target
    if target is None or target.plain:
        return schema
    try:
        kept = set(target.columns.resolve(schema.table, schema.column_names, schema.row_key))
    except ValueError as err:
        raise SourceError(str(err)) from None
    columns = tuple(_masked(c, target.columns.mask_of(c.name)) for c in schema.columns if c.name in kept)
    scope = tuple(scope_column(name) for name, _ in schema.scope)
    extra = tuple(_METADATA_COLUMNS[f] for f in target.metadata)
    extra = tuple(c for c in extra if c.name not in {s.name for s in scope}) + (
        (_DELETED,) if target.soft_delete else ()
    )
    names = [c.name.lower() for c in (*scope, *columns, *extra)]
    clash = sorted({n for n in names if names.count(n) > 1})
    if clash:
        raise SourceError(
            f"table {schema.table} has a column {clash[0]!r}, which the sink also adds (a merging route's "
            "sourceColumns, spec.sink.metadataColumns or deleteMode: soft); rename the route's "
            "sourceColumns, or leave the column out with spec.transforms"
        )
    keys = tuple(c.name for c in scope)
    return replace(
        schema,
        columns=scope + columns + extra,
        primary_key=keys + schema.primary_key,
        row_key=keys + schema.row_key,
    )


def sink_schemas(schemas: Iterable[TableSchema]) -> list[TableSchema]:
    """One schema per target for ``Sink.prepare``: merged tables share a target, whose columns
    must then agree (names, types, keys) or the pipeline is refused before any write."""
    by_target: dict[str, TableSchema] = {}
    for schema in sorted(schemas, key=lambda s: s.table):
        target = sink_schema(schema)
        first = by_target.setdefault(target.sink_name.lower(), target)
        if first is not target:
            _check_compatible(first, target)
    return list(by_target.values())


def _shape(schema: TableSchema) -> tuple[Any, ...]:
    columns = tuple((c.name.lower(), c.column_type.lower(), c.nullable) for c in schema.columns)
    return columns, tuple(k.lower() for k in schema.row_key)


def _check_compatible(first: TableSchema, other: TableSchema) -> None:
    if _shape(first) == _shape(other):
        return
    mine = {c.name.lower(): c.column_type for c in first.columns}
    theirs = {c.name.lower(): c.column_type for c in other.columns}
    differing = sorted(n for n in mine.keys() | theirs.keys() if mine.get(n) != theirs.get(n))
    what = (
        f"column {differing[0]!r} is {mine.get(differing[0], 'missing')} in {first.table} but "
        f"{theirs.get(differing[0], 'missing')} in {other.table}"
        if differing
        else f"their keys differ ({', '.join(first.row_key)} vs {', '.join(other.row_key)})"
    )
    raise SourceError(
        f"tables {first.table} and {other.table} are merged into the sink table {first.sink_name!r} by "
        f"a route, but their columns differ: {what}; give them the same columns at the source, or "
        "route them to different targets"
    )


# -- rows ------------------------------------------------------------------------------------------


def sink_rows(schema: TableSchema, data: pa.Table, high: BinlogOffset, ts_ms: int | None = None) -> pa.Table:
    """A snapshot split's rows (read up to the high watermark ``high``) as the target stores them."""
    target = schema.target
    if target is None or target.plain:
        return data
    stored = sink_schema(schema)
    arrow = stored.arrow_schema()
    source_names = set(schema.column_names)
    kept = [c.name for c in stored.columns if c.name in source_names]
    data = data.select(kept)
    for name, kind in target.columns.masks:
        position = data.column_names.index(name)
        values = [mask_value(kind, v) for v in data.column(position).to_pylist()]
        data = data.set_column(position, arrow.field(name), pa.array(values, arrow.field(name).type))
    origin = snapshot_origin(high, int(time.time() * 1000) if ts_ms is None else ts_ms)
    constants = {**dict(schema.scope), **_origin_values(schema, origin)}
    for position, column in enumerate(stored.columns):
        if column.name in constants:
            field = arrow.field(column.name)
            array = pa.array([constants[column.name]] * data.num_rows, field.type)
            data = data.add_column(position, field, array)
    return data


def _origin_values(schema: TableSchema, origin: RowOrigin) -> dict[str, Any]:
    target = schema.target
    assert target is not None
    values = origin.values(target.metadata, schema.table.database, schema.table.table)
    if target.soft_delete:
        values[DELETED_COLUMN] = int(origin.deleted)
    return values


def sink_changes(schema: TableSchema, changes: TableChanges) -> TableChanges:
    """A collapsed binlog batch as the target applies it (module docstring)."""
    target = schema.target
    if target is None or target.plain:
        return changes
    scope = tuple(value for _, value in schema.scope)
    image = _image(schema)
    origins = {}
    if target.metadata or target.soft_delete:
        origins = last_origins(changes.changelog, lambda r: key_of(r.data, schema.row_key))
    upserts = {scope + key: image(row, origins.get(key)) for key, row in changes.upserts.items()}
    deletes = [scope + key for key in changes.deletes]
    if target.soft_delete:
        for key in changes.deletes:
            origin, record = origins[key]
            upserts[scope + key] = image(record.data, (origin, record))
        deletes = []
    return replace(
        changes,
        upserts=upserts,
        deletes=deletes,
        changelog=tuple(replace(r, data=image(r.data, None)) for r in changes.changelog),
    )


def _image(schema: TableSchema) -> Callable[[Mapping[str, Any], Any], dict[str, Any]]:
    """A row image as the target stores it: scope, kept columns (masked), metadata."""
    target = schema.target
    assert target is not None
    kept = [c.name for c in sink_schema(schema).columns if c.name in set(schema.column_names)]
    masks = dict(target.columns.masks)
    scope = dict(schema.scope)

    def image(row: Mapping[str, Any], origin: tuple[RowOrigin, Any] | None) -> dict[str, Any]:
        out = {**scope, **{n: mask_value(masks[n], row.get(n)) if n in masks else row.get(n) for n in kept}}
        if origin is not None:
            out.update(_origin_values(schema, origin[0]))
        return out

    return image


def sink_added(schema: TableSchema, added: Sequence[AddedColumn]) -> tuple[AddedColumn, ...]:
    """Columns a source ADD COLUMN adds to ``schema``'s target: none that the target leaves out,
    masked ones with the masked type and no default (a default is a value rows would show)."""
    target = schema.target
    if target is None or target.columns.empty:
        return tuple(added)
    stored = {c.name: c for c in sink_schema(schema).columns}
    kept = []
    for add in added:
        column = stored.get(add.column.name)
        if column is None:
            continue
        masked = target.columns.mask_of(column.name) is not None
        kept.append(replace(add, column=column, default_sql=None if masked else add.default_sql))
    return tuple(kept)


def comparable(schema: TableSchema) -> TableSchema:
    """``schema`` narrowed to the columns its target holds as the source has them (kept and not
    masked): what verification compares on both sides."""
    target = schema.target
    if target is None or target.columns.empty:
        return schema
    try:
        kept = set(target.columns.resolve(schema.table, schema.column_names, schema.row_key))
    except ValueError as err:
        raise SourceError(str(err)) from None
    masked = {name for name, _ in target.columns.masks}
    return replace(
        schema, columns=tuple(c for c in schema.columns if c.name in kept and c.name not in masked)
    )


def visible(
    schema: TableSchema, where: str, params: list[Any], quote: Callable[[str], str]
) -> tuple[str, list[Any]]:
    """``scoped``, and without the rows a soft-deleting target keeps for deleted source rows."""
    where, params = scoped(schema, where, params, quote)
    if schema.target is not None and schema.target.soft_delete:
        where = f"({where}) AND {quote(DELETED_COLUMN)} = 0"
    return where, params


def scoped(
    schema: TableSchema, where: str, params: list[Any], quote: Callable[[str], str]
) -> tuple[str, list[Any]]:
    """``where`` confined to this table's rows of a merged target (``col = %s AND …`` after it);
    unchanged for a table alone in its target."""
    if not schema.scope:
        return where, params
    clauses = [f"{quote(name)} = %s" for name, _ in schema.scope]
    return f"({where}) AND " + " AND ".join(clauses), [*params, *(value for _, value in schema.scope)]
