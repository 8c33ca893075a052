"""The JDBC sink into a real PostgreSQL: types, split idempotence, string-key ranges, binlog batches."""

from __future__ import annotations

import dataclasses
import datetime as dt
import itertools
import struct
from collections.abc import Iterator, Sequence
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from harness.schemas import GENERAL_CI, col, table_schema
from sparkcdc.core.microbatch import TableChanges
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.splits import Key, SnapshotSplit
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks.base import SinkError
from sparkcdc.sinks.jdbc import JdbcSink, JdbcSinkConfig
from sparkcdc.sinks.jdbc.postgres import PostgresDialect
from sparkcdc.testing.postgres import PostgresServer

UTC = dt.timezone.utc
HW = BinlogOffset("binlog.000001", 4)


def _f32(x: float) -> float:
    return float(struct.unpack("<f", struct.pack("<f", x))[0])


# name ("!" = NOT NULL in the source) | MySQL column type | expected PostgreSQL type
TYPES = """
id!  | bigint(20)            | bigint
i8   | tinyint(4)            | smallint
u8   | tinyint(3) unsigned   | smallint
i16  | smallint(6)           | smallint
u16  | smallint(5) unsigned  | integer
i24  | mediumint(9)          | integer
u24  | mediumint(8) unsigned | integer
i32! | int(11)               | integer
u32  | int(10) unsigned      | bigint
i64  | bigint(20)            | bigint
u64  | bigint(20) unsigned   | numeric(20,0)
d65  | decimal(65,30)        | numeric(65,30)
d10  | decimal(10,2)         | numeric(10,2)
f    | float                 | real
g    | double                | double precision
b1   | bit(1)                | boolean
b12  | bit(12)               | bytea
y    | year(4)               | smallint
dd   | date                  | date
dt6! | datetime(6)           | timestamp(6) without time zone
dt0  | datetime              | timestamp(0) without time zone
ts3  | timestamp(3)          | timestamp(3) with time zone
tm   | time(6)               | interval
ch   | char(10)              | text
vc   | varchar(100)          | text
tx   | text                  | text
en   | enum('a','b')         | text
st   | set('x','y')          | text
js   | json                  | text
bn   | binary(4)             | bytea
vb   | varbinary(10)         | bytea
bl   | blob                  | bytea
geo  | geometry              | bytea
"""
_SPECS = [[part.strip() for part in line.split("|")] for line in TYPES.strip().splitlines()]
ALL_TYPES = [col(name.rstrip("!"), mysql, nullable=not name.endswith("!")) for name, mysql, _ in _SPECS]
ALL_PG_TYPES = {name.rstrip("!"): pg for name, _, pg in _SPECS}
NAMES = [c.name for c in ALL_TYPES]
POINT_WKB = bytes.fromhex("0101000000000000000000f03f0000000000000040")
# Canonical GEOMETRY is MySQL's format (SRID, little-endian, then WKB); PostgreSQL gets EWKB.
POINT_4326 = bytes.fromhex("e6100000") + POINT_WKB
POINT_4326_EWKB = bytes.fromhex("0101000020e6100000000000000000f03f0000000000000040")
MAX_TM = -dt.timedelta(hours=838, minutes=59, seconds=59)

# fmt: off
MAX_ROW: dict[str, Any] = dict(zip(NAMES, (
    1, -128, 255, -32768, 65535, -8388608, 16777215, -2147483648, 4294967295, -(2**63), Decimal(2**64 - 1),
    Decimal("-12345678901234567890123456789012345.123456789012345678901234567890"), Decimal("-99999999.99"),
    _f32(1.1), 1.7976931348623157e308, True, b"\x0f\xff", 2155, dt.date(9999, 12, 31),
    dt.datetime(9999, 12, 31, 23, 59, 59, 999999), dt.datetime(1000, 1, 1),
    dt.datetime(2038, 1, 19, 3, 14, 7, 999000, tzinfo=UTC), MAX_TM,
    "emoji 😀", "naïve ☃ 😀 \\N", 'line1\nline2\t"quoted", comma\r\n', "b", "x,y",
    '{"a": 1, "b": [1, 2.50, "x"], "a": 2}', b"\x00\x01\x02\x00", b'\\x00,"', bytes(range(256)), POINT_4326,
), strict=True))
ZERO_ROW: dict[str, Any] = dict(zip(NAMES, (
    3, 0, 0, 0, 0, 0, 0, 0, 0, 0, Decimal(0), Decimal("0E-30"), Decimal("0.00"), 0.0, -0.5, False,
    b"\x00\x00", 0, dt.date(1000, 1, 1), dt.datetime(2024, 2, 29, 12, 0, 0, 1), dt.datetime(1970, 1, 1),
    dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC), -MAX_TM, "", "", "  ", "a", "", "null",
    b"\x00\x00\x00\x00", b"", b"", b"\x00\x00\x00\x00" + POINT_WKB,
), strict=True))
# fmt: on
# Every nullable column NULL; dt6 is NOT NULL in MySQL but a zero date arrives as NULL.
NULL_ROW: dict[str, Any] = {c.name: None for c in ALL_TYPES} | {"id": 2, "i32": 0}


