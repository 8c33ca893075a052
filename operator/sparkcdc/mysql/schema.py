"""Table schemas from ``information_schema``: columns, primary key, and the chunk key."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import pyarrow as pa
import pymysql

from sparkcdc.core.routing import SinkTarget
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.columns import Column, Family, default_sql
from sparkcdc.mysql.errors import SourceError
from sparkcdc.mysql.types import arrow_type

__all__ = ["Column", "TableSchema", "load_table_schema", "parse_members"]

_MEMBER = re.compile(r"'((?:[^']|'')*)'")
# Key columns whose order or comparison the chunk queries cannot rely on: ENUM and SET sort by
# their index but compare with strings as text; the others are not orderable at all.
_UNSPLITTABLE = {Family.ENUM, Family.SET, Family.JSON, Family.GEOMETRY}


def parse_members(column_type: str) -> tuple[str, ...]:
    """The labels of ``enum('a','b')`` / ``set('x','y')`` in definition order."""
    start = column_type.find("(")
    if start < 0:
        return ()
    return tuple(m.replace("''", "'").replace("\\\\", "\\") for m in _MEMBER.findall(column_type[start:]))


@dataclass(frozen=True)
class TableSchema:
    """A captured table. Picklable: it travels to Spark tasks.

    ``primary_key`` is the table's primary key (empty when it has none). ``row_key`` identifies
    a row in the merge and in sinks: the primary key, or the unique NOT NULL key used instead.
    ``chunk_key`` orders and splits the table; it is ``row_key`` or a prefix of the primary
    key named by ``spec.snapshot.chunkKeyColumns``, so it is always a prefix of ``row_key``.
    """

    table: TableId
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...]
    chunk_key: tuple[str, ...]
    row_key: tuple[str, ...]
    # Where the sink writes the table (core/routing.py); None: under its own name.
    target: SinkTarget | None = None
    # False when ``row_key`` is not a key of the source table (spec.snapshot.sinkKeyColumns, or
    # all columns): identical rows are then one row in the sink (docs/reference.md).
    row_key_unique: bool = True

    @property
    def sink_name(self) -> str:
        """The sink table (JDBC) or directory (Delta, changelog) the rows are written to."""
        return self.target.name if self.target is not None else self.table.table

    @property
    def scope(self) -> tuple[tuple[str, str], ...]:
        """Constant (column, value) pairs of this table's rows in a merged target; () when the
        target holds this table alone. Range rewrites of a split are confined to them."""
        return self.target.scope if self.target is not None else ()

    def column(self, name: str) -> Column:
        for col in self.columns:
            if col.name == name:
                return col
        raise KeyError(f"table {self.table} has no column {name!r}")

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    @property
    def chunk_key_columns(self) -> tuple[Column, ...]:
        return tuple(self.column(n) for n in self.chunk_key)

    @property
    def row_key_columns(self) -> tuple[Column, ...]:
        return tuple(self.column(n) for n in self.row_key)

    @property
    def chunk_key_is_unique(self) -> bool:
        return self.chunk_key == self.row_key

    def key_collations(self) -> tuple[str | None, ...]:
        """Per chunk-key column: its collation for string columns, else None (for core's KeyOrder)."""
        return tuple(c.collation if c.is_text else None for c in self.chunk_key_columns)

    @property
    def is_numeric_single_key(self) -> bool:
        """One integer chunk-key column: the planner may cut it arithmetically."""
        return len(self.chunk_key) == 1 and self.chunk_key_columns[0].family is Family.INTEGER

    def arrow_schema(self) -> pa.Schema:
        """The Arrow schema of the table's canonical rows (types.py); every field is nullable
        because zero dates read as null even in NOT NULL columns."""
        return self._arrow

    @cached_property
    def _arrow(self) -> pa.Schema:
        fields = [
            pa.field(c.name, arrow_type(c), nullable=True, metadata={"mysql.type": c.column_type})
            for c in self.columns
        ]
        return pa.schema(fields, metadata={"mysql.table": str(self.table)})

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_arrow", None)  # rebuilt on demand; keeps pickles small and version-proof
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)


