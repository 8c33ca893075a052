"""A table of canonical values (the Arrow types the readers produce for MySQL's type families),
random but seeded, with nulls and awkward strings: what the sinks' renderers are checked on.

``STRINGS`` are the strings that break naive escaping; ``TYPES`` the columns, each with a few
edge values; ``canonical_table(rows, seed)`` draws a table from them.
"""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal
from typing import Any

import pyarrow as pa

__all__ = ["STRINGS", "TYPES", "canonical_table"]

UTC = dt.timezone.utc

STRINGS = [
    "",
    "plain",
    'say "hi"',
    "back\\slash",
    "new\nline",
    "tab\there\r\x00\x1f\x7f",
    "emoji 😀 ünïcode \u2028\u2029",
    '\\"',
    "\u00e9" * 50,
]

TYPES: dict[str, tuple[pa.DataType, list[Any]]] = {
    "i8": (pa.int8(), [-128, 0, 127]),
    "i16": (pa.int16(), [-32768, 1901, 32767]),
    "i32": (pa.int32(), [-(2**31), 7, 2**31 - 1]),
    "i64": (pa.int64(), [-(2**63), 0, 2**63 - 1]),
    "u64": (pa.decimal128(20, 0), [Decimal(0), Decimal(2**64 - 1), Decimal(12345)]),
    "d10": (pa.decimal128(10, 2), [Decimal("-99999999.99"), Decimal("0.00"), Decimal("0.01")]),
    "d30": (
        pa.decimal128(38, 30),
        [Decimal(0).scaleb(-30), Decimal("1E-30"), Decimal("-1.500000000000000000000000000000")],
    ),
    "d65": (
        pa.decimal256(65, 30),
        [
            Decimal("-12345678901234567890123456789012345.123456789012345678901234567891"),
            Decimal("0E-30"),
            Decimal("1.000000000000000000000000000000"),
        ],
    ),
    "f32": (pa.float32(), [3.1415927410125732, -1e-38, float("inf")]),
    "f64": (pa.float64(), [1e16, 1e-05, float("nan")]),
    "b1": (pa.bool_(), [True, False, True]),
    "bin": (pa.binary(), [b"", b"\x00\x01\xff", bytes(range(256))]),
    "date": (pa.date32(), [dt.date(1000, 1, 1), dt.date(9999, 12, 31), dt.date(1, 1, 1)]),
    "dtm": (
        pa.timestamp("us"),
        [
            dt.datetime(1000, 1, 1),
            dt.datetime(9999, 12, 31, 23, 59, 59, 999999),
            dt.datetime(1969, 12, 31, 23, 59, 59, 500),
        ],
    ),
    "ts": (
        pa.timestamp("us", tz="UTC"),
        [
            dt.datetime(1970, 1, 1, 0, 0, 1, 1, tzinfo=UTC),
            dt.datetime(2038, 1, 19, 3, 14, 7, tzinfo=UTC),
            dt.datetime(2024, 2, 29, 12, tzinfo=UTC),
        ],
    ),
    "tm": (
        pa.duration("us"),
        [dt.timedelta(hours=-838, minutes=-59, seconds=-59), dt.timedelta(0), dt.timedelta(microseconds=1)],
    ),
    "s": (pa.string(), STRINGS[:3]),
}


def canonical_table(rows: int, seed: int = 1) -> pa.Table:
    """``rows`` rows: an ``id``, a column of each type of ``TYPES`` and a ``text`` column drawn
    from their values and nulls (seeded: always the same table), one all null, one plain."""
    rng = random.Random(seed)
    columns: dict[str, pa.Array] = {"id": pa.array(range(rows), pa.int64())}
    for name, (typ, values) in TYPES.items():
        pool = [*values, None]
        columns[name] = pa.array([rng.choice(pool) for _ in range(rows)], typ)
    columns["text"] = pa.array([rng.choice([*STRINGS, None]) for _ in range(rows)], pa.string())
    columns["all_null"] = pa.nulls(rows, pa.string())
    columns["clean"] = pa.array([f"row {i}" for i in range(rows)], pa.string())
    return pa.table(columns)