def sink_config(postgres: PostgresServer, database: str) -> JdbcSinkConfig:
    assert postgres.cdc_user and postgres.cdc_password
    return JdbcSinkConfig(
        "postgresql", postgres.host, postgres.port, database, postgres.cdc_user, postgres.cdc_password
    )


@pytest.fixture
def sink(postgres: PostgresServer, pg_database: str) -> Iterator[JdbcSink]:
    opened = sink_config(postgres, pg_database).open()
    try:
        yield opened
    finally:
        opened.close()


def arrow_rows(schema: TableSchema, rows: Sequence[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist([dict(r) for r in rows], schema=schema.arrow_schema())


def split(schema: TableSchema, start: Key | None, end: Key | None, index: int = 0) -> SnapshotSplit:
    return SnapshotSplit(schema.table, index, start, end)


def fetch(postgres: PostgresServer, database: str, sql: str) -> list[tuple[Any, ...]]:
    return postgres.execute(sql, database=database)


def keys(postgres: PostgresServer, database: str, table: str, column: str = "k") -> set[Any]:
    return {r[0] for r in fetch(postgres, database, f'SELECT "{column}" FROM "{table}"')}


def test_types_map_and_values_round_trip(sink: JdbcSink, postgres: PostgresServer, pg_database: str) -> None:
    schema = table_schema("all_types", ALL_TYPES, ["id"])
    sink.prepare([schema])
    sink.prepare([schema])  # CREATE TABLE IF NOT EXISTS: preparing twice is harmless
    types = fetch(
        postgres,
        pg_database,
        "SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull FROM pg_attribute a "
        "WHERE a.attrelid = 'all_types'::regclass AND a.attnum > 0 ORDER BY a.attnum",
    )
    assert {name: kind for name, kind, _ in types} == ALL_PG_TYPES
    # NOT NULL is kept, except on temporal columns (zero dates arrive as NULL).
    assert {name for name, _, notnull in types if notnull} == {"id", "i32"}

    rows = [MAX_ROW, NULL_ROW, ZERO_ROW]
    sink.write_split(schema, split(schema, None, None), arrow_rows(schema, rows), HW)
    names = [c.name for c in ALL_TYPES]
    got = fetch(postgres, pg_database, f"SELECT {', '.join(names)}, f::float8 FROM all_types ORDER BY id")
    for want, have in zip(rows, got, strict=True):
        by_name = dict(zip(names, have, strict=False))
        by_name["f"] = have[-1]  # real read back as its exact float32 value
        stored_geo = {POINT_4326: POINT_4326_EWKB, b"\x00\x00\x00\x00" + POINT_WKB: POINT_WKB, None: None}
        assert by_name == want | {"geo": stored_geo[want["geo"]]}
    # TIME is stored as a plain duration (hours beyond 24 h, negative), not days + time.
    assert fetch(postgres, pg_database, "SELECT tm::text FROM all_types ORDER BY id") == [
        ("-838:59:59",),
        (None,),
        ("838:59:59",),
    ]


def test_snapshot_and_binlog_paths_store_identical_values(
    sink: JdbcSink, postgres: PostgresServer, pg_database: str
) -> None:
    """architecture §3 rule 7: a row written by a split and by a binlog batch is the same sink value."""
    by_split = table_schema("by_split", ALL_TYPES, ["id"])
    by_binlog = table_schema("by_binlog", ALL_TYPES, ["id"])
    sink.prepare([by_split, by_binlog])
    rows = [MAX_ROW, NULL_ROW, ZERO_ROW]
    sink.write_split(by_split, split(by_split, None, None), arrow_rows(by_split, rows), HW)
    upserts: dict[Key, dict[str, Any]] = {(r["id"],): dict(r) for r in rows}
    sink.apply_changes(by_binlog, TableChanges(by_binlog.table, upserts, []))
    text = "SELECT t::text FROM {} t ORDER BY id"
    assert fetch(postgres, pg_database, text.format("by_split")) == fetch(
        postgres, pg_database, text.format("by_binlog")
    )


def _int_schema() -> TableSchema:
    return table_schema("orders", [col("k", "int(11)", nullable=False), col("v", "varchar(20)")], ["k"])


def test_split_write_is_idempotent_and_owns_its_range(
    sink: JdbcSink, postgres: PostgresServer, pg_database: str
) -> None:
    schema = _int_schema()
    sink.prepare([schema])
    everything = arrow_rows(schema, [{"k": k, "v": f"v{k}"} for k in range(0, 30)])
    sink.write_split(schema, split(schema, None, None), everything, HW)
    middle = split(schema, (10,), (20,), 1)
    data = arrow_rows(schema, [{"k": k, "v": f"new{k}"} for k in range(10, 20) if k % 3])
    sink.write_split(schema, middle, data, HW)
    sink.write_split(schema, middle, data, HW)  # a re-run after a crash converges
    got = dict(fetch(postgres, pg_database, "SELECT k, v FROM orders"))
    want = {k: f"v{k}" for k in range(0, 30) if not 10 <= k < 20} | {
        k: f"new{k}" for k in range(10, 20) if k % 3
    }
    assert got == want
    # An empty split removes everything in its range (the source deleted those rows).
    sink.write_split(schema, split(schema, (20,), None, 2), arrow_rows(schema, []), HW)
    assert keys(postgres, pg_database, "orders") == set(want) - set(range(20, 30))


# utf8mb4_general_ci: letters weigh as their upper case without accents, so 'a' < 'B' < 'b2' < 'C',
# '_' (0x5F) sorts after every letter, 'é' sorts with 'E'. PostgreSQL's order (ICU en-US here, or
# bytes) differs on all of these.
STRING_KEYS = [
    "apple",
    "Banana",
    "B",
    "b2",
    "cherry",
    "Date",
    "éclair",
    "Écu",
    "mango",
    "Zed",
    "_x",
    "[a",
    "e-1",
    "E.2",
]


def _string_schema(collation: str = GENERAL_CI) -> TableSchema:
    columns = [col("k", "varchar(20)", nullable=False, collation=collation), col("v", "int(11)")]
    return table_schema("names", columns, ["k"])


@pytest.mark.parametrize("collation", [GENERAL_CI, "utf8mb4_unicode_ci", "utf8mb4_bin", "latin1_swedish_ci"])
def test_string_key_split_deletes_exactly_its_mysql_range(
    sink: JdbcSink, postgres: PostgresServer, pg_database: str, collation: str
) -> None:
    from sparkcdc.core.keys import KeyOrder

    schema = _string_schema(collation)
    order = KeyOrder.for_columns(schema.key_collations())
    sink.prepare([schema])
    rows = [{"k": k, "v": i} for i, k in enumerate(STRING_KEYS)]
    sink.write_split(schema, split(schema, None, None), arrow_rows(schema, rows), HW)
    bounds: list[Key | None] = [None, ("b",), ("m",), None]
    for index, (start, end) in enumerate(itertools.pairwise(bounds)):
        inside = {k for k in STRING_KEYS if order.in_range((k,), start, end)}
        kept = {k for k in sorted(inside)[::2]}
        data = arrow_rows(schema, [r for r in rows if r["k"] in kept])
        before = keys(postgres, pg_database, "names")
        sink.write_split(schema, split(schema, start, end, index), data, HW)
        assert keys(postgres, pg_database, "names") == (before - inside) | kept, (start, end)


def test_string_key_superset_uses_index_and_handles_non_ascii(
    sink: JdbcSink, postgres: PostgresServer, pg_database: str
) -> None:
    schema = _string_schema()
    sink.prepare([schema])
    many = [{"k": f"user-{i:05d}@example.com", "v": i} for i in range(2000)] + [{"k": "Ünïcode", "v": -1}]
    sink.write_split(schema, split(schema, None, None), arrow_rows(schema, many), HW)
    # ['USER-00100', 'user-00200'): case differs from the stored keys. 'Ünïcode' (as 'UNICODE', before the
    # range) has non-ASCII letters, so it is always a candidate and the exact filter must keep it.
    sink.write_split(schema, split(schema, ("USER-00100",), ("user-00200",), 1), arrow_rows(schema, []), HW)
    left = keys(postgres, pg_database, "names")
    assert left == {r["k"] for r in many} - {f"user-{i:05d}@example.com" for i in range(100, 200)}
    indexes = fetch(postgres, pg_database, "SELECT indexname FROM pg_indexes WHERE tablename = 'names'")
    assert any("sparkcdc_rank" in name for (name,) in indexes)


def test_composite_key_with_int_then_string(
    sink: JdbcSink, postgres: PostgresServer, pg_database: str
) -> None:
    columns = [
        col("t", "int(11)", nullable=False),
        col("k", "varchar(20)", nullable=False),
        col("v", "int(11)"),
    ]
    schema = table_schema("tenants", columns, ["t", "k"])
    sink.prepare([schema])
    rows = [{"t": t, "k": k, "v": 0} for t in (1, 2, 3) for k in ("a", "B", "c", "_z")]
    sink.write_split(schema, split(schema, None, None), arrow_rows(schema, rows), HW)
    # [(1, 'b'), (2, 'C')) in general_ci: (1,'B'), (1,'c'), (1,'_z'), (2,'a'), (2,'B').
    sink.write_split(schema, split(schema, (1, "b"), (2, "C"), 1), arrow_rows(schema, []), HW)
    got = set(fetch(postgres, pg_database, "SELECT t, k FROM tenants"))
    assert got == {(1, "a"), (2, "c"), (2, "_z")} | {(3, k) for k in ("a", "B", "c", "_z")}


def test_binlog_batches_delete_then_upsert_and_replay(
    sink: JdbcSink, postgres: PostgresServer, pg_database: str
) -> None:
    schema = _int_schema()
    sink.prepare([schema])
    sink.write_split(
        schema, split(schema, None, None), arrow_rows(schema, [{"k": k, "v": "s"} for k in range(5)]), HW
    )
    batch = TableChanges(
        schema.table,
        upserts={
            (1,): {"k": 1, "v": "updated"},
            (7,): {"k": 7, "v": "moved from 2"},
            (9,): {"k": 9, "v": None},
        },
        deletes=[(2,), (3,), (42,)],
    )
    for _ in range(2):  # replaying a batch converges to the same state
        sink.apply_changes(schema, batch)
        got = dict(fetch(postgres, pg_database, "SELECT k, v FROM orders"))
        assert got == {0: "s", 1: "updated", 4: "s", 7: "moved from 2", 9: None}


def test_failed_write_rolls_back(sink: JdbcSink, postgres: PostgresServer, pg_database: str) -> None:
    schema = _int_schema()
    sink.prepare([schema])
    sink.write_split(schema, split(schema, None, None), arrow_rows(schema, [{"k": 1, "v": "keep"}]), HW)
    bad = arrow_rows(
        schema, [{"k": 2, "v": "ok"}, {"k": 3, "v": "nul\x00byte"}]
    )  # PostgreSQL text has no NUL
    with pytest.raises(SinkError, match=r"shop\.orders"):
        sink.write_split(schema, split(schema, None, None), bad, HW)
    assert dict(fetch(postgres, pg_database, "SELECT k, v FROM orders")) == {1: "keep"}


def test_current_schema_is_created_and_used(postgres: PostgresServer, pg_database: str) -> None:
    # The URL's ?currentSchema= reaches the dialect through JdbcSinkConfig.params.
    cfg = dataclasses.replace(sink_config(postgres, pg_database), params={"currentSchema": "replica"})
    dialect = PostgresDialect()
    conn = dialect.connect(cfg)
    try:
        with conn.cursor() as cur:
            cur.execute(dialect.create_table_sql(_int_schema()))
        conn.commit()
    finally:
        conn.close()
    tables = fetch(
        postgres,
        pg_database,
        "SELECT table_schema FROM information_schema.tables WHERE table_name = 'orders'",
    )
    assert tables == [("replica",)]


def test_connection_errors_name_the_settings_not_the_password(
    postgres: PostgresServer, pg_database: str
) -> None:
    assert postgres.cdc_user
    assert postgres.cdc_password
    missing = JdbcSinkConfig(
        "postgresql", postgres.host, postgres.port, "no_such_db", postgres.cdc_user, postgres.cdc_password
    )
    with pytest.raises(SinkError, match="create the database 'no_such_db'") as err:
        missing.open()
    assert postgres.cdc_password not in str(err.value)
    wrong = JdbcSinkConfig(
        "postgresql", postgres.host, postgres.port, pg_database, postgres.cdc_user, "s3cr3t-pw"
    )
    with pytest.raises(SinkError) as err:
        wrong.open()
    message = str(err.value)
    assert "passwordSecretRef" in message and "spec.sink.user" in message and "s3cr3t-pw" not in message
