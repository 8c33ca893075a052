"""The canonical text of a row, rendered by the database itself, the same on every engine.

A chunk's checksum is an order-independent aggregate of a hash of each row's canonical text,
computed by the database (``checksum.py``). The text must therefore be byte-identical whether a
MariaDB/MySQL source or sink renders it, or a PostgreSQL sink renders the same values in the
types ``sinks.postgres.pg_type`` chose for them. One rendering per type family:

=====================  ===================================================================
family                 canonical text
=====================  ===================================================================
integers, YEAR         decimal integer (``-5``, ``18446744073709551615``, YEAR ``0000`` → ``0``)
DECIMAL                decimal, trailing fractional zeros and a bare point removed
                       (``1.50`` → ``1.5``, ``10.00`` → ``10``)
FLOAT / DOUBLE         ``<m>e<x>``: ``m`` the value rounded to 7 (FLOAT) / 14 (DOUBLE)
                       significant digits as an integer, ``x`` = ``floor(log10|v|)``; ``0``
                       for zero (see below)
BIT(1)                 ``0`` / ``1`` (PostgreSQL ``boolean``)
BIT(n)                 lower-case hex of the value without leading zeros (``bytea`` there)
DATE                   ``YYYY-MM-DD``
DATETIME / TIMESTAMP   ``YYYY-MM-DD HH:MM:SS.ffffff`` (always 6 digits; TIMESTAMP in UTC)
TIME                   signed microseconds (``-1500000``; ``interval`` there)
strings, ENUM, SET,    ``<characters>:<text>`` — the text (JSON exactly as stored, ENUM its
JSON                   label, SET its labels joined by ``,``), prefixed by its length so no
                       two rows can render alike by shifting text between columns
BINARY, BLOB, GEOMETRY upper-case hex of the bytes (GEOMETRY: its WKB)
=====================  ===================================================================

NULL renders as ``N`` (no non-null rendering is ``N``), and so do the zero and partly-zero dates
that the pipeline stores as NULL (``sparkcdc.mysql.types``). Fields are joined with ``|``; only
length-prefixed text can contain ``|``.

Floating point. MariaDB prints the shortest round-trip digits of a double in its own format,
PostgreSQL in another (``1e+20`` vs ``1e20``, different switch-over to exponents) and converts
``float8`` to ``numeric`` with 15 digits, so neither text nor a numeric cast agrees. Both engines
compute the rendering above with the same IEEE-754 operations instead (``log10``, ``pow``, one
exact multiplication or division by a power of ten, ``rint``), which give identical results for
identical stored bits on the same C library. Values that differ only beyond the 7th (FLOAT) /
14th (DOUBLE) significant digit compare equal — a documented blind spot; engines with different
math libraries may, very rarely, round a value whose digits lie on a rounding edge differently
and report a false difference (the re-check then confirms it, a repair rewrites it harmlessly).
"""

from __future__ import annotations

import datetime as dt
import decimal
import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from sparkcdc.mysql.columns import Column, Family

__all__ = [
    "HASH_HEX_DIGITS",
    "NULL_MARK",
    "SEPARATOR",
    "mysql_row_text",
    "mysql_value",
    "postgres_row_text",
    "postgres_value",
    "python_row_text",
    "python_value",
    "row_hash",
]

HASH_HEX_DIGITS = 15  # a row hash is the first 60 bits of the MD5 of its canonical text
NULL_MARK = "N"
SEPARATOR = "|"
FLOAT_DIGITS = 7
DOUBLE_DIGITS = 14
_TEXT_FAMILIES = {Family.STRING, Family.ENUM, Family.SET, Family.JSON}


def _digits(column: Column) -> int:
    return FLOAT_DIGITS if column.family is Family.FLOAT else DOUBLE_DIGITS


# -- MariaDB / MySQL ---------------------------------------------------------------------------


def _mysql_zero_date(name: str) -> str:
    return f"YEAR({name}) = 0 OR MONTH({name}) = 0 OR DAYOFMONTH({name}) = 0"


def _mysql_float(name: str, digits: int) -> str:
    exponent = f"CAST(FLOOR(LOG10(ABS({name}))) AS SIGNED)"
    shift = f"({exponent} - {digits - 1})"
    # Subnormal values need a factor beyond 1e308 (an overflow): applied in two steps.
    scaled = (
        f"IF({shift} >= 0, {name} / POW(10, {shift}), IF({shift} >= -300, {name} * POW(10, -{shift}), "
        f"{name} * 1e300 * POW(10, -{shift} - 300)))"
    )
    return f"IF({name} = 0, '0', CONCAT(CAST(ROUND({scaled}) AS SIGNED), 'e', {exponent}))"


