"""The changelog sink renders snapshot files column-wise (arrow_json); the bytes must equal the
per-row ``dumps`` rendering for every canonical type, null, escape and batch boundary."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.arrow_tables import STRINGS, canonical_table
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.splits import SnapshotSplit
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.columns import Column
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks import changelog
from sparkcdc.sinks.arrow_json import json_column
from sparkcdc.sinks.changelog import ChangelogSink, _snapshot_lines, _snapshot_text
from sparkcdc.sinks.values import dumps

SOURCE = {"file": "binlog.000007", "pos": 1234, "ts_ms": 0, "snapshot": True}


def _reference(table: str, keys: tuple[str, ...], data: pa.Table) -> bytes:
    return "".join(line + "\n" for line in _snapshot_lines(table, keys, data, SOURCE)).encode()


def _fast(table: str, keys: tuple[str, ...], data: pa.Table) -> bytes:
    return b"".join(bytes(chunk) for chunk in _snapshot_text(table, keys, data, SOURCE))


@pytest.mark.parametrize("keys", [("id",), ("s", "id"), ("d10", "dtm", "ts", "id")])
def test_column_wise_rendering_equals_per_row_dumps(keys: tuple[str, ...]) -> None:
    data = canonical_table(400)
    assert _fast("shop.t\u00e9st", keys, data) == _reference("shop.t\u00e9st", keys, data)


def test_sliced_tables_and_batch_boundaries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(changelog, "_BATCH_ROWS", 7)
    data = canonical_table(100, seed=2).slice(13, 60)  # non-zero offsets into every buffer
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
