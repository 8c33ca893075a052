"""A binlog batch's changelog lines rendered column by column (core/logged_columns.py).

A line is ``dumps({"op", "table", "data": image, "source": {"file", "pos", "ts_ms"}, "id":
event_id(table, file, pos, index, op)})`` (sinks/changelog.py ``_render``). Here the same text is
assembled from whole columns by Arrow (sinks/arrow_json.py), as the snapshot's files are: only
the event id, a hash, is computed per record.

Each image column of integers, strings, dates and naive or UTC datetimes is made an Arrow array
of that type, whose JSON text arrow_json renders as ``dumps`` does; decimals are their quoted
``str``, floats their ``repr``; any other column (bytes, durations, bits), and any column whose
values are not all of the expected Python type, is rendered value by value with ``dumps``. The
unit tests hold the lines to ``_render``'s on every type.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Iterator, Sequence
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa

from sparkcdc.core.logged_columns import LoggedColumns
from sparkcdc.mysql.columns import Column, Family
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.mysql.types import arrow_type
from sparkcdc.sinks.arrow_json import Rendering, join_text, json_parts, text_bytes
from sparkcdc.sinks.values import dumps

__all__ = ["logged_text"]

# Records per rendered piece: bounded memory, and 32-bit Arrow offsets.
_PIECE_RECORDS = 65_536
_TEXT_FAMILIES = (Family.STRING, Family.JSON, Family.ENUM, Family.SET)
_NONE = type(None)
_ZERO = dt.timedelta(0)
_NON_FINITE = frozenset({"nan", "inf", "-inf"})


def _array_type(column: Column) -> tuple[type, pa.DataType] | None:
    """The Python type of the column's canonical values (as mysql/binlog/native.py converts
    them) and an Arrow type that holds them unchanged, or None: rendered value by value."""
    family = column.family
    if column.zero_dates or family in _TEXT_FAMILIES:
        return str, pa.string()
    if family in (Family.INTEGER, Family.YEAR):
        return int, pa.int64()  # a value beyond int64 fails the conversion: value by value then
    if family is Family.DATE:
        return dt.date, pa.date32()
    if family in (Family.DATETIME, Family.TIMESTAMP):
        return dt.datetime, arrow_type(column)
    return None


def _zones_fit(typ: pa.DataType, values: Sequence[Any]) -> bool:
    """Datetimes as the Arrow type keeps them: naive for a naive type, UTC for a UTC one (Arrow
    would turn either into the other silently)."""
    zones = {v.tzinfo for v in values if v is not None}
    if typ.tz is None:
        return zones <= {None}
    return all(z is not None and z.utcoffset(None) == _ZERO for z in zones)


def _value_texts(values: Sequence[Any]) -> Rendering:
    return "", pa.array([dumps(v) for v in values], type=pa.string()), ""


def _float_texts(values: Sequence[Any]) -> Rendering:
    # json's text of a finite float is its repr; NaN and the infinities (which MySQL does not store)
    # take dumps's spelling.
    texts = ["null" if v is None else float.__repr__(v) for v in values]
    if _NON_FINITE.intersection(texts):
        texts = [dumps(v) if t in _NON_FINITE else t for v, t in zip(values, texts, strict=True)]
    return "", pa.array(texts, type=pa.string()), ""


def _decimal_texts(values: Sequence[Any]) -> Rendering:
    # json_value's str(Decimal) — digits, sign, point and exponent, nothing to escape — quoted.
    return "", pa.array(["null" if v is None else f'"{v}"' for v in values], type=pa.string()), ""


def _column_parts(column: Column, values: Sequence[Any]) -> Rendering:
    """The JSON text of every value (arrow_json's parts). Arrow converts some values of another
    Python type silently (a float to an integer, bytes to a string, a datetime to its day, an aware
    datetime to a naive one, a decimal to the column's scale), so the values are checked first."""
    kinds = set(map(type, values))
    if column.family is Family.DECIMAL and kinds <= {Decimal, _NONE}:
        return _decimal_texts(values)
    if column.family in (Family.FLOAT, Family.DOUBLE) and kinds <= {float, _NONE}:
        return _float_texts(values)
    expected = _array_type(column)
    if expected is None or not kinds <= {expected[0], _NONE}:
        return _value_texts(values)
    python, typ = expected
    if python is dt.datetime and not _zones_fit(typ, values):
        return _value_texts(values)
    try:
        array = pa.array(values, type=typ)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return _value_texts(values)
    return json_parts(array)


def _event_ids(table: str, records: LoggedColumns, start: int, stop: int) -> pa.Array:
    """``event_id(table, file, pos, index, op)`` of the records in ``[start, stop)``."""
    base = hashlib.blake2b(f"{table}|".encode(), digest_size=12)
    digests = []
    fields = zip(
        records.files[start:stop], records.positions[start:stop], records.indexes[start:stop],
        records.ops[start:stop], strict=True,
    )  # fmt: skip
    for file, pos, index, op in fields:
        h = base.copy()
        h.update(f"{file}|{pos}|{index}|{op}".encode())
        digests.append(h.digest())
    width, count = 2 * base.digest_size, len(digests)
    offsets = pa.py_buffer(np.arange(0, width * (count + 1), width, dtype=np.int32).tobytes())
    return pa.StringArray.from_buffers(count, offsets, pa.py_buffer(b"".join(digests).hex().encode("ascii")))


def _numbers(values: Sequence[int]) -> pa.Array:
    return pa.array(values, type=pa.int64()).cast(pa.string())


def _piece(
    schema: TableSchema, records: LoggedColumns, data: list[Sequence[Any]], start: int, stop: int
) -> pa.Array:
    table = str(schema.table)
    pieces: list[pa.Array | str] = ['{"op":"', pa.array(records.ops[start:stop], type=pa.string())]
    text = '","table":' + dumps(table) + ',"data":{'
    for i, (column, values) in enumerate(zip(schema.columns, data, strict=True)):
        prefix, body, suffix = _column_parts(column, values[start:stop])
        pieces += [text + ("" if i == 0 else ",") + dumps(column.name) + ":" + prefix, body]
        text = suffix
    file_prefix, files, file_suffix = json_parts(pa.array(records.files[start:stop], type=pa.string()))
    pieces += [text + '},"source":{"file":' + file_prefix, files]
    pieces += [file_suffix + ',"pos":', _numbers(records.positions[start:stop])]
    pieces += [',"ts_ms":', _numbers(records.times[start:stop])]
    pieces += ['},"id":"', _event_ids(table, records, start, stop), '"}\n']
    return join_text(*pieces)


def _texts(
    schema: TableSchema, records: LoggedColumns, data: list[Sequence[Any]], start: int, stop: int
) -> Iterator[memoryview]:
    try:
        text = _piece(schema, records, data, start, stop)
    except pa.ArrowCapacityError:  # more text than 32-bit offsets hold (large values): halves
        if stop - start == 1:
            raise
        middle = (start + stop) // 2
        yield from _texts(schema, records, data, start, middle)
        yield from _texts(schema, records, data, middle, stop)
        return
    yield text_bytes(text)


def logged_text(schema: TableSchema, records: LoggedColumns) -> Iterator[bytes | memoryview]:
    """The changelog file of ``records`` (the lines ``_render`` makes, in order), piece by piece."""
    data = records.data_columns()
    for start in range(0, len(records), _PIECE_RECORDS):
        yield from _texts(schema, records, data, start, min(start + _PIECE_RECORDS, len(records)))