def mysql_value(column: Column) -> str:
    """SQL rendering ``column``'s canonical text on MariaDB/MySQL; NULL when the value is null."""
    name = column.quoted()
    family = column.family
    if family is Family.INTEGER:
        return f"CAST({name} AS CHAR)"
    if family is Family.YEAR:
        return f"CAST({name} + 0 AS CHAR)"
    if family is Family.DECIMAL:
        if int(column.scale or 0) == 0:
            return f"CAST({name} AS CHAR)"
        return f"TRIM(TRAILING '.' FROM TRIM(TRAILING '0' FROM CAST({name} AS CHAR)))"
    if family in (Family.FLOAT, Family.DOUBLE):
        # FLOAT widens to the double of the same value exactly.
        value = f"({name} + 0E0)" if family is Family.FLOAT else name
        return _mysql_float(value, _digits(column))
    if family is Family.BIT:
        if column.bit_width == 1:
            return f"CAST({name} + 0 AS CHAR)"
        return f"LOWER(HEX({name} + 0))"
    if family is Family.DATE:
        return f"IF({_mysql_zero_date(name)}, NULL, DATE_FORMAT({name}, '%Y-%m-%d'))"
    if family in (Family.DATETIME, Family.TIMESTAMP):
        # Sessions run with time_zone '+00:00': TIMESTAMP values print as UTC.
        return f"IF({_mysql_zero_date(name)}, NULL, DATE_FORMAT({name}, '%Y-%m-%d %H:%i:%s.%f'))"
    if family is Family.TIME:
        magnitude = (
            f"((HOUR({name}) * 3600 + MINUTE({name}) * 60 + SECOND({name})) * 1000000 + MICROSECOND({name}))"
        )
        return f"CAST(IF({name} < TIME'00:00:00', -{magnitude}, {magnitude}) AS CHAR)"
    if family is Family.BINARY:
        return f"HEX({name})"
    if family is Family.GEOMETRY:
        return f"HEX(ST_AsBinary({name}))"
    # Hashed as UTF-8 bytes, as PostgreSQL and Python hash them (CONVERT is skipped when it
    # would change nothing: it costs a third of a text column's rendering).
    text = name if (column.charset or "").lower() == "utf8mb4" else f"CONVERT({name} USING utf8mb4)"
    return f"CONCAT(CHAR_LENGTH({text}), ':', {text})"


def mysql_row_text(columns: Sequence[Column]) -> str:
    """SQL rendering a row's canonical text on MariaDB/MySQL."""
    fields = [f"COALESCE({mysql_value(c)}, '{NULL_MARK}')" for c in columns]
    return f"CONCAT_WS('{SEPARATOR}', " + ", ".join(fields) + ")"


# -- PostgreSQL (types of sinks.postgres.pg_type) ----------------------------------------------


def _pg_float(name: str, digits: int) -> str:
    exponent = f"floor(log(abs({name})))::bigint"
    shift = f"({exponent} - {digits - 1})"
    scaled = (
        f"CASE WHEN {shift} >= 0 THEN {name} / power(10::float8, {shift}) "
        f"WHEN {shift} >= -300 THEN {name} * power(10::float8, -{shift}) "
        f"ELSE {name} * 1e300::float8 * power(10::float8, -{shift} - 300) END"
    )
    return f"CASE WHEN {name} = 0 THEN '0' ELSE round({scaled})::bigint::text || 'e' || {exponent}::text END"


def postgres_value(column: Column, quote: str) -> str:
    """SQL rendering the canonical text of ``column`` stored as ``pg_type(column)``; ``quote`` is
    the quoted column name."""
    name = quote
    family = column.family
    if family in (Family.INTEGER, Family.YEAR):
        return f"{name}::text"
    if family is Family.DECIMAL:
        return f"trim_scale({name})::text"
    if family in (Family.FLOAT, Family.DOUBLE):
        return _pg_float(f"{name}::float8", _digits(column))
    if family is Family.BIT:
        if column.bit_width == 1:
            return f"CASE WHEN {name} THEN '1' WHEN NOT {name} THEN '0' END"
        digits = f"coalesce(nullif(ltrim(encode({name}, 'hex'), '0'), ''), '0')"
        return f"CASE WHEN {name} IS NOT NULL THEN {digits} END"
    if family is Family.DATE:
        return f"to_char({name}, 'YYYY-MM-DD')"
    if family is Family.DATETIME:
        return f"to_char({name}, 'YYYY-MM-DD HH24:MI:SS.US')"
    if family is Family.TIMESTAMP:
        return f"to_char({name} AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US')"
    if family is Family.TIME:
        return f"(extract(epoch FROM {name}) * 1000000)::bigint::text"
    if family in (Family.BINARY, Family.GEOMETRY):
        return f"upper(encode({name}, 'hex'))"
    return f"char_length({name}::text)::text || ':' || {name}::text"


