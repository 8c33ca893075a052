"""The Go decoder's values as canonical values, a column at a time (native.py's ranges and
follow.py's batches).

The decoder answers integers as JSON numbers, UTF-8 text as JSON strings, other text and bytes
base64-encoded, DECIMAL and temporal values as text (binlogdec/main.go). ``converted_columns``
turns each column into what ``types.canonical_value`` makes of the value, the common families by a
shortcut to the same result (the type-table tests hold them to it); a conversion's cost per value
is then a comprehension's, not a call through a row dict.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import re
from binascii import a2b_base64
from collections.abc import Callable, Sequence
from typing import Any

from sparkcdc.mysql.binlog.rendered import UTF8_CHARSETS
from sparkcdc.mysql.columns import Column, Family
from sparkcdc.mysql.types import canonical_value, decode_text
from sparkcdc.mysql.zero_dates import rendered_text

__all__ = ["Values", "converted_columns", "is_utf8_text"]

_BYTES = {Family.STRING, Family.JSON, Family.BINARY}
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_CONTEXT = decimal.Context(prec=200)
_DECIMAL = decimal.Decimal
_ZERO_DATE = re.compile(r"^(0000|\d{4}-00|\d{4}-\d{2}-00)")  # as types.py: NULL, like the other paths


def _datetime(value: str) -> dt.datetime | None:
    # Every zero or partly-zero date the pattern matches is also one fromisoformat refuses, so the
    # pattern is only consulted then (it costs twice the parsing).
    try:
        return dt.datetime.fromisoformat(value)
    except ValueError:
        if _ZERO_DATE.match(value):
            return None  # as types.py: NULL, like the other paths
        raise


def _timestamp(value: str | None) -> dt.datetime | None:
    # The decoder renders TIMESTAMP in UTC; the zero TIMESTAMP is stored as epoch 0 (types.py). The
    # offset is parsed with the value: datetime.replace(tzinfo=...) costs several times the parsing.
    found = None if value is None else _datetime(value + "+00:00")
    return None if found == _EPOCH else found


def is_utf8_text(column: Column) -> bool:
    return column.family in (Family.STRING, Family.JSON) and (column.charset or "").lower() in UTF8_CHARSETS


Values = Sequence[Any]  # one column of a table's rows, as the decoder answered it


def _each(convert: Callable[[Any], Any]) -> Callable[[Values], Values]:
    return lambda values: [None if v is None else convert(v) for v in values]


def _unsigned(bits: int) -> Callable[[Values], Values]:
    wrap = 1 << bits  # the binlog carries the bits as a signed number
    return lambda values: [v + wrap if v is not None and v < 0 else v for v in values]


def _decimals(scale: int) -> Callable[[Values], Values]:
    """go-mysql prints a DECIMAL with exactly the column's fractional digits, which ``Decimal`` then
    keeps: quantizing (canonical_value's rule) is needed only for text of another form."""
    exponent = decimal.Decimal(1).scaleb(-scale)
    point = -scale - 1  # where the decimal point of such text is

    def convert(values: Values) -> Values:
        present = [v for v in values if v is not None]
        if all(v[point : point + 1] == "." for v in present) if scale else not any("." in v for v in present):
            return [None if v is None else _DECIMAL(v) for v in values]
        return [None if v is None else _DECIMAL(v).quantize(exponent, context=_CONTEXT) for v in values]

    return convert


def _column_converter(column: Column) -> Callable[[Values], Values] | None:
    """``canonical_value`` over one column of the decoder's rendering, or None where the values are
    canonical already; the common families take a shortcut to the value ``canonical_value`` would
    return (the type-table test holds them to it)."""
    family = column.family
    if column.zero_dates:  # MySQL's text, zero dates included (zero_dates.py)
        printed = _printed_as_mysql(column)  # go-mysql's text is MySQL's already, mostly
        return _each(lambda v: v if printed(v) else rendered_text(column, v))
    if is_utf8_text(column) or (family is Family.INTEGER and not column.unsigned):
        return None  # already the decoded text, or the number
    if family is Family.INTEGER and column.integer_bits < 64:
        return _unsigned(column.integer_bits)
    if family is Family.DOUBLE:
        return _each(float)  # a JSON number: canonical_value's float(), exactly
    if family is Family.DATETIME:
        return _each(_datetime)
    if family is Family.TIMESTAMP:
        return lambda values: [_timestamp(v) for v in values]
    if family is Family.DECIMAL:
        return _decimals(int(column.scale or 0))
    if family is Family.STRING:  # text in another character set: canonical_value's decoding
        charset = column.charset
        return lambda values: [None if v is None else decode_text(a2b_base64(v), charset) for v in values]
    if family in _BYTES:
        return _each(lambda v: canonical_value(column, base64.b64decode(v)))
    return _each(lambda v: canonical_value(column, v))


def _printed_as_mysql(column: Column) -> Callable[[str], object]:
    """Whether a rendered date is already MySQL's text for ``column`` (the fields, zero ones
    included, and exactly the column's fractional digits): then ``rendered_text`` would print it
    again unchanged, and it is kept as it is."""
    digits = min(int(column.datetime_precision or 0), 6)
    pattern = r"\d{4}-\d{2}-\d{2}"
    if column.family is not Family.DATE:
        pattern += r" \d{2}:\d{2}:\d{2}" + (rf"\.\d{{{digits}}}" if digits else "")
    return re.compile(pattern).fullmatch


def converted_columns(columns: Sequence[Column], rows: Sequence[Sequence[Any]]) -> list[Values]:
    """The rows' values column by column, canonical: a conversion's cost per value is then a
    comprehension's, not a call through a row dict."""
    out: list[Values] = []
    for column, values in zip(columns, zip(*rows, strict=True), strict=True):
        convert = _column_converter(column)
        out.append(values if convert is None else convert(values))
    return out
