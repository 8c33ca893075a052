"""The pure parts of the Delta sink checker: stored rows back to canonical rows and their
canonical text (the same as for the source row), and chunk assignment in MySQL's key order."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa

from sparkcdc.core.keys import KeyOrder
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.columns import Column
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks.spark_types import to_spark_arrow
from sparkcdc.verify.canonical import python_row_text
from sparkcdc.verify.delta_checker import _canonical_rows, _chunk_of

ID = Column("id", 1, "bigint", "bigint(20)", nullable=False)
WIDE = Column("wide", 2, "decimal", "decimal(65,30)", precision=65, scale=30)
TM = Column("tm", 3, "time", "time(6)", datetime_precision=6)
TS = Column("ts", 4, "timestamp", "timestamp(6)", datetime_precision=6)
TAG = Column("tag", 5, "varchar", "varchar(20)", charset="utf8mb4", collation="utf8mb4_general_ci")


def test_stored_rows_render_as_their_source_rows() -> None:
    schema = TableSchema(TableId("db", "t"), (ID, WIDE, TM, TS, TAG), ("id",), ("id",), ("id",))
    rows = [
        {
            "id": 1,
            "wide": Decimal("-1.500000000000000000000000000000"),
            "tm": dt.timedelta(hours=-838),
            "ts": dt.datetime(2038, 1, 19, 3, 14, 7, 500000, tzinfo=dt.timezone.utc),
            "tag": "grüß 🎉 |x",
        },
        {"id": 2, "wide": None, "tm": None, "ts": None, "tag": None},
    ]
    stored = to_spark_arrow(schema, pa.Table.from_pylist(rows, schema=schema.arrow_schema()))
    (batch,) = stored.to_batches()
    back = _canonical_rows(schema, batch)
    assert [python_row_text(schema.columns, r) for r in back] == [
        python_row_text(schema.columns, r) for r in rows
    ]
    assert python_row_text(schema.columns, back[1]) == "2|N|N|N|N"


def test_chunks_follow_the_key_collation() -> None:
    order = KeyOrder.for_columns(["utf8mb4_general_ci"])
    bounds = [(None, ("b",)), (("b",), ("d",)), (("d",), None)]
    assert _chunk_of(order, bounds, ("A",)) == 0
    assert _chunk_of(order, bounds, ("B",)) == 1  # equal to "b" in the collation: not before it
    assert _chunk_of(order, bounds, ("Zed",)) == 2
    assert _chunk_of(order, bounds[:2], ("zz",)) is None
