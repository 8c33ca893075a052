"""binlog_row_to_canonical takes per-column shortcuts; they must give exactly canonical_value's
result (value and type) for every value a binlog image may hold."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest

from sparkcdc.core.tables import TableId
from sparkcdc.mysql.columns import Column
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.mysql.types import binlog_row_to_canonical, canonical_value

UTC = dt.timezone.utc


def _col(name: str, data_type: str, **kw: Any) -> Column:
    return Column(name=name, ordinal=0, data_type=data_type, column_type=data_type, **kw)


CASES: list[tuple[Column, list[Any]]] = [
    (_col("i", "int"), [0, -5, 2**31 - 1, True, "12", b"7", None]),
    (_col("bi", "bigint"), [-(2**63), 2**63 - 1]),
    (_col("ui", "int", unsigned=True), [0, 4294967295, -1, -(2**31), True]),
    (_col("ti", "tinyint", unsigned=True), [255, -1, 0]),
    (_col("ubi", "bigint", unsigned=True), [0, -1, 2**64 - 1]),
    (_col("s", "varchar", charset="utf8mb4"), ["", "x", b"caf\xc3\xa9", None]),
    (_col("l", "varchar", charset="latin1"), [b"caf\xe9", "café"]),
    (_col("e", "enum", members=("a", "b")), ["a", 2, 0]),
    (_col("st", "set", members=("x", "y")), ["x,y", {"y", "x"}, 3, set()]),
    (_col("j", "json"), ['{"a": 1}', {"a": [1, b"x"]}, [1, 2]]),
    (_col("d", "double"), [1.5, 3, "2.5", -0.0]),
    (
        _col("dtm", "datetime"),
        [
            dt.datetime(2024, 1, 1, 1, 2, 3, 4),
            dt.datetime(2024, 1, 1, tzinfo=UTC),
            "2024-01-01 00:00:00",
            dt.date(2024, 1, 2),
        ],
    ),
    (_col("dte", "date"), [dt.date(2024, 1, 1), dt.datetime(2024, 1, 1, 5), "2024-02-29", "0000-00-00"]),
    (_col("ts", "timestamp"), [dt.datetime(2024, 1, 1), dt.datetime(1970, 1, 1)]),
    (_col("dec", "decimal", precision=10, scale=2), [Decimal("1.5"), Decimal("1.50"), "3.1"]),
]


@pytest.mark.parametrize(("column", "values"), CASES, ids=[c.name for c, _ in CASES])
def test_shortcuts_equal_canonical_value(column: Column, values: list[Any]) -> None:
    schema = TableSchema(TableId("db", "t"), (column,), (), (), ())
    for value in values:
        got = binlog_row_to_canonical(schema, {column.name: value})[column.name]
        want = canonical_value(column, value)
        assert got == want and type(got) is type(want), (column.name, value)


def test_whole_rows_and_missing_columns() -> None:
    columns = tuple(c for c, _ in CASES)
    schema = TableSchema(TableId("db", "t"), columns, (), (), ())
    row = {c.name: values[0] for c, values in CASES}
    assert binlog_row_to_canonical(schema, row) == {c.name: canonical_value(c, row[c.name]) for c in columns}
    assert binlog_row_to_canonical(schema, {}) == {c.name: None for c in columns}
