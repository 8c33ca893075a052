"""The changelog sink renders snapshot files column-wise (arrow_json); the bytes must equal the
per-row ``dumps`` rendering for every canonical type, null, escape and batch boundary."""

from __future__ import annotations

import datetime as dt
import json
import random
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.splits import SnapshotSplit
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.columns import Column
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks import changelog
from sparkcdc.sinks.arrow_json import json_column
from sparkcdc.sinks.changelog import ChangelogSink, _snapshot_lines, _snapshot_text
from sparkcdc.sinks.values import dumps

UTC = dt.timezone.utc
SOURCE = {"file": "binlog.000007", "pos": 1234, "ts_ms": 0, "snapshot": True}

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


def _table(rows: int, seed: int = 1) -> pa.Table:
    rng = random.Random(seed)
    columns: dict[str, pa.Array] = {"id": pa.array(range(rows), pa.int64())}
    for name, (typ, values) in TYPES.items():
        pool = [*values, None]
        columns[name] = pa.array([rng.choice(pool) for _ in range(rows)], typ)
    columns["text"] = pa.array([rng.choice([*STRINGS, None]) for _ in range(rows)], pa.string())
    columns["all_null"] = pa.nulls(rows, pa.string())
    columns["clean"] = pa.array([f"row {i}" for i in range(rows)], pa.string())
    return pa.table(columns)


def _reference(table: str, keys: tuple[str, ...], data: pa.Table) -> bytes:
    return "".join(line + "\n" for line in _snapshot_lines(table, keys, data, SOURCE)).encode()


def _fast(table: str, keys: tuple[str, ...], data: pa.Table) -> bytes:
    return b"".join(bytes(chunk) for chunk in _snapshot_text(table, keys, data, SOURCE))


@pytest.mark.parametrize("keys", [("id",), ("s", "id"), ("d10", "dtm", "ts", "id")])
def test_column_wise_rendering_equals_per_row_dumps(keys: tuple[str, ...]) -> None:
    data = _table(400)
    assert _fast("shop.t\u00e9st", keys, data) == _reference("shop.t\u00e9st", keys, data)


def test_sliced_tables_and_batch_boundaries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(changelog, "_BATCH_ROWS", 7)
    data = _table(100, seed=2).slice(13, 60)  # non-zero offsets into every buffer
    assert _fast("db.t", ("id",), data) == _reference("db.t", ("id",), data)
    assert _fast("db.t", ("id",), data.slice(0, 0)) == b""


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.none(), st.text()), min_size=1, max_size=30))
def test_any_text_renders_like_json_dumps(values: list[str | None]) -> None:
    array = pa.array(values, pa.string())
    assert json_column(array).to_pylist() == [dumps(v) for v in values]
    assert [json.loads(t) for t in json_column(array).to_pylist()] == values


def test_write_split_writes_the_reference_file(tmp_path: Path) -> None:
    cols = (
        Column("id", 1, "bigint", "bigint(20)", nullable=False),
        Column("s", 2, "varchar", "varchar(20)", charset="utf8mb4", collation="utf8mb4_general_ci"),
    )
    schema = TableSchema(TableId("db", "t"), cols, ("id",), ("id",), ("id",))
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "s": pa.array(STRINGS[:3], pa.string())})
    sink = ChangelogSink(tmp_path)
    sink.prepare([schema])
    sink.write_split(
        schema, SnapshotSplit(schema.table, 3, None, None), data, BinlogOffset("binlog.000007", 1234)
    )
    written = (tmp_path / "db.t" / "snapshot-000003.jsonl").read_bytes()
    assert written == _reference("db.t", ("id",), data)
    first = json.loads(written.splitlines()[0])
    assert first["op"] == "+I" and first["data"] == {"id": 1, "s": ""} and first["source"] == SOURCE
