"""One canonical value per MySQL type, whichever path a row came from (architecture §3 rule 7).

The snapshot reads rows over the text protocol; the binlog reader decodes row images from
python-mysql-replication. Both end here, so the merge, the sinks and the changelog see one
representation per column. The canonical form is the Arrow type of ``arrow_type`` and, for
single values, what ``pa.Array.to_pylist()`` returns for it:

==========================  ===============================  =======================================
MySQL                       Arrow                            Python (``to_pylist``)
==========================  ===============================  =======================================
TINYINT..BIGINT             int8 / int16 / int32 / int64     int
unsigned TINYINT..INT       the next wider signed int        int
BIGINT UNSIGNED             decimal128(20, 0)                Decimal (exact up to 2**64-1)
DECIMAL(p, s)               decimal128(p, s); 256 if p > 38  Decimal with exactly ``s`` digits
FLOAT / DOUBLE              float32 / float64                float (FLOAT: the exact float32 value)
BIT(1) / BIT(n)             bool / binary (ceil(n/8) bytes)  bool / bytes, big-endian
YEAR                        int16                            int (``0000`` is 0)
DATE                        date32                           date
DATETIME(p)                 timestamp(us)                    naive datetime (wall clock)
TIMESTAMP(p)                timestamp(us, UTC)               aware datetime in UTC
TIME(p)                     duration(us)                     timedelta (may be negative or > 24 h)
CHAR/VARCHAR/TEXT, JSON     string                           str (JSON as the server prints it)
ENUM / SET                  string                           label / labels joined by "," in
                                                             definition order ("" for the empty set)
BINARY(n)/VARBINARY/BLOB    binary                           bytes (BINARY(n) padded with 0x00 to n)
GEOMETRY                    binary                           bytes: MySQL's internal format, the SRID
                                                             (4 bytes, little-endian) then the WKB
==========================  ===============================  =======================================

Zero and partly-zero dates (``0000-00-00``, ``2024-00-10``, the zero TIMESTAMP) become null, as
Debezium does: no date type can hold them. Columns flagged ``zero_dates`` (MySQL/MariaDB targets,
which can store them) are strings instead, MySQL's text of every value (zero_dates.py).
GEOMETRY keeps its SRID: a MySQL column stores it and refuses WKB without it; the other sinks
turn it into EWKB or an SRID field (sinks/geometry.py).
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import re
import struct
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from sparkcdc.core.charsets import decode_mysql_latin1
from sparkcdc.mysql.columns import Column, Family
from sparkcdc.mysql.zero_dates import TEMPORAL, temporal_text

if TYPE_CHECKING:
    from sparkcdc.mysql.schema import TableSchema

__all__ = ["arrow_type", "binlog_row_to_canonical", "canonical_value", "decode_text"]

UTC = dt.timezone.utc
_EPOCH = dt.datetime(1970, 1, 1)
_DECIMAL_CONTEXT = decimal.Context(prec=200)
ZERO_DATE = re.compile(r"^(0000|\d{4}-00|\d{4}-\d{2}-00)")
TIME_TEXT = re.compile(r"^(?P<sign>-?)(?P<h>\d+):(?P<m>\d{1,2}):(?P<s>\d{1,2})(?:\.(?P<f>\d{0,6}))?$")
_SIGNED_INTS = {8: pa.int8(), 16: pa.int16(), 24: pa.int32(), 32: pa.int32(), 64: pa.int64()}
_UNSIGNED_INTS = {8: pa.int16(), 16: pa.int32(), 24: pa.int32(), 32: pa.int64()}

# MySQL character set -> Python codec, for bytes that arrive undecoded (latin1 is none of Python's:
# ``decode_text``).
_CODECS = {
    "utf8mb4": "utf-8",
    "utf8mb3": "utf-8",
    "utf8": "utf-8",
    "ascii": "ascii",
    "ucs2": "utf-16-be",
    "utf16": "utf-16-be",
    "utf16le": "utf-16-le",
    "utf32": "utf-32-be",
    "koi8r": "koi8_r",
    "koi8u": "koi8_u",
}


def _python_codec(charset: str | None) -> str:
    return _CODECS.get((charset or "utf8mb4").lower(), charset or "utf-8")


def decode_text(data: bytes, charset: str | None) -> str:
    """Bytes of a column in ``charset`` as text: latin1 as the server reads it (core/charsets.py),
    other character sets with Python's codec, bytes it cannot decode as U+FFFD."""
    if (charset or "").lower() == "latin1":
        return decode_mysql_latin1(data)
    return data.decode(_python_codec(charset), errors="replace")


