"""Whole columns as canonical Arrow arrays (the snapshot's read path): Arrow kernels over the
text or native values the server sends, equal value for value to ``types.canonical_value``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from sparkcdc.mysql.arrow_values import binary_scalar, int_scalar, null_scalar, text_scalar
from sparkcdc.mysql.columns import Column, Family
from sparkcdc.mysql.types import TIME_TEXT, ZERO_DATE, arrow_type, canonical_value

if TYPE_CHECKING:
    from sparkcdc.mysql.schema import TableSchema

__all__ = ["arrow_to_canonical", "column_to_arrow", "rows_to_arrow"]


def _null_zero_dates(strings: pa.Array) -> pa.Array:
    zero = pc.match_substring_regex(strings, ZERO_DATE.pattern)
    return pc.if_else(zero, null_scalar(pa.string()), strings)


def _times(strings: pa.Array) -> pa.Array:
    parts = pc.extract_regex(strings, TIME_TEXT.pattern)
    if parts.null_count != strings.null_count:
        raise pa.ArrowInvalid("TIME text in an unexpected format")
    seconds = pc.add(
        pc.add(
            pc.multiply(parts.field("h").cast(pa.int64()), int_scalar(3600)),
            pc.multiply(parts.field("m").cast(pa.int64()), int_scalar(60)),
        ),
        parts.field("s").cast(pa.int64()),
    )
    fraction = pc.utf8_rpad(parts.field("f"), width=6, padding="0").cast(pa.int64())
    micros = pc.add(pc.multiply(seconds, int_scalar(1_000_000)), fraction)
    micros = pc.if_else(pc.equal(parts.field("sign"), text_scalar("-")), pc.negate(micros), micros)
    return micros.cast(pa.duration("us"))


def _binary_to_arrow(column: Column, data: pa.Array) -> pa.Array:
    """Canonical values of a BIT, BINARY or GEOMETRY column from the bytes the server sends."""
    if column.family is Family.BIT and column.bit_width == 1:
        return pc.not_equal(data, binary_scalar(b"\x00"))
    return data  # the server returns BINARY(n) padded, BIT(n) as ceil(n/8) bytes


def _text_to_arrow(column: Column, strings: pa.Array, typ: pa.DataType) -> pa.Array:
    """Canonical values of any other column from the text the server prints for it."""
    family = column.family
    if column.zero_dates:
        return strings  # MySQL's own text, zero dates included (zero_dates.py)
    if family in (Family.INTEGER, Family.DECIMAL, Family.DOUBLE, Family.YEAR):
        return strings.cast(typ)
    if family is Family.FLOAT:
        return strings.cast(pa.float64()).cast(pa.float32())
    if family is Family.DATE:
        return _null_zero_dates(strings).cast(pa.date32())
    if family is Family.DATETIME:
        return _null_zero_dates(strings).cast(pa.timestamp("us"))
    if family is Family.TIMESTAMP:
        # Strings are UTC wall clock; tagging naive microseconds as UTC is a zero-copy cast.
        return _null_zero_dates(strings).cast(pa.timestamp("us")).cast(typ)
    if family is Family.TIME:
        return _times(strings)
    return strings


def _is_raw_binary(column: Column) -> bool:
    return column.family in (Family.BIT, Family.BINARY, Family.GEOMETRY)


def _vectorized(column: Column, values: Sequence[Any], typ: pa.DataType) -> pa.Array | None:
    """Whole-column conversion of raw text-protocol values, or None when there is none."""
    if _is_raw_binary(column):
        return _binary_to_arrow(column, pa.array(values, pa.binary()))
    return _text_to_arrow(column, pa.array(values, pa.string()), typ)


def _native_temporal(array: pa.Array, typ: pa.DataType) -> pa.Array:
    """DATE / DATETIME / TIMESTAMP values read natively (UTC wall clock for TIMESTAMP): year 0000
    is a zero date like the text path's, so null; zero months and days never arrive this way."""
    if pa.types.is_timestamp(array.type):
        array = array.cast(pa.timestamp("us", tz=array.type.tz))
    year_zero = pc.equal(pc.year(array), int_scalar(0))
    if pc.any(year_zero).as_py():
        array = pc.if_else(year_zero, null_scalar(array.type), array)
    return array.cast(typ)


def arrow_to_canonical(column: Column, values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """One column read straight into Arrow as canonical values.

    ``values`` are what the server sends for the column as ``chunk_reader`` selects it: native
    integers for integer columns, native dates and times (wall clock; TIMESTAMP in UTC) or their
    text, the raw bytes of BIT, BINARY and GEOMETRY columns, and the server's text for everything
    else — the same text as the text protocol, so the result equals ``column_to_arrow`` of the
    text-protocol values.
    """
    array = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    typ = arrow_type(column)
    if array.null_count == len(array):
        return pa.nulls(len(array), typ)
    try:
        if _is_raw_binary(column):
            return _binary_to_arrow(column, array.cast(pa.binary()))
        if pa.types.is_integer(array.type):
            return array.cast(typ)
        if pa.types.is_timestamp(array.type) or pa.types.is_date(array.type):
            return _native_temporal(array, typ)
        return _text_to_arrow(column, array.cast(pa.string()), typ)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        # Unusual text (e.g. an out-of-range date): the exact slow path decides.
        return pa.array([canonical_value(column, v) for v in array.to_pylist()], type=typ)


def column_to_arrow(column: Column, values: Sequence[Any]) -> pa.Array:
    """One column's values as a canonical Arrow array.

    Raw text-protocol values (``str``/``bytes``, see ``connect(streaming=True)``) are converted
    by Arrow kernels; anything else goes through ``canonical_value`` one value at a time.
    """
    typ = arrow_type(column)
    sample = next((v for v in values if v is not None), None)
    if sample is None:
        return pa.nulls(len(values), typ)
    raw_type = bytes if column.family in (Family.BIT, Family.BINARY, Family.GEOMETRY) else str
    if isinstance(sample, raw_type):
        try:
            array = _vectorized(column, values, typ)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            array = None  # unusual text (e.g. an out-of-range date): the exact slow path decides
        if array is not None:
            return array
    return pa.array([canonical_value(column, v) for v in values], type=typ)


def rows_to_arrow(schema: TableSchema, rows: Sequence[Sequence[Any]]) -> pa.Table:
    """Rows (one value per column, in ``schema.columns`` order) as a table of ``schema.arrow_schema()``."""
    target = schema.arrow_schema()
    if not rows:
        return target.empty_table()
    columns = list(zip(*rows, strict=True))
    arrays = [column_to_arrow(col, columns[i]) for i, col in enumerate(schema.columns)]
    return pa.Table.from_arrays(arrays, schema=target)
