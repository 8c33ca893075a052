"""Zero and partly-zero dates from the binlog as MySQL prints them, not as None.

python-mysql-replication decodes ``0000-00-00`` and ``2024-00-10`` (DATE, DATETIME2) to None, so a
NULL and a zero date would be one value. These replacements return MySQL's text for a date that
Python cannot hold; ``types.canonical_value`` turns that text into NULL for targets that cannot
store it and keeps it for those that can (zero_dates.py). Valid dates decode as before.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from pymysqlreplication.row_event import RowsEvent

__all__ = ["install"]


def _read_date(self: Any) -> dt.date | str:
    raw = self.packet.read_uint24()
    year, month, day = (raw >> 9) & 0x7FFF, (raw >> 5) & 0x0F, raw & 0x1F
    try:
        return dt.date(year, month, day)
    except ValueError:
        return f"{year:04d}-{month:02d}-{day:02d}"


def _read_datetime2(self: Any, column: Any) -> dt.datetime | str:
    # 1 bit sign, 17 bits year*13+month, 5 day, 5 hour, 6 minute, 6 second; then the fraction.
    data = self.packet.read_int_be_by_size(5)
    year_month = (data >> 22) & 0x1FFFF
    day, hour = (data >> 17) & 0x1F, (data >> 12) & 0x1F
    minute, second = (data >> 6) & 0x3F, data & 0x3F
    micros = self._RowsEvent__read_fsp(column)
    year, month = divmod(year_month, 13)
    try:
        return dt.datetime(year, month, day, hour, minute, second, micros)
    except ValueError:
        digits = int(getattr(column, "fsp", 0) or 0)
        fraction = "." + f"{micros:06d}"[:digits] if digits else ""
        return f"{year:04d}-{month:02d}-{day:02d} {hour:02d}:{minute:02d}:{second:02d}{fraction}"


def install() -> None:
    """Replace the library's DATE and DATETIME2 decoding (idempotent)."""
    RowsEvent._RowsEvent__read_date = _read_date
    RowsEvent._RowsEvent__read_datetime2 = _read_datetime2
