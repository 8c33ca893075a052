"""Scalars built from buffers equal pa.scalar's, and rendering never imports pandas (which
pyarrow would do for pa.scalar / pa.array of Python values: ~0.5 s per fresh Spark worker)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pyarrow as pa

from sparkcdc.mysql.arrow_values import binary_scalar, bool_array, int_scalar, null_scalar, text_scalar


def test_scalars_equal_pyarrow_scalars() -> None:
    assert text_scalar('ünï "x"') == pa.scalar('ünï "x"', pa.string())
    assert text_scalar("") == pa.scalar("", pa.string())
    assert binary_scalar(b"\x00\xff") == pa.scalar(b"\x00\xff", pa.binary())
    assert int_scalar(-(2**63)) == pa.scalar(-(2**63), pa.int64())
    assert null_scalar(pa.timestamp("us", tz="UTC")) == pa.scalar(None, pa.timestamp("us", tz="UTC"))
    mask = np.array([True, False, True] * 7 + [False])
    assert bool_array(mask).to_pylist() == mask.tolist()


RENDER = r"""
import sys
import numpy as np
import pyarrow as pa
from sparkcdc.sinks.changelog import _snapshot_text
offsets = pa.py_buffer(np.array([0, 3, 6], dtype=np.int32).tobytes())
strings = pa.StringArray.from_buffers(2, offsets, pa.py_buffer(b'a"bc\\d'))
ids = pa.Array.from_buffers(pa.int64(), 2, [None, pa.py_buffer(np.array([1, 2]).tobytes())])
ts = ids.cast(pa.timestamp("us")).cast(pa.timestamp("us", tz="UTC"))
data = pa.Table.from_arrays([ids, strings, ts], names=["id", "s", "ts"])
out = b"".join(bytes(c) for c in _snapshot_text("db.t", ("id",), data, {"file": "f", "pos": 4}))
assert out.count(b"\n") == 2 and b'"s":"a\\"b"' in out, out
print("pandas" in sys.modules)
"""


def test_rendering_does_not_import_pandas() -> None:
    result = subprocess.run([sys.executable, "-c", RENDER], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False", result.stdout + result.stderr
