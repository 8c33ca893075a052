"""Canonical values: the column-wise Arrow path and the per-value path must agree exactly."""

from __future__ import annotations

import datetime as dt
import pickle
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from sparkcdc.core.tables import TableId
from sparkcdc.mysql.arrow_columns import column_to_arrow
from sparkcdc.mysql.columns import Column
from sparkcdc.mysql.connection import SourceConfig
from sparkcdc.mysql.schema import TableSchema, parse_members
from sparkcdc.mysql.types import arrow_type, canonical_value

UTC = dt.timezone.utc


def col(data_type: str, column_type: str | None = None, **kw: Any) -> Column:
    return Column(name="c", ordinal=1, data_type=data_type, column_type=column_type or data_type, **kw)


# (column, raw text-protocol values, expected canonical values)
CASES: list[tuple[Column, list[Any], list[Any]]] = [
    (col("tinyint"), ["-128", "127", None], [-128, 127, None]),
    (col("tinyint", unsigned=True), ["255", "0"], [255, 0]),
    (col("mediumint", unsigned=True), ["16777215"], [16777215]),
    (col("int", unsigned=True), ["4294967295"], [4294967295]),
    (col("bigint"), ["-9223372036854775808", "9223372036854775807"], [-(2**63), 2**63 - 1]),
    (col("bigint", unsigned=True), ["18446744073709551615", "0"], [Decimal(2**64 - 1), Decimal(0)]),
    (
        col("decimal", precision=65, scale=30),
        [
            "-12345678901234567890123456789012345.123456789012345678901234567891",
            "0.000000000000000000000000000000",
        ],
        [Decimal("-12345678901234567890123456789012345.123456789012345678901234567891"), Decimal("0E-30")],
    ),
    (
        col("decimal", precision=10, scale=2),
        ["1.50", "-99999999.99"],
        [Decimal("1.50"), Decimal("-99999999.99")],
    ),
    (col("float"), ["3.1415927410125732", "1e38", "-0"], [3.1415927410125732, 9.999999680285692e37, -0.0]),
    (col("double"), ["0.1", "1.7976931348623157e308", "-5e-324"], [0.1, 1.7976931348623157e308, -5e-324]),
    (col("bit", precision=1), [b"\x01", b"\x00", None], [True, False, None]),
    (col("bit", precision=10), [b"\x03\xff"], [b"\x03\xff"]),
    (col("year"), ["0000", "1901", "2155"], [0, 1901, 2155]),
    (
        col("date"),
        ["2024-02-29", "0000-00-00", "2024-00-10", "2024-05-00", "0001-01-01"],
        [dt.date(2024, 2, 29), None, None, None, dt.date(1, 1, 1)],
    ),
    (
        col("datetime", datetime_precision=6),
        ["2024-03-10 06:30:00.123456", "0000-00-00 00:00:00.000000", "9999-12-31 23:59:59.999999"],
        [dt.datetime(2024, 3, 10, 6, 30, 0, 123456), None, dt.datetime(9999, 12, 31, 23, 59, 59, 999999)],
    ),
    (
        col("timestamp", datetime_precision=6),
        ["1970-01-01 00:00:01.000000", "2038-01-19 03:14:07.999999", "0000-00-00 00:00:00.000000"],
        [
            dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC),
            dt.datetime(2038, 1, 19, 3, 14, 7, 999999, tzinfo=UTC),
            None,
        ],
    ),
    (
        col("time", datetime_precision=6),
        ["-838:59:59.999999", "838:59:59.000000", "-00:00:00.500000", "01:02:03.5", "00:00:00"],
        [
            -dt.timedelta(hours=838, minutes=59, seconds=59, microseconds=999999),
            dt.timedelta(hours=838, minutes=59, seconds=59),
            -dt.timedelta(microseconds=500000),
            dt.timedelta(hours=1, minutes=2, seconds=3, microseconds=500000),
            dt.timedelta(0),
        ],
    ),
    (col("varchar", charset="utf8mb4"), ["héllo 😀", ""], ["héllo 😀", ""]),
    (col("enum", "enum('a','b')", members=("a", "b")), ["b", ""], ["b", ""]),
    (col("set", "set('x','y')", members=("x", "y")), ["x,y", ""], ["x,y", ""]),
    (col("json"), ['{"a": 1}'], ['{"a": 1}']),
    (col("binary", "binary(4)", length=4), [b"ab\x00\x00"], [b"ab\x00\x00"]),
    (col("blob"), [b"\xff\x00", b""], [b"\xff\x00", b""]),
    (col("point"), [b"\xe6\x10\x00\x00\x01\x01"], [b"\xe6\x10\x00\x00\x01\x01"]),  # SRID kept
]


