"""python-mysql-replication's DATE, DATETIME2, TIME2 and latin1 string binlog decoding, replaced.

The library decodes column values in private, name-mangled methods of ``RowsEvent``
(``__read_values_name`` dispatches on the column type), which ``patch_rows_event`` replaces:

* DATE and DATETIME2: zero and partly-zero dates (``0000-00-00``, ``2024-00-10``) decode to None
  upstream, so a NULL and a zero date would be one value. The replacements return MySQL's text for
  a date Python cannot hold; ``types.canonical_value`` turns that text into NULL for targets that
  cannot store it and keeps it for those that can (mysql/zero_dates.py). Valid dates decode as before.
* TIME2: upstream is wrong for negative values with a fractional part (``-838:59:59.999999``).
* Strings of latin1 columns: upstream decodes them with Python's strict ``cp1252``, which refuses
  the five bytes Windows-1252 leaves unassigned, so a row holding one would stop its table; MySQL
  reads them as C1 controls. The replacement decodes them with the function the caller passes
  (core/charsets.py's, as this package imports nothing of sparkcdc's); strings of every other
  character set go to upstream's method unchanged.

Guarded (compat/guard.py): the release pinned in pyproject.toml, and the recorded source of the four
replaced methods and of the two the replacements depend on — the dispatcher that calls them (were
it to stop calling one, the replacement would silently stop applying) and ``__read_fsp``, which the
DATETIME2 replacement calls.
"""

from __future__ import annotations

import datetime as dt
import inspect
from collections.abc import Callable
from typing import Any

from pymysqlreplication.row_event import RowsEvent

from sparkcdc.compat.guard import Upstream, check

__all__ = ["DIGESTS", "PATCH", "UPSTREAM", "check_upstream", "patch_rows_event", "upstream_sources"]

PATCH = "mysql_replication (RowsEvent DATE, DATETIME2, TIME2 and latin1 string decoding)"
UPSTREAM = Upstream("mysql-replication", "==1.0.17")
# sha256[:16] of each RowsEvent method's source (inspect.getsource) in the release above.
DIGESTS = {
    "_RowsEvent__read_date": "65d751345dbae9e3",
    "_RowsEvent__read_datetime2": "9e8a5ca79a338fff",
    "_RowsEvent__read_time2": "05d86021ef4d9056",
    "_RowsEvent__read_string": "c9e2338ae8f6178e",
    "_RowsEvent__read_values_name": "2a62ff64d01fbff0",
    "_RowsEvent__read_fsp": "908044d5321e96de",
}


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


def _read_time2(self: Any, column: Any) -> dt.timedelta:
    """The value is stored big-endian with a sign offset as ``hms << (8 * fraction bytes) |
    fraction``, negated as a whole for negative times."""
    fraction_bytes = (int(column.fsp) + 1) // 2
    size = 3 + fraction_bytes
    raw = int.from_bytes(self.packet.read(size), "big") - (1 << (8 * size - 1))
    negative = raw < 0
    raw = abs(raw)
    fraction = raw & ((1 << (8 * fraction_bytes)) - 1)
    hms = raw >> (8 * fraction_bytes)
    micros = ((hms >> 12) & 0x3FF) * 3600 + ((hms >> 6) & 0x3F) * 60 + (hms & 0x3F)
    micros = micros * 1_000_000 + fraction * (1, 10_000, 100, 1)[fraction_bytes]
    return dt.timedelta(microseconds=-micros if negative else micros)


# The names a latin1 column's charset has in the library: MySQL's own (a table map without
# charsets, completed by mysql/binlog/reader.py) or PyMySQL's codec for it (the map's metadata).
_LATIN1_NAMES = frozenset({"latin1", "cp1252"})


# How latin1 bytes decode: set by ``patch_rows_event``.
_LATIN1: dict[str, Callable[[bytes], str]] = {}


def _read_string(self: Any, size: int, column: Any) -> Any:
    if str(column.character_set_name or "").lower() not in _LATIN1_NAMES:
        return _ORIGINALS["_RowsEvent__read_string"](self, size, column)
    return _LATIN1["decode"](self.packet.read_length_coded_pascal_string(size))


_REPLACEMENTS: dict[str, Callable[..., Any]] = {
    "_RowsEvent__read_date": _read_date,
    "_RowsEvent__read_datetime2": _read_datetime2,
    "_RowsEvent__read_time2": _read_time2,
    "_RowsEvent__read_string": _read_string,
}
# The library's own methods, kept when replaced: the guard hashes upstream code, not ours.
_ORIGINALS: dict[str, Any] = {}


def _source(name: str) -> str | None:
    function = _ORIGINALS.get(name, vars(RowsEvent).get(name))
    try:
        return inspect.getsource(function) if function is not None else None
    except (OSError, TypeError):  # no source file installed, or not a function any more
        return None


def upstream_sources() -> dict[str, str | None]:
    """The library's source of every method the patch replaces or relies on (None: not there)."""
    return {name: _source(name) for name in DIGESTS}


def check_upstream() -> None:
    """Raise ``UpstreamChangedError`` unless the installed library is the code the patch was written for."""
    check(UPSTREAM, PATCH, upstream_sources(), DIGESTS)


def patch_rows_event(latin1: Callable[[bytes], str]) -> None:
    """Replace ``RowsEvent``'s DATE, DATETIME2, TIME2 and latin1 string decoding, the latter by
    ``latin1`` (guarded; idempotent)."""
    check_upstream()
    _LATIN1["decode"] = latin1
    for name, replacement in _REPLACEMENTS.items():
        _ORIGINALS.setdefault(name, vars(RowsEvent)[name])
        setattr(RowsEvent, name, replacement)
