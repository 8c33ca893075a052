"""LOAD DATA text rendered column-wise (sinks/jdbc/bulk_load.py) against a value-by-value
reference of the same format: every canonical Arrow type, nulls, escapes, sliced and chunked
columns, and batch boundaries. What the server makes of the text is the integration tests' part
(tests/integration/sinks/test_jdbc_write_paths.py, test_jdbc_bulk_load.py)."""

from __future__ import annotations

import datetime as dt
import os
import random
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from harness.schemas import col, table_schema
from sparkcdc.sinks.jdbc import bulk_load
from sparkcdc.sinks.jdbc.bulk_load import tsv_chunks

TESTS = Path(__file__).resolve().parents[2]

SCHEMA = table_schema(
    "t",
    [
        col("id", "bigint(20)", nullable=False),
        col("yr", "year(4)"),
        col("s", "varchar(50)"),
        col("b", "varbinary(20)"),
        col("flag", "bit(1)"),
        col("d", "decimal(40,20)"),
        col("f", "float"),
        col("db", "double"),
        col("dte", "date"),
        col("dtm", "datetime(6)"),
        col("ts", "timestamp(6)"),
        col("tm", "time(6)"),
    ],
    ["id"],
)
TYPES = pa.schema(
    [
        ("id", pa.int64()),
        ("yr", pa.int16()),
        ("s", pa.string()),
        ("b", pa.binary()),
        ("flag", pa.bool_()),
        ("d", pa.decimal256(40, 20)),
        ("f", pa.float32()),
        ("db", pa.float64()),
        ("dte", pa.date32()),
        ("dtm", pa.timestamp("us")),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("tm", pa.duration("us")),
    ]
)
SCALE, SCALES = Decimal("1E-20"), [1, Decimal("1E-15"), 0]
_ESCAPE = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\0": "\\0"}


def _field(name: str, value: Any) -> str:
    """The reference: one value's field, as LOAD DATA reads it back."""
    if value is None:
        return "\\N"
    if name == "yr":
        return f"{value:04d}"
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, bytes):
        return value.hex().upper()
    if isinstance(value, str):
        return "".join(_ESCAPE.get(c, c) for c in value)
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, float):
        return repr(value)  # compared by the double it reads back as (_same)
    if isinstance(value, dt.datetime):
        return value.replace(tzinfo=None).isoformat(" ")
    if isinstance(value, dt.timedelta):
        micros = abs(value) // dt.timedelta(microseconds=1)
        seconds, fraction = divmod(micros, 1_000_000)
        sign = "-" if value < dt.timedelta(0) else ""
        text = f"{sign}{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
        return text + (f".{fraction:06d}" if fraction else "")
    return str(value)


def _reference(data: pa.Table) -> list[list[str]]:
    return [[_field(name, row[name]) for name in data.column_names] for row in data.to_pylist()]


def _fields(text: bytes) -> list[list[str]]:
    # Escapes keep tabs and newlines out of the fields, so they split the text exactly.
    assert text.endswith(b"\n")
    return [line.split("\t") for line in text.decode("utf-8").split("\n")[:-1]]


def _same(text: bytes, data: pa.Table) -> bool:
    """The rendering is the reference's, floats read back as the same double (the text of a
    double has more than one shortest spelling: 1.5e-7, 1.5e-07)."""
    floats = {i for i, name in enumerate(data.column_names) if name in ("f", "db")}
    got, want = _fields(text), _reference(data)
    if len(got) != len(want):
        return False
    for got_row, want_row in zip(got, want, strict=True):
        for i, (a, b) in enumerate(zip(got_row, want_row, strict=True)):
            if a != b and not (i in floats and b != "\\N" and float(a) == float(b)):
                return False
    return True


