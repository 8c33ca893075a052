"""Canonical Arrow columns rendered as JSON text column by column.

``json_column(array)`` is, value for value, the text ``values.dumps`` gives each element of
``array.to_pylist()`` — exact decimals as strings, bytes as base64, temporal values in ISO form —
but computed by Arrow kernels instead of one Python call per value. Types without a kernel
rendering (floats, bytes, durations) and strings holding control characters take the per-value
path, so the output never differs from ``dumps``; the unit tests compare the two on every type.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparkcdc.mysql.arrow_values import bool_array, text_scalar
from sparkcdc.sinks.values import dumps

__all__ = [
    "Rendering",
    "join_text",
    "json_column",
    "json_parts",
    "string_data",
    "text_bytes",
    "timestamp_text",
]

_NULL = text_scalar("null")
_EMPTY = text_scalar("")


def join_text(*pieces: pa.Array | str) -> pa.Array:
    """Row-wise concatenation of string arrays and constant strings (no separator)."""
    args = [text_scalar(p) if isinstance(p, str) else p for p in pieces]
    return pc.binary_join_element_wise(*args, _EMPTY)


def string_data(array: pa.Array) -> np.ndarray:
    """The UTF-8 bytes of a string array's values (including those under nulls), as uint8."""
    offsets_buf, data_buf = array.buffers()[1], array.buffers()[2]
    if data_buf is None or len(array) == 0:
        return np.zeros(0, dtype=np.uint8)
    width = np.int64 if pa.types.is_large_string(array.type) else np.int32
    start = array.offset * np.dtype(width).itemsize
    offsets = np.frombuffer(offsets_buf, dtype=width, count=len(array) + 1, offset=start)
    return np.frombuffer(data_buf, dtype=np.uint8)[int(offsets[0]) : int(offsets[-1])]


def text_bytes(array: pa.Array) -> memoryview:
    """The concatenated UTF-8 text of a string array without nulls: its values back to back."""
    data = string_data(array)
    return data.data if data.size else memoryview(b"")


# A rendering is (prefix, body, suffix): every non-null value's JSON text is prefix + body +
# suffix. Callers that assemble whole lines fold the constant prefix and suffix into the text
# around the column, which saves a pass over the column.
Rendering = tuple[str, pa.Array, str]


def _per_value(array: pa.Array) -> Rendering:
    return "", pa.array([dumps(v) for v in array.to_pylist()], type=pa.string()), ""


def _strings(array: pa.Array) -> Rendering:
    if not pa.types.is_string(array.type):
        array = array.cast(pa.string())
    data = string_data(array)
    if data.size and bool((data < 0x20).any()):
        # Control characters need json's own escapes (\n, \u001f, ...): those rows value by value.
        special = pc.fill_null(pc.match_substring_regex(array, "[\\x00-\\x1f]"), False)
        values, flags = array.to_pylist(), special.to_pylist()
        slow = pa.array([dumps(v) if f else None for v, f in zip(values, flags, strict=True)], pa.string())
        return "", pc.if_else(special, slow, join_text('"', _escaped(array, data), '"')), ""
    return '"', _escaped(array, data), '"'


def _escaped(array: pa.Array, data: np.ndarray) -> pa.Array:
    if data.size and bool((data == 0x5C).any()):
        array = pc.replace_substring(array, "\\", "\\\\")
    if data.size and bool((data == 0x22).any()):
        array = pc.replace_substring(array, '"', '\\"')
    return array


def timestamp_text(array: pa.Array) -> pa.Array:
    """``YYYY-MM-DD hh:mm:ss[.ffffff]`` of microsecond timestamps (UTC wall clock when aware),
    the fraction left out where it is zero — as ``datetime.isoformat(" ")`` and PyMySQL write it."""
    naive = array.cast(pa.timestamp("us")) if array.type.tz is not None else array
    micros = np.frombuffer(naive.buffers()[1], dtype=np.int64, count=len(naive), offset=naive.offset * 8)
    whole = micros % 1_000_000 == 0  # values under nulls only make this test stricter
    if whole.all():  # e.g. every DATETIME(0): no fraction at all
        return naive.cast(pa.timestamp("s")).cast(pa.string())
    text = naive.cast(pa.string())
    if not whole.any():
        return text
    mask = bool_array(whole)
    return pc.if_else(mask, pc.utf8_slice_codeunits(text, 0, 19), text)


def _timestamps(array: pa.Array) -> Rendering:
    """``datetime.isoformat()``: ``YYYY-MM-DDThh:mm:ss[.ffffff][+00:00]``."""
    # The text is ASCII, so byte 10 is the date/time separator.
    iso = pc.binary_replace_slice(timestamp_text(array), start=10, stop=11, replacement="T")
    return '"', iso, '+00:00"' if array.type.tz is not None else '"'


def _cast(prefix: str, suffix: str) -> Any:
    return lambda a: (prefix, a.cast(pa.string()), suffix)


def _renderer(typ: pa.DataType) -> Any:
    if pa.types.is_integer(typ) or pa.types.is_boolean(typ):
        return _cast("", "")
    if pa.types.is_decimal(typ):
        # Arrow prints decimals exactly as Python's str(Decimal) does (plain unless the adjusted
        # exponent is below -6, e.g. 0E-10), so the quoted text is json_value's.
        return _cast('"', '"')
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        return _strings
    if pa.types.is_date32(typ):
        return _cast('"', '"')
    if pa.types.is_timestamp(typ) and typ.unit == "us" and typ.tz in (None, "UTC", "+00:00"):
        return _timestamps
    return None


def json_parts(array: pa.Array | pa.ChunkedArray) -> Rendering:
    """``(prefix, body, suffix)``: each value's JSON text is ``prefix + body[i] + suffix``.

    When ``array`` has nulls the prefix and suffix are empty and null rows read ``null``.
    """
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if array.null_count == len(array):
        return "", pa.array(["null"] * len(array), type=pa.string()), ""
    render = _renderer(array.type)
    try:
        prefix, body, suffix = _per_value(array) if render is None else render(array)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowCapacityError):
        prefix, body, suffix = _per_value(array)
    if not array.null_count:
        return prefix, body, suffix
    if prefix or suffix:
        body = join_text(prefix, body, suffix)
    return "", pc.fill_null(body, _NULL), ""


def json_column(array: pa.Array | pa.ChunkedArray) -> pa.Array:
    """The JSON text of every value of ``array`` (``null`` for nulls), as a string array."""
    prefix, body, suffix = json_parts(array)
    return join_text(prefix, body, suffix) if prefix or suffix else body
