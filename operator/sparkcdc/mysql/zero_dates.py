"""Zero and partly-zero dates kept for targets that can store them (MySQL and MariaDB).

MySQL stores ``0000-00-00``, ``2024-00-10``, ``0000-00-00 00:00:00`` and the zero TIMESTAMP, but no
Python, Arrow, PostgreSQL or Delta date type can hold them, so the canonical form of a date is
NULL for them (types.py). A MySQL/MariaDB replica can hold them, and a NOT NULL column there must:
for such targets the pipeline flags the table's DATE/DATETIME/TIMESTAMP columns (``Column.zero_dates``)
and their canonical value becomes the text MySQL prints for the value (``YYYY-MM-DD`` or
``YYYY-MM-DD hh:mm:ss[.f…]`` with the column's fractional digits; TIMESTAMP in UTC), zero or not.
The sink writes that text back as a literal, so the replica stores the same value.

Key columns are never flagged: split boundaries and the merge compare key values as the source
orders them, and a key is a date type only in its canonical form. Rule 7 holds: the snapshot reads
the server's own text, the binlog's decoded values are printed here the same way, and the binlog
reader reports zero dates as their text (compat/mysql_replication.py) instead of the library's None.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from typing import TYPE_CHECKING, Any

from sparkcdc.mysql.columns import Column, Family

if TYPE_CHECKING:
    from sparkcdc.mysql.schema import TableSchema

__all__ = ["TEMPORAL", "keep_zero_dates", "keeps_zero_dates", "rendered_text", "temporal_text", "zero_text"]

TEMPORAL = frozenset({Family.DATE, Family.DATETIME, Family.TIMESTAMP})
_EPOCH = dt.datetime(1970, 1, 1)
_UTC = dt.timezone.utc


def keeps_zero_dates(sink_type: str, scheme: str | None) -> bool:
    """Whether a sink stores zero dates: JDBC sinks on MySQL or MariaDB."""
    return sink_type == "jdbc" and scheme in ("mysql", "mariadb")


def keep_zero_dates(schema: TableSchema) -> TableSchema:
    """``schema`` with its non-key DATE/DATETIME/TIMESTAMP columns read as MySQL text."""
    keys = set(schema.row_key) | set(schema.chunk_key) | set(schema.primary_key)
    columns = tuple(
        dataclasses.replace(c, zero_dates=True) if c.family in TEMPORAL and c.name not in keys else c
        for c in schema.columns
    )
    if columns == schema.columns:
        return schema
    return dataclasses.replace(schema, columns=columns)


def _fraction(column: Column, micros: int) -> str:
    digits = min(int(column.datetime_precision or 0), 6)
    return "." + f"{micros:06d}"[:digits] if digits else ""


def zero_text(
    column: Column, year: int, month: int, day: int, clock: tuple[int, int, int], micros: int
) -> str:
    """MySQL's text of a (possibly invalid) date of ``column``'s type."""
    date = f"{year:04d}-{month:02d}-{day:02d}"
    if column.family is Family.DATE:
        return date
    hour, minute, second = clock
    return f"{date} {hour:02d}:{minute:02d}:{second:02d}{_fraction(column, micros)}"


def _from_datetime(column: Column, value: dt.date) -> str:
    if not isinstance(value, dt.datetime):
        return zero_text(column, value.year, value.month, value.day, (0, 0, 0), 0)
    if value.tzinfo is not None:
        value = value.astimezone(_UTC).replace(tzinfo=None)
    if column.family is Family.TIMESTAMP and value == _EPOCH:
        # Epoch 0 is how the binlog stores the zero TIMESTAMP (outside TIMESTAMP's range itself).
        return zero_text(column, 0, 0, 0, (0, 0, 0), 0)
    clock = (value.hour, value.minute, value.second)
    return zero_text(column, value.year, value.month, value.day, clock, value.microsecond)


def temporal_text(column: Column, value: Any) -> str:
    """The canonical value of a ``zero_dates`` column: MySQL's text for ``value``.

    Text (the snapshot's, or the binlog reader's for a zero date) is the server's printing already;
    decoded dates and datetimes (the binlog's, PyMySQL's) are printed as the server prints them.
    """
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("ascii").strip()
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, dt.date):
        return _from_datetime(column, value)
    raise TypeError(f"column {column.name!r}: no date text for {type(value).__name__} {value!r}")


_RENDERED = re.compile(r"(\d{4})-(\d{2})-(\d{2})(?: (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?)?")


def rendered_text(column: Column, value: str) -> str:
    """MySQL's text for a date the Go catch-up decoder rendered (go-mysql's printing: the fields as
    stored, zero ones included, TIMESTAMP in UTC with the zero TIMESTAMP as all zeros), reprinted
    with the column's own fractional digits so it equals what the snapshot and the Python decoder
    give for the same value."""
    match = _RENDERED.fullmatch(value.strip())
    if match is None:
        raise ValueError(f"column {column.name!r}: the decoder rendered {value!r}, not a date")
    year, month, day, hour, minute, second, fraction = match.groups()
    clock = (int(hour or 0), int(minute or 0), int(second or 0))
    micros = int((fraction or "").ljust(6, "0"))
    return zero_text(column, int(year), int(month), int(day), clock, micros)