def arrow_type(column: Column) -> pa.DataType:
    """The Arrow type of a column's canonical values."""
    family = column.family
    if column.zero_dates and family in TEMPORAL:
        return pa.string()
    if family is Family.INTEGER:
        bits = column.integer_bits
        if column.unsigned:
            return pa.decimal128(20, 0) if bits == 64 else _UNSIGNED_INTS[bits]
        return _SIGNED_INTS[bits]
    if family is Family.DECIMAL:
        precision, scale = int(column.precision or 10), int(column.scale or 0)
        return pa.decimal128(precision, scale) if precision <= 38 else pa.decimal256(precision, scale)
    if family is Family.FLOAT:
        return pa.float32()
    if family is Family.DOUBLE:
        return pa.float64()
    if family is Family.BIT:
        return pa.bool_() if column.bit_width == 1 else pa.binary()
    if family is Family.YEAR:
        return pa.int16()
    if family is Family.DATE:
        return pa.date32()
    if family is Family.DATETIME:
        return pa.timestamp("us")
    if family is Family.TIMESTAMP:
        return pa.timestamp("us", tz="UTC")
    if family is Family.TIME:
        return pa.duration("us")
    if family in (Family.BINARY, Family.GEOMETRY):
        return pa.binary()
    return pa.string()


# -- single values ---------------------------------------------------------------------------


def _text(value: Any, charset: str | None = None) -> str:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return decode_text(bytes(value), charset)
    return str(value)


def _is_zero_date(text: str) -> bool:
    return ZERO_DATE.match(text) is not None


def _parse_time(text: str) -> dt.timedelta:
    match = TIME_TEXT.match(text.strip())
    if match is None:
        raise ValueError(f"not a TIME value: {text!r}")
    micros = (int(match["h"]) * 3600 + int(match["m"]) * 60 + int(match["s"])) * 1_000_000
    micros += int((match["f"] or "").ljust(6, "0"))
    return dt.timedelta(microseconds=-micros if match["sign"] else micros)


def _mysql_json(value: Any) -> str:
    """MySQL's text for a decoded binary JSON document (``{"a": 1, "b": [1, 2]}``)."""

    def plain(item: Any) -> Any:
        if isinstance(item, (bytes, bytearray)):
            return bytes(item).decode("utf-8", errors="replace")
        if isinstance(item, dict):
            return {plain(k): plain(v) for k, v in item.items()}
        if isinstance(item, (list, tuple)):
            return [plain(v) for v in item]
        return item

    return json.dumps(plain(value), ensure_ascii=False, separators=(", ", ": "))


def _integer(column: Column, value: Any) -> int | decimal.Decimal:
    number = int(_text(value)) if isinstance(value, (str, bytes)) else int(value)
    if column.unsigned and number < 0:
        # The binlog stores unsigned values in the same bits; without signedness metadata the
        # decoder reads them as signed.
        number += 1 << column.integer_bits
    if column.unsigned and column.integer_bits == 64:
        return decimal.Decimal(number)
    return number


def _decimal(column: Column, value: Any) -> decimal.Decimal:
    number = value if isinstance(value, decimal.Decimal) else decimal.Decimal(_text(value))
    return number.quantize(decimal.Decimal(1).scaleb(-int(column.scale or 0)), context=_DECIMAL_CONTEXT)


def _float32(value: float) -> float:
    return float(struct.unpack("<f", struct.pack("<f", value))[0])


def _bit(column: Column, value: Any) -> bool | bytes:
    if isinstance(value, str):  # python-mysql-replication renders BIT as a string of 0s and 1s
        number = int(value, 2) if value else 0
    elif isinstance(value, (bytes, bytearray)):
        number = int.from_bytes(value, "big")
    else:
        number = int(value)
    width = column.bit_width
    if width == 1:
        return bool(number)
    return number.to_bytes((width + 7) // 8, "big")


def _datetime(value: Any) -> dt.datetime | None:
    """A naive wall-clock datetime, or None for a zero date."""
    if isinstance(value, dt.datetime):
        return value if value.tzinfo is None else value.astimezone(UTC).replace(tzinfo=None)
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day)
    text = _text(value).strip()
    if _is_zero_date(text):
        return None
    return dt.datetime.fromisoformat(text)


def _date(value: Any) -> dt.date | None:
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    text = _text(value).strip()
    return None if _is_zero_date(text) else dt.date.fromisoformat(text[:10])


def _timestamp(value: Any) -> dt.datetime | None:
    # Naive values are UTC: sessions run with time_zone '+00:00' and the binlog library turns
    # the UTC epoch into a naive UTC datetime.
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    naive = _datetime(value)
    if naive is None or naive == _EPOCH:
        # Epoch 0 is how the binlog stores the zero TIMESTAMP; 1970-01-01 00:00:00 UTC itself
        # lies outside TIMESTAMP's range, so nothing real is lost.
        return None
    return naive.replace(tzinfo=UTC)


