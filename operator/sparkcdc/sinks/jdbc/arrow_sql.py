"""Canonical Arrow rows rendered as MySQL multi-row ``INSERT`` statements, column by column.

Every value's SQL literal is the text PyMySQL's ``Connection.escape`` gives it (``NULL``, numbers
as written, quoted and backslash-escaped strings, ``'YYYY-MM-DD hh:mm:ss[.ffffff]'``), so the
rows the server stores are the ones ``executemany`` would have stored; Arrow kernels compute the
literals instead of one Python call per value. DOUBLE values are Arrow's shortest text that reads
back as the same double, with ``e0`` added where it has no exponent (as ``escape`` does, so the
server reads a double, not a DECIMAL): the same values, not always the same text (``1e0`` where
``escape`` writes ``1.0e0``). Types without a kernel rendering (FLOAT, bytes, durations) go
through ``Connection.escape`` value by value.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pymysql.constants import SERVER_STATUS

from sparkcdc.mysql.arrow_values import text_scalar
from sparkcdc.sinks.arrow_json import join_text, string_data, text_bytes, timestamp_text

__all__ = ["insert_statements", "literal_parts", "sql_literals"]

_NULL = text_scalar("NULL")
# PyMySQL's escape_string table: character -> escape, for servers with backslash escapes.
_BACKSLASH_ESCAPES = {
    "\\": "\\\\",
    "\0": "\\0",
    "\n": "\\n",
    "\r": "\\r",
    "\032": "\\Z",
    '"': '\\"',
    "'": "\\'",
}


def _naive(array: pa.Array) -> pa.Array:
    # Sessions run in UTC: a TIMESTAMP is written as its UTC wall clock.
    return array.cast(pa.timestamp(array.type.unit)) if array.type.tz is not None else array


def _per_value(conn: Any, array: pa.Array) -> pa.Array:
    if pa.types.is_timestamp(array.type):
        array = _naive(array)
    escape = conn.escape
    return pa.array([escape(v) for v in array.to_pylist()], type=pa.string())


def _strings(conn: Any, array: pa.Array) -> tuple[str, pa.Array, str]:
    if not pa.types.is_string(array.type):
        array = array.cast(pa.string())
    data = string_data(array)
    if conn.server_status & SERVER_STATUS.SERVER_STATUS_NO_BACKSLASH_ESCAPES:
        escapes = {"'": "''"}
    else:
        escapes = _BACKSLASH_ESCAPES
    for char, escaped in escapes.items():  # backslash first: the others add backslashes
        if data.size and bool((data == ord(char)).any()):
            array = pc.replace_substring(array, char, escaped)
    return "'", array, "'"


def _decimals(conn: Any, array: pa.Array) -> tuple[str, pa.Array, str]:
    text = array.cast(pa.string())
    # format(Decimal, "f") never uses an exponent; Arrow does below 1E-6 (e.g. 0E-10).
    if array.type.scale > 6 and pc.any(pc.match_substring(text, "E")).as_py():
        return "", _per_value(conn, array), ""
    return "", text, ""


def _doubles(conn: Any, array: pa.Array) -> tuple[str, pa.Array, str]:
    if not pc.all(pc.is_finite(array)).as_py():  # escape refuses them, as the server would
        return "", _per_value(conn, array), ""
    text = array.cast(pa.string())
    return "", pc.binary_join_element_wise(text, pc.if_else(pc.match_substring(text, "e"), "", "e0"), ""), ""


def _timestamps(array: pa.Array) -> tuple[str, pa.Array, str]:
    return "'", timestamp_text(array), "'"


def _literal_parts(conn: Any, array: pa.Array) -> tuple[str, pa.Array, str]:
    typ = array.type
    if pa.types.is_integer(typ):
        return "", array.cast(pa.string()), ""
    if pa.types.is_boolean(typ):
        return "", array.cast(pa.int8()).cast(pa.string()), ""
    if pa.types.is_decimal(typ):
        return _decimals(conn, array)
    if pa.types.is_float64(typ):
        return _doubles(conn, array)
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        return _strings(conn, array)
    if pa.types.is_date32(typ):
        return "'", array.cast(pa.string()), "'"
    if pa.types.is_timestamp(typ) and typ.unit == "us" and typ.tz in (None, "UTC", "+00:00"):
        return _timestamps(array)
    return "", _per_value(conn, array), ""


def literal_parts(conn: Any, array: pa.Array | pa.ChunkedArray) -> tuple[str, pa.Array, str]:
    """``(prefix, body, suffix)``: each value's literal is ``prefix + body[i] + suffix``; when
    ``array`` has nulls the prefix and suffix are empty and null rows read ``NULL``."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if array.null_count == len(array):
        return "", pa.array(["NULL"] * len(array), type=pa.string()), ""
    try:
        prefix, body, suffix = _literal_parts(conn, array)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowCapacityError):
        prefix, body, suffix = "", _per_value(conn, array), ""
    if not array.null_count:
        return prefix, body, suffix
    if prefix or suffix:
        body = join_text(prefix, body, suffix)
    return "", pc.fill_null(body, _NULL), ""


def sql_literals(conn: Any, array: pa.Array | pa.ChunkedArray) -> pa.Array:
    """The SQL literal of every value of ``array``, as ``conn.escape`` writes it."""
    prefix, body, suffix = literal_parts(conn, array)
    return join_text(prefix, body, suffix) if prefix or suffix else body


def _row_texts(conn: Any, batch: pa.Table) -> pa.Array:
    """``(v1,v2,...),`` for every row: the rows of a VALUES list, each followed by a comma."""
    pieces: list[pa.Array | str] = []
    text = "("
    for i in range(batch.num_columns):
        prefix, body, suffix = literal_parts(conn, batch.column(i))
        pieces += [text + ("" if i == 0 else ",") + prefix, body]
        text = suffix
    return join_text(*pieces, text + "),")


def insert_statements(
    conn: Any, head: str, batch: pa.Table, max_rows: int, max_bytes: int, tail: str = ""
) -> Iterator[bytes]:
    """``head`` (``INSERT INTO t (cols) VALUES ``) followed by the rows of ``batch`` and then
    ``tail`` (e.g. ``ON DUPLICATE KEY UPDATE …``), as statements of at most ``max_rows`` rows
    and (unless one row alone is longer) ``max_bytes`` bytes, in row order."""
    if batch.num_rows == 0:
        return
    rows = _row_texts(conn, batch)
    data = text_bytes(rows)
    raw = np.frombuffer(rows.buffers()[1], dtype=np.int32, count=len(rows) + 1, offset=rows.offset * 4)
    offsets = raw.astype(np.int64) - int(raw[0])
    prefix = head.encode("utf-8")
    suffix = tail.encode("utf-8")
    budget = max_bytes - len(prefix) - len(suffix) + 1  # the last row's comma is dropped
    start, count = 0, len(rows)
    max_rows = max(1, max_rows)
    while start < count:
        # The most rows from ``start`` whose text fits the budget, at least one.
        limit = min(count, start + max_rows)
        end = int(np.searchsorted(offsets[start + 1 : limit + 1], offsets[start] + budget, side="right"))
        end = start + max(1, end)
        yield prefix + bytes(data[offsets[start] : offsets[end] - 1]) + suffix
        start = end
