"""Canonical rows (sparkcdc.mysql.types) as Spark holds them, for sinks that write with Spark.

Spark SQL has no type for two canonical Arrow types, so a Spark-written replica stores them as:

==========================  ==============================  ====================================
MySQL (canonical Arrow)     Spark / Delta column            value
==========================  ==============================  ====================================
DECIMAL(p, s), p > 38       STRING                          the exact decimal in plain notation
(decimal256)                                                with ``s`` fraction digits
                                                            (``format(d, "f")``: ``"-1.50"``)
TIME (duration[us])         BIGINT                          microseconds, signed (MySQL's TIME is
                                                            a duration: negative or beyond 24 h)
GEOMETRY (binary: SRID +    STRUCT<srid: BIGINT,            the SRID, and the geometry as OGC
WKB, MySQL's format)        wkb: BINARY>                    WKB (sinks/geometry.py)
==========================  ==============================  ====================================

Spark's largest decimal has 38 digits; a string keeps every digit and compares equal for equal
values (the scale is fixed per column). TIME as a count of microseconds keeps order and
arithmetic and is read by every Delta reader, unlike Spark's day-time interval type.

Everything else maps one to one: TINYINT..BIGINT → BYTE/SHORT/INT/BIGINT (unsigned ones one
size up, BIGINT UNSIGNED → DECIMAL(20,0)), DECIMAL(p ≤ 38) → DECIMAL(p,s), FLOAT/DOUBLE →
FLOAT/DOUBLE, BIT(1) → BOOLEAN, BIT(n)/BINARY/BLOB → BINARY, YEAR → SHORT,
DATE → DATE, DATETIME → TIMESTAMP_NTZ (the wall clock), TIMESTAMP → TIMESTAMP (the instant),
strings, JSON, ENUM and SET → STRING. Every column is nullable (zero dates are null) and carries
its MySQL declaration as field metadata ``mysql.type``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import pyarrow as pa

from sparkcdc.mysql.columns import Column, Family
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.mysql.types import arrow_type
from sparkcdc.sinks.geometry import GEOMETRY_STRUCT, from_struct_array, geometry_fields, struct_array

__all__ = [
    "from_spark_arrow",
    "is_spark_ordered",
    "quote_ident",
    "spark_arrow_schema",
    "spark_arrow_type",
    "spark_struct",
    "sql_literal",
    "sql_stored_literal",
    "to_spark_arrow",
]

_MICROS = dt.timedelta(microseconds=1)


def spark_arrow_type(column: Column) -> pa.DataType:
    """The Arrow type of ``column`` as Spark accepts it (see the module docstring)."""
    canonical = arrow_type(column)
    if column.family is Family.GEOMETRY:
        return GEOMETRY_STRUCT
    if pa.types.is_decimal256(canonical):
        return pa.string()
    if pa.types.is_duration(canonical):
        return pa.int64()
    return canonical


def spark_arrow_schema(schema: TableSchema) -> pa.Schema:
    return pa.schema(
        [pa.field(c.name, spark_arrow_type(c), nullable=True) for c in schema.columns],
    )


def _decimal_text(values: pa.Array) -> pa.Array:
    # Arrow prints zero as "0E-30"; plain notation is what a person (and MySQL) writes.
    return pa.array([None if v is None else format(v, "f") for v in values.to_pylist()], pa.string())


def _to_spark_column(column: Column, values: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    canonical = arrow_type(column)
    if column.family is Family.GEOMETRY:
        return struct_array(values)
    if pa.types.is_decimal256(canonical):
        array = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
        return _decimal_text(array)
    if pa.types.is_duration(canonical):
        return values.cast(pa.int64())
    return values


def to_spark_arrow(schema: TableSchema, data: pa.Table) -> pa.Table:
    """Canonical rows (``schema.arrow_schema()``) in the types of ``spark_arrow_schema``."""
    arrays = [_to_spark_column(c, data.column(c.name)) for c in schema.columns]
    return pa.Table.from_arrays(arrays, schema=spark_arrow_schema(schema))


def from_spark_arrow(schema: TableSchema, data: pa.Table, columns: Sequence[str] | None = None) -> pa.Table:
    """Rows read back from Spark (``DataFrame.toArrow``) as canonical Arrow, for ``columns``."""
    names = list(columns) if columns is not None else [c.name for c in schema.columns]
    arrays = []
    for name in names:
        column = schema.column(name)
        canonical = arrow_type(column)
        values = data.column(name)
        if column.family is Family.GEOMETRY:
            values = from_struct_array(values)
        elif pa.types.is_duration(canonical):
            values = values.cast(pa.int64()).cast(canonical)
        elif pa.types.is_timestamp(canonical) and canonical.tz is not None:
            values = values.cast(pa.timestamp("us", tz="UTC"))
        else:
            values = values.cast(canonical)
        arrays.append(values)
    return pa.Table.from_arrays(arrays, schema=pa.schema([schema.arrow_schema().field(n) for n in names]))


def spark_struct(schema: TableSchema) -> Any:
    """The ``StructType`` of the replica table: ``spark_arrow_schema`` with MySQL metadata."""
    from pyspark.sql import types as T  # noqa: N812

    def spark_type(typ: pa.DataType) -> Any:
        simple = {
            pa.int8(): T.ByteType(),
            pa.int16(): T.ShortType(),
            pa.int32(): T.IntegerType(),
            pa.int64(): T.LongType(),
            pa.float32(): T.FloatType(),
            pa.float64(): T.DoubleType(),
            pa.bool_(): T.BooleanType(),
            pa.date32(): T.DateType(),
            pa.string(): T.StringType(),
            pa.binary(): T.BinaryType(),
        }
        if typ in simple:
            return simple[typ]
        if pa.types.is_decimal128(typ):
            return T.DecimalType(typ.precision, typ.scale)
        if pa.types.is_timestamp(typ):
            return T.TimestampType() if typ.tz is not None else T.TimestampNTZType()
        if pa.types.is_struct(typ):
            return T.StructType([T.StructField(f.name, spark_type(f.type), True) for f in typ])
        raise TypeError(f"no Spark type for Arrow {typ}")

    fields = []
    for column in schema.columns:
        metadata: dict[str, str] = {"mysql.type": column.column_type}
        canonical = arrow_type(column)
        if pa.types.is_duration(canonical):
            metadata["sparkcdc.unit"] = "microseconds"
        elif pa.types.is_decimal256(canonical):
            metadata["sparkcdc.encoding"] = "decimal-text"
        elif column.family is Family.GEOMETRY:
            metadata["sparkcdc.encoding"] = "geometry-srid-wkb"
        fields.append(T.StructField(column.name, spark_type(spark_arrow_type(column)), True, metadata))
    return T.StructType(fields)


def is_spark_ordered(column: Column) -> bool:
    """Spark compares the stored values of ``column`` in the order MySQL compares the source's.

    Strings are not (collations, PAD SPACE) and neither are wide decimals stored as text.
    """
    if column.is_text or column.family is Family.GEOMETRY:
        return False
    canonical = arrow_type(column)
    return not (pa.types.is_decimal256(canonical) or pa.types.is_string(canonical))


def spark_value(column: Column, value: Any) -> Any:
    """A canonical value as stored in the replica (before it becomes a Spark literal)."""
    if value is None:
        return None
    canonical = arrow_type(column)
    if column.family is Family.GEOMETRY:
        return dict(zip(("srid", "wkb"), geometry_fields(value), strict=True))
    if pa.types.is_duration(canonical):
        return value // _MICROS
    if pa.types.is_decimal256(canonical):
        return format(Decimal(value), "f")
    return value


def quote_ident(name: str) -> str:
    """A Spark SQL identifier."""
    return "`" + name.replace("`", "``") + "`"


_EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def sql_stored_literal(column: Column, stored: Any) -> str:
    """Spark SQL text for a value as the replica stores it (``spark_value``), typed as the
    column. Strings use backslash escapes (Spark's default, ``escapedStringLiterals=false``)."""
    typ = spark_arrow_type(column)
    name = spark_struct_type_name(typ)
    if stored is None:
        return f"CAST(NULL AS {name})"
    if pa.types.is_boolean(typ):
        return "true" if stored else "false"
    if pa.types.is_integer(typ):
        return f"CAST({int(stored)} AS {name})"
    if pa.types.is_floating(typ):
        return f"CAST('{float(stored)!r}' AS {name})"
    if pa.types.is_decimal(typ):
        return f"CAST('{format(Decimal(stored), 'f')}' AS {name})"
    if pa.types.is_string(typ):
        return "'" + str(stored).replace("\\", "\\\\").replace("'", "\\'") + "'"
    if pa.types.is_binary(typ):
        return f"X'{bytes(stored).hex()}'"
    if pa.types.is_struct(typ):
        return f"named_struct('srid', CAST({int(stored['srid'])} AS bigint), 'wkb', X'{stored['wkb'].hex()}')"
    if pa.types.is_date(typ):
        return f"DATE'{stored.isoformat()}'"
    if pa.types.is_timestamp(typ):
        if typ.tz is not None:
            return f"timestamp_micros({(stored - _EPOCH_UTC) // _MICROS})"
        return f"TIMESTAMP_NTZ'{stored.isoformat(sep=' ')}'"
    raise TypeError(f"no Spark literal for {column.name} ({typ})")


def sql_literal(column: Column, value: Any) -> str:
    """Spark SQL text for canonical ``value`` as the replica stores it."""
    return sql_stored_literal(column, spark_value(column, value))


def spark_struct_type_name(typ: pa.DataType) -> str:
    """The Spark SQL name of a ``spark_arrow_type``."""
    names = {
        pa.int8(): "tinyint",
        pa.int16(): "smallint",
        pa.int32(): "int",
        pa.int64(): "bigint",
        pa.float32(): "float",
        pa.float64(): "double",
        pa.bool_(): "boolean",
        pa.date32(): "date",
        pa.string(): "string",
        pa.binary(): "binary",
    }
    if typ in names:
        return names[typ]
    if pa.types.is_decimal128(typ):
        return f"decimal({typ.precision},{typ.scale})"
    if pa.types.is_timestamp(typ):
        return "timestamp" if typ.tz is not None else "timestamp_ntz"
    if pa.types.is_struct(typ):
        return "struct<" + ",".join(f"{f.name}:{spark_struct_type_name(f.type)}" for f in typ) + ">"
    raise TypeError(f"no Spark type for Arrow {typ}")