def _rows(count: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    texts = ["", "NULL", "\\N", "a\tb", "x\ny", "back\\slash", "nul\0", "émoji 😀", "plain"]
    rows = []
    for n in range(count):
        micros = rng.randint(-838 * 3_600_000_000, 838 * 3_600_000_000) * rng.choice([0, 1])
        values: dict[str, Any] = {
            "id": n,
            "yr": rng.choice([0, 1901, 2155, 1999]),
            "s": rng.choice(texts) + rng.choice(texts),
            "b": bytes(rng.randrange(256) for _ in range(rng.randint(0, 12))),
            "flag": rng.random() < 0.5,
            # Some below 1E-6, which Arrow prints with an exponent (0E-20 included).
            "d": (Decimal(rng.randint(-(10**25), 10**25)).scaleb(-20) * rng.choice(SCALES)).quantize(SCALE),
            "f": float(
                pa.scalar(rng.uniform(-1e6, 1e6) * rng.choice([1, 1e-20, 1e20]), pa.float32()).as_py()
            ),
            "db": rng.uniform(-1, 1) * 10 ** rng.randint(-300, 300),
            "dte": dt.date(rng.randint(1, 9999), rng.randint(1, 12), rng.randint(1, 28)),
            "dtm": dt.datetime(2024, 1, 1)
            + dt.timedelta(microseconds=rng.randint(0, 10**13) * rng.choice([1, 10**4])),
            "ts": dt.datetime(2030, 1, 1, tzinfo=dt.timezone.utc)
            - dt.timedelta(microseconds=rng.randint(0, 10**15)),
            "tm": dt.timedelta(microseconds=micros + rng.choice([0, 1, 999_999])),
        }
        for name in list(values)[1:]:
            if rng.random() < 0.15:
                values[name] = None
        rows.append(values)
    return rows


@pytest.mark.parametrize("seed", [1, 2])
def test_rendering_matches_the_reference_value_by_value(seed: int) -> None:
    data = pa.Table.from_pylist(_rows(500, seed), schema=TYPES)
    assert _same(b"".join(tsv_chunks(SCHEMA, data)), data)
    # Sliced (offsets into the buffers, validity bitmaps not at bit 0) and chunked columns.
    part = data.slice(37, 301)
    assert _same(b"".join(tsv_chunks(SCHEMA, part)), part)
    chunked = pa.concat_tables([data.slice(0, 13), data.slice(13, 250), data.slice(263)])
    assert _same(b"".join(tsv_chunks(SCHEMA, chunked)), data)


def test_batches_split_at_row_boundaries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bulk_load, "_RENDER_ROWS", 7)
    data = pa.Table.from_pylist(_rows(50, 3), schema=TYPES)
    chunks = list(tsv_chunks(SCHEMA, data))
    assert len(chunks) == 8 and all(c.endswith(b"\n") for c in chunks)
    assert _same(b"".join(chunks), data)


def test_all_null_and_empty_columns() -> None:
    data = pa.Table.from_pylist([{"id": 1}, {"id": 2}], schema=TYPES)
    assert _fields(b"".join(tsv_chunks(SCHEMA, data))) == _reference(data)
    assert list(tsv_chunks(SCHEMA, data.slice(0, 0))) == []


def test_types_without_an_exact_rendering_are_refused() -> None:
    odd = pa.table({"id": pa.array([1], pa.int64()), "x": pa.array([[1]], pa.list_(pa.int64()))})
    with pytest.raises(bulk_load.UnsupportedColumnError):
        bulk_load._column_plan(SCHEMA, odd)


# Columns of every rendering built from buffers (pa.array of Python values would import pandas).
RENDER = r"""
import sys
import numpy as np
import pyarrow as pa
from harness.schemas import col, table_schema
from sparkcdc.sinks.jdbc.bulk_load import tsv_chunks

ints = pa.Array.from_buffers(pa.int64(), 2, [None, pa.py_buffer(np.array([1, -2]).tobytes())])
offsets = pa.py_buffer(np.array([0, 3, 6], dtype=np.int32).tobytes())
strings = pa.StringArray.from_buffers(2, offsets, pa.py_buffer(b"a\tbc\\d"))
columns = {
    "id": ints, "yr": ints.cast(pa.int16()), "s": strings, "b": strings.cast(pa.binary()),
    "flag": ints.cast(pa.bool_()), "d": ints.cast(pa.decimal256(40, 20)), "f": ints.cast(pa.float32()),
    "db": ints.cast(pa.float64()), "dte": ints.cast(pa.int32()).cast(pa.date32()),
    "dtm": ints.cast(pa.timestamp("us")),
    "ts": ints.cast(pa.timestamp("us")).cast(pa.timestamp("us", tz="UTC")),
    "tm": ints.cast(pa.duration("us")),
}
schema = table_schema("t", [col(n, "year(4)" if n == "yr" else "int") for n in columns], ["id"])
out = b"".join(tsv_chunks(schema, pa.table(columns)))
assert out.count(b"\n") == 2 and b"a\\tb" in out and b"-00:00:00.000002" in out, out
print("pandas" in sys.modules)
"""


def test_rendering_does_not_import_pandas() -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run(
        [sys.executable, "-c", RENDER], capture_output=True, text=True, env=env, check=False
    )
    assert result.returncode == 0 and result.stdout.strip() == "False", result.stdout + result.stderr