@pytest.mark.parametrize(("column", "raw", "expected"), CASES, ids=[c[0].data_type for c in CASES])
def test_column_path_equals_value_path(column: Column, raw: list[Any], expected: list[Any]) -> None:
    array = column_to_arrow(column, raw)
    assert array.type == arrow_type(column)
    assert array.to_pylist() == expected
    assert [canonical_value(column, v) for v in raw] == expected
    # The per-value path builds the same array.
    assert pa.array([canonical_value(column, v) for v in raw], type=arrow_type(column)).equals(array)


def test_binlog_library_values() -> None:
    """What python-mysql-replication hands over, mapped to the same canonical values."""
    assert canonical_value(col("bit", precision=1), "1") is True
    assert canonical_value(col("bit", precision=10), "1111111111") == b"\x03\xff"
    assert canonical_value(col("year"), 1900) == 0
    assert canonical_value(col("binary", "binary(4)", length=4), b"ab") == b"ab\x00\x00"
    assert canonical_value(col("varbinary"), "") == b""
    assert canonical_value(col("set", members=("x", "y", "z")), {"z", "x"}) == "x,z"
    assert canonical_value(col("set", members=("x", "y", "z")), set()) == ""
    assert canonical_value(col("enum", members=("a", "b")), 2) == "b"
    assert canonical_value(col("bigint", unsigned=True), -1) == Decimal(2**64 - 1)
    assert canonical_value(col("int", unsigned=True), -1) == 2**32 - 1
    assert canonical_value(col("timestamp"), dt.datetime(1970, 1, 1)) is None  # the zero TIMESTAMP
    assert canonical_value(col("timestamp"), dt.datetime(2024, 1, 1, 5, 30)) == dt.datetime(
        2024, 1, 1, 5, 30, tzinfo=UTC
    )
    aware = dt.datetime(2024, 1, 1, 11, 0, tzinfo=dt.timezone(dt.timedelta(hours=5, minutes=30)))
    assert canonical_value(col("timestamp"), aware) == dt.datetime(2024, 1, 1, 5, 30, tzinfo=UTC)
    assert canonical_value(col("float"), 3.1415927410125732) == 3.1415927410125732
    assert canonical_value(col("float"), 0.1) == pa.array([0.1], pa.float32()).to_pylist()[0]
    assert canonical_value(col("json"), {"a": [1, 2.5, "x"], "b": None}) == '{"a": [1, 2.5, "x"], "b": null}'
    assert canonical_value(col("decimal", precision=5, scale=2), Decimal("1.5")).as_tuple().exponent == -2


def test_unexpected_text_falls_back_to_the_exact_path() -> None:
    column = col("time")
    # "100:00" is no TIME text the server sends; the Arrow kernel path refuses it and the exact
    # per-value path decides (here: it is not a TIME either).
    with pytest.raises(ValueError):
        column_to_arrow(column, ["12:00:00", "100:00"])
    with pytest.raises(ValueError):
        column_to_arrow(column, ["bogus"])


def test_parse_members() -> None:
    assert parse_members("enum('a','b''c','d,e')") == ("a", "b'c", "d,e")
    assert parse_members("set('x')") == ("x",)


def test_source_config_hides_the_password_and_pickles() -> None:
    cfg = SourceConfig(host="db", port=3306, user="cdc", password="s3cret-pw")
    assert "s3cret-pw" not in repr(cfg)
    assert pickle.loads(pickle.dumps(cfg)) == cfg


def test_table_schema_pickles_with_its_arrow_schema() -> None:
    columns = (
        Column("id", 1, "bigint", "bigint(20) unsigned", nullable=False, unsigned=True),
        Column("name", 2, "varchar", "varchar(10)", charset="utf8mb4", collation="utf8mb4_general_ci"),
    )
    schema = TableSchema(TableId("shop", "t"), columns, ("id",), ("id",), ("id",))
    before = schema.arrow_schema()
    copy = pickle.loads(pickle.dumps(schema))
    assert copy == schema
    assert copy.arrow_schema().equals(before)
    assert before.field("id").type == pa.decimal128(20, 0)
    assert schema.is_numeric_single_key
    assert schema.key_collations() == (None,)