def postgres_row_text(columns: Sequence[Column], quote: object) -> str:
    """SQL rendering a row's canonical text on PostgreSQL; ``quote`` quotes identifiers.

    Built with ``||`` rather than ``concat_ws``, whose 100-argument limit a wide table exceeds.
    """
    assert callable(quote)
    fields = [f"coalesce({postgres_value(c, str(quote(c.name)))}, '{NULL_MARK}')" for c in columns]
    return f" || '{SEPARATOR}' || ".join(fields)


# -- Python, from canonical values (sparkcdc.mysql.types), e.g. binlog row images --------------


def _python_float(value: float, digits: int) -> str:
    if value == 0:
        return "0"
    exponent = math.floor(math.log10(abs(value)))
    shift = exponent - (digits - 1)
    if shift >= 0:
        scaled = value / math.pow(10, shift)
    elif shift >= -300:
        scaled = value * math.pow(10, -shift)
    else:
        scaled = value * 1e300 * math.pow(10, -shift - 300)
    return f"{round(scaled)}e{exponent}"  # round() on a float is rint(): half to even


def _python_decimal(value: decimal.Decimal) -> str:
    text = format(value, "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def _python_temporal(value: dt.date) -> str:
    date = f"{value.year:04d}-{value.month:02d}-{value.day:02d}"
    if not isinstance(value, dt.datetime):
        return date
    if value.tzinfo is not None:
        value = value.astimezone(dt.timezone.utc)
    return f"{date} {value.hour:02d}:{value.minute:02d}:{value.second:02d}.{value.microsecond:06d}"


_DATE_TEXT = re.compile(r"(\d{4})-(\d{2})-(\d{2})(?: (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?)?")


def _python_temporal_text(column: Column, text: str) -> str | None:
    """A ``zero_dates`` column's MySQL text (mysql/zero_dates.py) as ``_python_temporal`` renders
    the same value; a zero or partly-zero date is NULL, as the SQL renderings say."""
    match = _DATE_TEXT.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"column {column.name!r}: {text!r} is not a date")
    year, month, day, hour, minute, second, fraction = match.groups()
    if int(year) == 0 or int(month) == 0 or int(day) == 0:
        return None
    date = f"{year}-{month}-{day}"
    if column.family is Family.DATE:
        return date
    return f"{date} {hour or '00'}:{minute or '00'}:{second or '00'}.{(fraction or '').ljust(6, '0')}"


def python_value(column: Column, value: Any) -> str | None:
    """The canonical text of a canonical Python value (as ``mysql_value`` renders it in SQL)."""
    if value is None:
        return None
    family = column.family
    if family in (Family.INTEGER, Family.YEAR):
        return str(int(value))
    if family is Family.DECIMAL:
        return _python_decimal(decimal.Decimal(value))
    if family in (Family.FLOAT, Family.DOUBLE):
        return _python_float(float(value), _digits(column))
    if family is Family.BIT:
        if isinstance(value, bool) or column.bit_width == 1:
            return "1" if value else "0"
        number = int.from_bytes(value, "big") if isinstance(value, bytes) else int(value)
        return format(number, "x")
    if family in (Family.DATE, Family.DATETIME, Family.TIMESTAMP):
        return _python_temporal_text(column, value) if isinstance(value, str) else _python_temporal(value)
    if family is Family.TIME:
        return str(value // dt.timedelta(microseconds=1))
    if family is Family.GEOMETRY:
        return bytes(value)[4:].hex().upper()  # the WKB, as ST_AsBinary (the SRID is not compared)
    if family is Family.BINARY:
        return bytes(value).hex().upper()
    text = str(value)
    return f"{len(text)}:{text}"


def python_row_text(columns: Sequence[Column], row: Mapping[str, Any]) -> str:
    """A canonical row image's text, equal to what ``mysql_row_text`` renders for the stored row."""
    fields = [python_value(c, row.get(c.name)) for c in columns]
    return SEPARATOR.join(NULL_MARK if f is None else f for f in fields)


def row_hash(text: str) -> int:
    """The 60-bit row hash the checksum queries sum, of a canonical row text."""
    return int(hashlib.md5(text.encode("utf-8")).hexdigest()[:HASH_HEX_DIGITS], 16)