def _string(column: Column, value: Any) -> str:
    family = column.family
    if family is Family.ENUM and isinstance(value, int):
        return column.members[value - 1] if 0 < value <= len(column.members) else ""
    if family is Family.SET:
        if isinstance(value, int):
            return ",".join(m for i, m in enumerate(column.members) if value & (1 << i))
        if isinstance(value, (set, frozenset, list, tuple)):
            chosen = {_text(v) for v in value}
            return ",".join(m for m in column.members if m in chosen)
    if family is Family.JSON and not isinstance(value, (str, bytes, bytearray)):
        return _mysql_json(value)
    return _text(value, column.charset)


def _binary(column: Column, value: Any) -> bytes:
    data = value.encode("utf-8", errors="surrogateescape") if isinstance(value, str) else bytes(value)
    if column.data_type == "binary" and column.length and len(data) < column.length:
        # The server pads BINARY(n) with 0x00 and returns the padding; the binlog drops it.
        data = data.ljust(column.length, b"\x00")
    return data


def canonical_value(column: Column, value: Any) -> Any:
    """The canonical Python value of one source value.

    Accepts what any path produces: raw text-protocol values (``str``/``bytes``), PyMySQL's
    converted values, and python-mysql-replication's decoded values.
    """
    if value is None:
        return None
    family = column.family
    if column.zero_dates and family in TEMPORAL:
        return temporal_text(column, value)
    if family is Family.INTEGER:
        return _integer(column, value)
    if family is Family.DECIMAL:
        return _decimal(column, value)
    if family is Family.FLOAT:
        return _float32(float(_text(value) if isinstance(value, (str, bytes)) else value))
    if family is Family.DOUBLE:
        return float(_text(value) if isinstance(value, (str, bytes)) else value)
    if family is Family.BIT:
        return _bit(column, value)
    if family is Family.YEAR:
        year = int(_text(value)) if isinstance(value, (str, bytes)) else int(value)
        return 0 if year == 1900 else year  # the binlog library reports YEAR 0000 as 1900
    if family is Family.DATE:
        return _date(value)
    if family is Family.DATETIME:
        return _datetime(value)
    if family is Family.TIMESTAMP:
        return _timestamp(value)
    if family is Family.TIME:
        if isinstance(value, dt.timedelta):
            return value
        if isinstance(value, dt.time):
            return dt.timedelta(
                hours=value.hour, minutes=value.minute, seconds=value.second, microseconds=value.microsecond
            )
        return _parse_time(_text(value))
    if family in (Family.BINARY, Family.GEOMETRY):
        return _binary(column, value)
    return _string(column, value)


def binlog_row_to_canonical(schema: TableSchema, values: Mapping[str, Any]) -> dict[str, Any]:
    """A decoded binlog row image (column name -> value) in canonical form.

    Equal, column by column, to ``rows_to_arrow(...).to_pylist()`` for the same row.
    """
    names, converters = _row_converters(schema.columns)
    get = values.get
    return {name: convert(get(name)) for name, convert in zip(names, converters, strict=True)}


# Per-column converters for binlog images: the value types the binlog library produces for a
# family pass through unchanged when canonical_value would return them as they are; anything
# else goes to canonical_value. Cached per columns tuple (schemas are immutable).
_CONVERTERS: dict[int, tuple[tuple[Column, ...], tuple[str, ...], tuple[Any, ...]]] = {}


def _passing(column: Column, kind: type, check: Any = None) -> Any:
    def convert(value: Any) -> Any:
        if value is None:
            return None
        if type(value) is kind and (check is None or check(value)):
            return value
        return canonical_value(column, value)

    return convert


def _converter(column: Column) -> Any:
    family = column.family
    if column.zero_dates:
        return lambda value: canonical_value(column, value)
    if family is Family.INTEGER and not column.unsigned:
        return _passing(column, int)
    if family is Family.INTEGER and column.integer_bits < 64:
        return _passing(column, int, lambda v: v >= 0)
    if family in (Family.STRING, Family.ENUM, Family.SET, Family.JSON):
        return _passing(column, str)
    if family is Family.DOUBLE:
        return _passing(column, float)
    if family is Family.DATETIME:
        return _passing(column, dt.datetime, lambda v: v.tzinfo is None)
    if family is Family.DATE:
        return _passing(column, dt.date)
    return lambda value: canonical_value(column, value)


def _row_converters(columns: tuple[Column, ...]) -> tuple[tuple[str, ...], tuple[Any, ...]]:
    cached = _CONVERTERS.get(id(columns))
    if cached is None or cached[0] is not columns:
        if len(_CONVERTERS) > 1024:
            _CONVERTERS.clear()
        cached = (columns, tuple(c.name for c in columns), tuple(_converter(c) for c in columns))
        _CONVERTERS[id(columns)] = cached
    return cached[1], cached[2]
