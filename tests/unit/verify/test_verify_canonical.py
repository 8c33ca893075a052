"""The Python side of the canonical row encoding, the re-check's row states, and the report.

Agreement of the SQL renderings (MariaDB and PostgreSQL) with each other and with these Python
renderings is proven against real servers in tests/integration/verify; here the renderings'
own rules are pinned down.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.core.events import ChangeEvent, Op
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.splits import SnapshotSplit
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.columns import Column
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.verify.canonical import python_row_text, python_value, row_hash
from sparkcdc.verify.checksum import ChunkChecksum
from sparkcdc.verify.recheck import sink_states
from sparkcdc.verify.report import ChunkDiff, PipelineReport, TableReport, key_json, write_report


def col(data_type: str, column_type: str | None = None, **kw: Any) -> Column:
    return Column(
        name=kw.pop("name", "c"), ordinal=1, data_type=data_type, column_type=column_type or data_type, **kw
    )


UTC = dt.timezone.utc


@pytest.mark.parametrize(
    ("column", "value", "text"),
    [
        (col("int"), -5, "-5"),
        (col("bigint", "bigint(20) unsigned", unsigned=True), Decimal(2**64 - 1), "18446744073709551615"),
        (col("decimal", scale=2), Decimal("1.50"), "1.5"),
        (col("decimal", scale=2), Decimal("10.00"), "10"),
        (col("decimal", scale=0), Decimal("100"), "100"),
        (col("decimal", scale=4), Decimal("-0.0100"), "-0.01"),
        (col("double"), 0.0, "0"),
        (col("double"), -0.0, "0"),
        (col("double"), 0.1, "10000000000000e-1"),
        (col("double"), 1e22, "10000000000000e22"),
        (col("double"), -2.5e-300, "-25000000000000e-300"),
        (col("float"), 0.10000000149011612, "1000000e-1"),
        (col("bit", precision=1), True, "1"),
        (col("bit", precision=1), False, "0"),
        (col("bit", precision=12), b"\x0a\xbc", "abc"),
        (col("bit", precision=12), b"\x00\x00", "0"),
        (col("year"), 0, "0"),
        (col("date"), dt.date(999, 1, 2), "0999-01-02"),
        (col("datetime"), dt.datetime(2024, 2, 29, 23, 59, 59), "2024-02-29 23:59:59.000000"),
        (
            col("timestamp"),
            dt.datetime(2024, 1, 1, 5, 30, tzinfo=dt.timezone(dt.timedelta(hours=5, minutes=30))),
            "2024-01-01 00:00:00.000000",
        ),
        (
            col("time"),
            dt.timedelta(hours=-838, minutes=-59, seconds=-59, microseconds=-999999),
            "-3020399999999",
        ),
        (col("time"), dt.timedelta(microseconds=-500000), "-500000"),
        (col("varchar"), "héllo 🚀 | x", "11:héllo 🚀 | x"),
        (col("json"), '{"a": 1}', '8:{"a": 1}'),
        (col("varbinary"), b"\x00\xff|", "00FF7C"),
        (col("int"), None, None),
    ],
)
def test_python_values(column: Column, value: Any, text: str | None) -> None:
    assert python_value(column, value) == text


def test_row_text_and_hash() -> None:
    columns = (col("int", name="id"), col("varchar", name="s"), col("date", name="d"))
    text = python_row_text(columns, {"id": 7, "s": "a|b", "d": None})
    assert text == "7|3:a|b|N"
    assert row_hash(text) == int(hashlib.md5(text.encode()).hexdigest()[:15], 16) < 2**60


def _schema() -> TableSchema:
    columns = (col("int", name="id"), col("int", name="v"))
    return TableSchema(TableId("db", "t"), columns, ("id",), ("id",), ("id",))


def test_sink_states_follow_inserts_updates_deletes_and_key_changes() -> None:
    schema = _schema()
    at = BinlogOffset("binlog.000001", 100)

    def event(op: Op, before: Any, after: Any) -> ChangeEvent:
        return ChangeEvent(schema.table, op, before, after, at)

    events = [
        event(Op.INSERT, None, {"id": 1, "v": 10}),
        event(Op.UPDATE, {"id": 1, "v": 10}, {"id": 1, "v": 11}),
        event(Op.UPDATE, {"id": 2, "v": 5}, {"id": 3, "v": 5}),
        event(Op.DELETE, {"id": 4, "v": 1}, None),
        event(Op.INSERT, None, {"id": 9, "v": 9}),
    ]
    states = sink_states(schema, events, {"1", "2", "3", "4"})
    assert states == {
        "1": {row_hash("1|10"), row_hash("1|11")},
        "2": {None},
        "3": {row_hash("3|5")},
        "4": {None},
    }


def test_report_json_and_exit_semantics(tmp_path: Path) -> None:
    table = TableId("shop", "orders")
    split = SnapshotSplit(table, 3, (Decimal("10.5"), b"\x01"), None)
    diff = ChunkDiff(
        split,
        "differ",
        ChunkChecksum(10, 255),
        ChunkChecksum(9, 17),
        BinlogOffset("b.000001", 4),
        "",
        1,
        ("10.5|01",),
    )
    entry = TableReport(table, chunks=4, source_rows=40, sink_rows=39, differing=[diff])
    report = PipelineReport("p", "mysql://h:1/db", dt.datetime(2026, 1, 1, tzinfo=UTC), 2.0, [entry])
    assert not report.ok and report.rows_verified == 40
    path = tmp_path / "out" / "report.json"
    write_report(path, [report])
    document = json.loads(path.read_text())
    (pipeline,) = document["pipelines"]
    (orders,) = pipeline["tables"]
    assert document["ok"] is False and pipeline["rowsPerSecond"] == 20
    assert (orders["chunksChecked"], orders["chunksDiffering"], orders["chunksUnsettled"]) == (4, 1, 0)
    (chunk,) = orders["differing"]
    assert chunk["start"] == ["10.5", {"base64": "AQ=="}] and chunk["end"] is None
    assert (chunk["sourceRows"], chunk["sinkRows"], chunk["sourceChecksum"]) == (10, 9, "ff")
    assert key_json((dt.timedelta(seconds=-1),)) == [{"microseconds": -1000000}]
    entry.differing.clear()
    assert report.ok


@pytest.mark.parametrize(
    ("data_type", "text", "expected"),
    [
        ("datetime", "2021-03-04 05:06:07.123", "2021-03-04 05:06:07.123000"),
        ("timestamp", "2021-03-04 05:06:07", "2021-03-04 05:06:07.000000"),
        ("date", "2021-03-04", "2021-03-04"),
        ("datetime", "0000-00-00 00:00:00", None),
        ("date", "2020-00-10", None),
        ("datetime", "2020-05-00 10:11:12.5", None),
    ],
)
def test_zero_date_text_renders_as_the_sql_side(data_type: str, text: str, expected: str | None) -> None:
    """A MySQL target's date columns hold MySQL's text (zero dates kept); the re-check hashes binlog
    images of them like the SQL renderings, which print zero dates as NULL."""
    column = Column("d", 1, data_type, data_type, zero_dates=True)
    assert python_value(column, text) == expected
    if expected is not None and data_type != "date":
        parsed = dt.datetime.fromisoformat(text)
        assert python_value(replace(column, zero_dates=False), parsed) == expected