_COLUMNS_SQL = """
SELECT COLUMN_NAME, ORDINAL_POSITION, DATA_TYPE, COLUMN_TYPE, IS_NULLABLE, NUMERIC_PRECISION,
       NUMERIC_SCALE, DATETIME_PRECISION, CHARACTER_MAXIMUM_LENGTH, CHARACTER_OCTET_LENGTH,
       CHARACTER_SET_NAME, COLLATION_NAME, COLUMN_DEFAULT, EXTRA, VERSION() LIKE '%%MariaDB%%'
FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s
ORDER BY ORDINAL_POSITION
"""

_INDEXES_SQL = """
SELECT INDEX_NAME, SEQ_IN_INDEX, COLUMN_NAME
FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s AND NON_UNIQUE = 0
ORDER BY INDEX_NAME, SEQ_IN_INDEX
"""


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, (bytes, bytearray)) else str(value)


def _opt_text(value: Any) -> str | None:
    return None if value is None else _text(value)


def _opt_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _column(row: Sequence[Any]) -> Column:
    name, ordinal, data_type, column_type, nullable, precision, scale, dt_precision, chars, octets = row[:10]
    cs, coll, default, extra, is_mariadb = row[10:15]
    data_type = _text(data_type).lower()
    column_type = _text(column_type)
    binary_type = data_type in ("binary", "varbinary")
    return Column(
        name=_text(name),
        ordinal=int(ordinal),
        data_type=data_type,
        column_type=column_type,
        nullable=_text(nullable) == "YES",
        unsigned=" unsigned" in column_type.lower(),
        precision=_opt_int(precision),
        scale=_opt_int(scale),
        datetime_precision=_opt_int(dt_precision),
        length=_opt_int(octets if binary_type else chars),
        charset=None if cs is None else _text(cs),
        collation=None if coll is None else _text(coll),
        members=parse_members(column_type) if data_type in ("enum", "set") else (),
        default_sql=default_sql(
            None if default is None else _text(default), _text(extra or ""), bool(is_mariadb)
        ),
    )


