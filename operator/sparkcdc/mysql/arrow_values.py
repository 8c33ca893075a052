"""Arrow scalars and masks built straight from buffers.

``pa.scalar(...)``, ``pa.array(...)`` and compute calls given plain Python values ask pyarrow's
pandas shim whether the value is a pandas object, which imports pandas: about half a second of
CPU and 40 MB in every fresh Spark Python worker, before its first split. The hot paths (chunk
reads, sink rendering) build their constants here instead, so a worker never imports pandas.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

__all__ = ["binary_scalar", "bool_array", "int_scalar", "null_scalar", "text_scalar"]


def text_scalar(text: str) -> pa.Scalar:
    data = text.encode("utf-8")
    offsets = pa.py_buffer(np.array([0, len(data)], dtype=np.int32).tobytes())
    return pa.StringArray.from_buffers(1, offsets, pa.py_buffer(data))[0]


def binary_scalar(data: bytes) -> pa.Scalar:
    offsets = pa.py_buffer(np.array([0, len(data)], dtype=np.int32).tobytes())
    return pa.Array.from_buffers(pa.binary(), 1, [None, offsets, pa.py_buffer(data)])[0]


def int_scalar(value: int) -> pa.Scalar:
    return pa.Array.from_buffers(
        pa.int64(), 1, [None, pa.py_buffer(np.array([value], dtype=np.int64).tobytes())]
    )[0]


def null_scalar(typ: pa.DataType) -> pa.Scalar:
    return pa.nulls(1, typ)[0]


def bool_array(mask: np.ndarray) -> pa.Array:
    """A boolean Arrow array (no nulls) of a numpy boolean mask."""
    bits = np.packbits(np.asarray(mask, dtype=bool), bitorder="little")
    return pa.Array.from_buffers(pa.bool_(), len(mask), [None, pa.py_buffer(bits.tobytes())])
