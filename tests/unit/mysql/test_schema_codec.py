"""The recorded table definition (mysql/schema_codec.py) and the checkpoint carrying it."""

from __future__ import annotations

import json

import pytest

from sparkcdc.core.checkpoint import Checkpoint, CheckpointError, decode, encode
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.routing import SinkTarget
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.columns import Column, Family
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.mysql.schema_codec import RecordedDefinition, decode_definition, encode_definition

T = TableId("shop", "orders")

# One column per type family (tests/harness/type_table.py's families), with the fields decoding needs.
COLUMNS = (
    Column("id", 1, "bigint", "bigint(20) unsigned", nullable=False, unsigned=True, precision=20, scale=0),
    Column("tiny", 2, "tinyint", "tinyint(4)", precision=3, scale=0, default_sql="-1"),
    Column("amount", 3, "decimal", "decimal(38,10)", precision=38, scale=10),
    Column("f", 4, "float", "float", precision=12),
    Column("d", 5, "double", "double", precision=22),
    Column("flags", 6, "bit", "bit(5)", precision=5, default_sql="b'101'"),
    Column("y", 7, "year", "year(4)"),
    Column("day", 8, "date", "date", zero_dates=True),
    Column("at", 9, "datetime", "datetime(6)", datetime_precision=6, zero_dates=True),
    Column(
        "ts",
        10,
        "timestamp",
        "timestamp(3)",
        nullable=False,
        datetime_precision=3,
        default_sql="current_timestamp(3)",
    ),
    Column("dur", 11, "time", "time(2)", datetime_precision=2),
    Column(
        "name", 12, "varchar", "varchar(40)", length=40, charset="utf8mb4", collation="utf8mb4_unicode_ci"
    ),
    Column(
        "state",
        13,
        "enum",
        "enum('a','it''s','')",
        members=("a", "it's", ""),
        charset="latin1",
        collation="latin1_swedish_ci",
    ),
    Column("tags", 14, "set", "set('x','y')", members=("x", "y"), charset="utf8mb4", collation="utf8mb4_bin"),
    Column("doc", 15, "longtext", "longtext", length=4294967295, charset="utf8mb4", collation="utf8mb4_bin"),
    Column("raw", 16, "varbinary", "varbinary(16)", length=16),
    Column("shape", 17, "point", "point"),
    Column("js", 18, "json", "json"),
    Column("odd", 19, "enum", "enum('a')", members=("other",)),  # labels not the spelled ones, ordinal gap
)


def _schema(**kw: object) -> TableSchema:
    base: dict[str, object] = dict(
        table=T, columns=COLUMNS, primary_key=("id",), chunk_key=("id",), row_key=("id",)
    )
    base.update(kw)
    return TableSchema(**base)  # type: ignore[arg-type]


def test_every_type_family_is_covered() -> None:
    assert {c.family for c in COLUMNS} == set(Family)


@pytest.mark.parametrize(
    "schema",
    [
        _schema(),
        _schema(primary_key=(), chunk_key=("tiny",), row_key=("tiny", "id"), row_key_unique=False),
        _schema(primary_key=("id", "tiny"), chunk_key=("id",), row_key=("id", "tiny")),
    ],
)
def test_definition_round_trips_exactly_through_json(schema: TableSchema) -> None:
    recorded = RecordedDefinition(
        schema, BinlogOffset("binlog.000012", 4567), BinlogOffset("binlog.000003", 9)
    )
    doc = json.loads(json.dumps(encode_definition(recorded)))
    assert decode_definition(T, doc) == recorded
    streamed = RecordedDefinition(schema, BinlogOffset("binlog.000012", 4567), None)
    assert decode_definition(T, json.loads(json.dumps(encode_definition(streamed)))) == streamed


def test_gtids_and_targets_are_not_recorded() -> None:
    schema = _schema(target=SinkTarget("elsewhere"))
    recorded = RecordedDefinition(schema, BinlogOffset("binlog.000002", 7, "0-1-5"), None)
    back = decode_definition(T, encode_definition(recorded))
    assert back.schema.target is None and back.loaded_at == BinlogOffset("binlog.000002", 7)


@pytest.mark.parametrize(
    "doc", [{}, {"f": 99, "c": [], "pk": [], "at": None}, {"f": 1, "c": [["x"]], "pk": []}]
)
def test_malformed_or_unknown_records_are_refused(doc: dict[str, object]) -> None:
    with pytest.raises(CheckpointError):
        decode_definition(T, doc)


def test_checkpoint_carries_definitions_and_reads_version_1() -> None:
    doc = encode_definition(RecordedDefinition(_schema(), BinlogOffset("binlog.000001", 4), None))
    checkpoint = Checkpoint(binlog_offset=BinlogOffset("binlog.000001", 99), definitions={T: doc})
    encoded = json.loads(json.dumps(encode(checkpoint)))
    assert encoded["version"] == 2
    assert decode(encoded) == checkpoint
    # A version-1 checkpoint (no definitions) still reads, as one without any.
    old = encode(Checkpoint(binlog_offset=BinlogOffset("binlog.000001", 99)))
    old["version"] = 1
    assert decode(old) == Checkpoint(binlog_offset=BinlogOffset("binlog.000001", 99))
    assert "definitions" not in old
    with pytest.raises(CheckpointError, match="version 3"):
        decode({**encoded, "version": 3})


def _wide_column(n: int, i: int) -> Column:
    if i % 4 == 0:
        return Column(f"t{n}_column_{i}", i + 1, "int", "int(11)", precision=10, scale=0)
    if i % 4 == 1:
        return Column(
            f"t{n}_column_{i}", i + 1, "decimal", "decimal(12,2)", precision=12, scale=2, default_sql="0.00"
        )
    if i % 4 == 2:
        return Column(f"t{n}_column_{i}", i + 1, "datetime", "datetime", nullable=False)
    return Column(
        f"t{n}_column_{i}",
        i + 1,
        "varchar",
        "varchar(255)",
        length=255,
        charset="utf8mb4",
        collation="utf8mb4_general_ci",
    )


def test_fifty_tables_of_twenty_columns_stay_small() -> None:
    """The size docs/operations.md states: 50 tables x 20 columns in the status."""
    definitions = {}
    for n in range(50):
        table = TableId("shop", f"table_{n:02d}")
        columns = tuple(_wide_column(n, i) for i in range(20))
        key = (columns[0].name,)
        schema = TableSchema(table, columns, key, key, key)
        definitions[table] = encode_definition(
            RecordedDefinition(schema, BinlogOffset("binlog.000042", 123456789), None)
        )
    checkpoint = Checkpoint(binlog_offset=BinlogOffset("binlog.000042", 987654321), definitions=definitions)
    size = len(json.dumps(encode(checkpoint), separators=(",", ":")))
    plain = len(json.dumps(list(definitions.values()), separators=(",", ":")))
    print(f"definitions of 50 x 20 columns: {plain} bytes as JSON, checkpoint {size} bytes packed")
    assert size < 8_000