def _fetch(conn: Any, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    with conn.cursor(pymysql.cursors.Cursor) as cur:
        cur.execute(sql, params)
        return list(cur.fetchall())


_DEFINITION_READS = 20


def _definition(conn: Any, table: TableId) -> tuple[list[tuple[Any, ...]], dict[str, list[str]]]:
    """The column rows and unique keys of ``table`` as of one moment. information_schema is not
    transactional: a DDL statement that lands between the two queries (a key column renamed,
    say) would pair old columns with new keys, so the columns are read again after the keys and
    the pair is kept only when nothing moved in between."""
    params = (table.database, table.table)
    for _ in range(_DEFINITION_READS):
        rows = _fetch(conn, _COLUMNS_SQL, params)
        unique: dict[str, list[str]] = {}
        for index_name, _seq, column_name in _fetch(conn, _INDEXES_SQL, params):
            unique.setdefault(_text(index_name), []).append(_text(column_name))
        names = {_text(r[0]) for r in rows}
        if (
            all(c in names for cols in unique.values() for c in cols)
            and _fetch(conn, _COLUMNS_SQL, params) == rows
        ):
            return rows, unique
    raise SourceError(
        f"the definition of table {table} changed during each of {_DEFINITION_READS} reads; "
        "retry once the schema changes on it have finished"
    )


def _no_key_error(table: TableId) -> SourceError:
    return SourceError(
        f"table {table} has no primary key and no unique NOT NULL key, so it cannot be split into chunks; "
        f'add a primary key, or set spec.snapshot.chunkKeyColumns["{table}"] to columns to split it on '
        f'(and spec.snapshot.sinkKeyColumns["{table}"] to the columns that identify a row, else all '
        "columns do)"
    )


# Columns a full-row identity cannot include: not comparable exactly, or not allowed in a key.
_NO_IDENTITY = {Family.FLOAT, Family.DOUBLE, Family.JSON, Family.GEOMETRY}
_LOB = {"tinytext", "text", "mediumtext", "longtext", "tinyblob", "blob", "mediumblob", "longblob"}


def _identity(
    table: TableId,
    columns: dict[str, Column],
    chunk: tuple[str, ...],
    table_key: tuple[str, ...],
    sink_key: Sequence[str] | None,
) -> tuple[tuple[str, ...], bool]:
    """(row_key, unique) for a chunk key that is not a unique key: the chunk key first (splits
    are rewritten by range, and the backfill merge matches keys by prefix), then the sink key,
    the table's own key, or every other column."""
    field = f'spec.snapshot.sinkKeyColumns["{table}"]'
    if sink_key and not table_key:
        bad = [c for c in sink_key if c not in columns or columns[c].nullable]
        if bad:
            raise SourceError(
                f"{field} names column {bad[0]!r}, which table {table} does not have or which may be "
                f"NULL; name NOT NULL columns of {', '.join(columns)}"
            )
        return chunk + tuple(c for c in sink_key if c not in chunk), False
    if table_key:
        return chunk + tuple(c for c in table_key if c not in chunk), True
    for col in columns.values():
        if col.nullable or col.family in _NO_IDENTITY or col.data_type in _LOB:
            why = "may be NULL" if col.nullable else f"is {col.column_type}"
            raise SourceError(
                f"table {table} has no primary key or unique NOT NULL key, and its rows cannot be "
                f"identified by all their columns in the sink (column {col.name!r} {why}); set {field} "
                "to NOT NULL columns that identify a row"
            )
    return chunk + tuple(c for c in columns if c not in chunk), False


def _choose_keys(
    table: TableId,
    columns: dict[str, Column],
    unique: dict[str, list[str]],
    override: Sequence[str] | None,
    sink_key: Sequence[str] | None = None,
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], bool]:
    """(primary_key, row_key, chunk_key, row_key_unique)."""
    primary = tuple(unique.get("PRIMARY", ()))
    usable = {
        name: tuple(cols)
        for name, cols in unique.items()
        if name != "PRIMARY" and all(not columns[c].nullable for c in cols)
    }
    field = f'spec.snapshot.chunkKeyColumns["{table}"]'
    row_unique = True
    if override:
        wanted = tuple(override)
        missing = [c for c in wanted if c not in columns]
        if missing:
            raise SourceError(
                f"{field} names column {missing[0]!r}, which table {table} does not have; "
                f"its columns are {', '.join(columns)}"
            )
        if primary and wanted == primary[: len(wanted)]:
            row_key, chunk_key = primary, wanted
        else:
            keys = ([primary] if primary else []) + list(usable.values())
            matches = [k for k in keys if set(k) == set(wanted)]
            chunk_key = wanted
            if matches and not any(columns[c].nullable for c in wanted):
                row_key = wanted
            else:
                table_key = keys[0] if keys else ()
                row_key, row_unique = _identity(table, columns, wanted, table_key, sink_key)
    elif primary:
        row_key = chunk_key = primary
    elif usable:
        # The narrowest unique NOT NULL key, ties broken by index name, so the choice is stable.
        row_key = chunk_key = min(usable.items(), key=lambda item: (len(item[1]), item[0]))[1]
    else:
        raise _no_key_error(table)
    for name in chunk_key:
        if columns[name].family in _UNSPLITTABLE:
            raise SourceError(
                f"table {table} would be split on column {name!r} of type {columns[name].column_type}, which "
                f"the chunk queries cannot order reliably; set {field} to another unique NOT NULL key"
            )
    return primary, row_key, chunk_key, row_unique


def load_table_schema(
    conn: Any,
    table: TableId,
    chunk_key_override: Sequence[str] | None = None,
    sink_key_override: Sequence[str] | None = None,
) -> TableSchema:
    """The schema of ``table``; raises ``SourceError`` when it is missing or cannot be chunked."""
    rows, unique = _definition(conn, table)
    if not rows:
        raise SourceError(
            f"table {table} does not exist on the source (or user cannot see it); check spec.source.tables "
            "and that the user has SELECT on it"
        )
    columns = {c.name: c for c in (_column(r) for r in rows)}
    primary, row_key, chunk_key, row_key_unique = _choose_keys(
        table, columns, unique, chunk_key_override, sink_key_override
    )
    return TableSchema(
        table=table,
        columns=tuple(columns.values()),
        primary_key=primary,
        chunk_key=chunk_key,
        row_key=row_key,
        row_key_unique=row_key_unique,
    )
