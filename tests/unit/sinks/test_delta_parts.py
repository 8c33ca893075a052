"""The pure parts of the Delta sink: Spark types of canonical rows, SQL literals and range
predicates, the idempotent-write version of an offset, what a table's history says about its
snapshot ranges, added-column defaults, the configuration and the session settings."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import replace
from decimal import Decimal

import pyarrow as pa
import pytest

from sparkcdc.api.sinks import DeltaSink as DeltaSinkSpec
from sparkcdc.core.jsoncodec import encode_key
from sparkcdc.core.keys import KeyOrder
from sparkcdc.core.microbatch import TableChanges
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.columns import Column
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.options import EngineOptions
from sparkcdc.sinks.base import AddedColumn, SinkError, writes_in_driver, writes_splits
from sparkcdc.sinks.delta import DeltaSinkConfig, commit_metadata, txn_version
from sparkcdc.sinks.delta.arrow_append import local_table_path
from sparkcdc.sinks.delta.ledger import Ledger as _Ledger
from sparkcdc.sinks.delta.merge import AppendProbes
from sparkcdc.sinks.delta.merge import changes_table as _changes_table
from sparkcdc.sinks.delta.merge import key_span as _key_span
from sparkcdc.sinks.delta.merge import merge_condition as _merge_condition
from sparkcdc.sinks.delta.snapshot import keys_sql as _keys_sql
from sparkcdc.sinks.delta.snapshot import ranges_sql as _ranges_sql
from sparkcdc.sinks.delta.tables import default_value as _default_value
from sparkcdc.sinks.factory import sink_config
from sparkcdc.sinks.spark_types import (
    from_spark_arrow,
    is_spark_ordered,
    spark_arrow_schema,
    spark_struct,
    sql_literal,
    to_spark_arrow,
)
from sparkcdc.spark.session import delta_conf, merge_conf

UTC = dt.timezone.utc


def _schema(*columns: Column, key: tuple[str, ...] = ("id",)) -> TableSchema:
    return TableSchema(TableId("db", "t"), columns, key, key, key)


ID = Column("id", 1, "bigint", "bigint(20)", nullable=False)
TAG = Column("tag", 1, "varchar", "varchar(20)", charset="utf8mb4", collation="utf8mb4_general_ci")
WIDE = Column("wide", 2, "decimal", "decimal(65,30)", precision=65, scale=30)
TM = Column("tm", 3, "time", "time(6)", datetime_precision=6)
TS = Column("ts", 4, "timestamp", "timestamp(6)", datetime_precision=6)
DTM = Column("dtm", 5, "datetime", "datetime(6)", datetime_precision=6)
UBIG = Column("ubig", 6, "bigint", "bigint(20) unsigned", unsigned=True)
BIN = Column("bin", 7, "varbinary", "varbinary(4)", length=4)


def test_canonical_rows_round_trip_through_spark_types() -> None:
    schema = _schema(ID, WIDE, TM, TS, DTM, UBIG, BIN)
    rows = [
        {
            "id": 1,
            "wide": Decimal("-1.500000000000000000000000000000"),
            "tm": dt.timedelta(hours=-838, minutes=-59, seconds=-59),
            "ts": dt.datetime(2038, 1, 19, 3, 14, 7, 500000, tzinfo=UTC),
            "dtm": dt.datetime(9999, 12, 31, 23, 59, 59, 999999),
            "ubig": Decimal(2**64 - 1),
            "bin": b"\x00\xff",
        },
        {
            "id": 2,
            "wide": Decimal(0).scaleb(-30),
            "tm": None,
            "ts": None,
            "dtm": None,
            "ubig": None,
            "bin": None,
        },
    ]
    canonical = pa.Table.from_pylist(rows, schema=schema.arrow_schema())
    stored = to_spark_arrow(schema, canonical)
    assert stored.schema == spark_arrow_schema(schema)
    assert stored.column("wide").to_pylist() == ["-1.500000000000000000000000000000", "0." + "0" * 30]
    assert stored.column("tm").to_pylist() == [-(838 * 3600 + 59 * 60 + 59) * 10**6, None]
    assert from_spark_arrow(schema, stored).to_pylist() == canonical.to_pylist()
    struct = spark_struct(schema)
    assert [f.dataType.simpleString() for f in struct.fields] == [
        "bigint",
        "string",
        "bigint",
        "timestamp",
        "timestamp_ntz",
        "decimal(20,0)",
        "binary",
    ]
    assert struct["tm"].metadata == {"mysql.type": "time(6)", "sparkcdc.unit": "microseconds"}


def test_spark_order_only_where_it_is_mysql_order() -> None:
    assert is_spark_ordered(ID) and is_spark_ordered(TM) and is_spark_ordered(BIN) and is_spark_ordered(UBIG)
    assert not is_spark_ordered(TAG) and not is_spark_ordered(WIDE)


def test_sql_literals() -> None:
    assert sql_literal(ID, 5) == "CAST(5 AS bigint)"
    assert sql_literal(TAG, "it's \\ ☃") == "'it\\'s \\\\ ☃'"
    assert sql_literal(TM, dt.timedelta(microseconds=-1)) == "CAST(-1 AS bigint)"
    assert sql_literal(TS, dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC)) == "timestamp_micros(1000000)"
    assert (
        sql_literal(DTM, dt.datetime(2024, 1, 2, 3, 4, 5, 6)) == "TIMESTAMP_NTZ'2024-01-02 03:04:05.000006'"
    )
    assert sql_literal(UBIG, Decimal(2**64 - 1)) == "CAST('18446744073709551615' AS decimal(20,0))"
    assert sql_literal(WIDE, Decimal("1E+2")) == "'100'"
    assert sql_literal(BIN, b"\x00\xab") == "X'00ab'"
    assert sql_literal(ID, None) == "CAST(NULL AS bigint)"


def test_range_predicates_join_adjacent_splits_and_expand_composite_keys() -> None:
    schema = _schema(ID)
    order = KeyOrder.natural()
    ranges = [((10,), (20,)), (None, (10,)), ((30,), None)]
    assert _ranges_sql(schema, ranges, order) == (
        "(`id` < CAST(20 AS bigint)) OR (`id` >= CAST(30 AS bigint))"
    )
    assert _ranges_sql(schema, [(None, None)], order) == "true"
    second = Column("n", 2, "int", "int(11)")
    pair = _schema(ID, second, key=("id", "n"))
    assert _ranges_sql(pair, [((1, 2), None)], order) == (
        "((`id` > CAST(1 AS bigint) OR (`id` = CAST(1 AS bigint) AND `n` >= CAST(2 AS int))))"
    )
    assert _keys_sql(pair, [(1, 2), (3, 4)]) == (
        "(`id`, `n`) IN ((CAST(1 AS bigint), CAST(2 AS int)), (CAST(3 AS bigint), CAST(4 AS int)))"
    )


def test_txn_version_follows_offset_order() -> None:
    offsets = [
        BinlogOffset("binlog.000001", 4),
        BinlogOffset("binlog.000001", 2**32),
        BinlogOffset("binlog.000002", 4),
        BinlogOffset("binlog.999999", 7),
        BinlogOffset("binlog.1000000", 4),
    ]
    versions = [txn_version(o) for o in offsets]
    assert versions == sorted(versions) and len(set(versions)) == len(versions)
    with pytest.raises(SinkError):
        txn_version(BinlogOffset("binlog.9000000", 4))


def _snapshot_meta(splits: list[tuple[int, tuple | None, tuple | None]]) -> str:
    encoded = [
        [i, None if s is None else encode_key(s), None if e is None else encode_key(e)] for i, s, e in splits
    ]
    return json.dumps({"sparkcdc": {"phase": "snapshot", "table": "db.t", "splits": encoded}})


def test_ledger_knows_which_ranges_are_empty() -> None:
    order = KeyOrder.for_columns(["utf8mb4_general_ci"])
    ledger = _Ledger()
    ledger.add(
        [
            (0, "CREATE TABLE", None),
            (1, "WRITE", _snapshot_meta([(0, None, ("c",))])),
            (2, "OPTIMIZE", None),
        ]
    )
    assert ledger.clean and ledger.version == 2
    assert ledger.empty_in([(("c",), None)], order)  # [c, ) does not meet [ , c)
    assert not ledger.empty_in([(("B",), ("d",))], order)  # 'B' < 'c' in general_ci
    assert ledger.empty_in([(("_",), None)], order)  # '_' sorts after the letters there
    ledger.add([(3, "MERGE", json.dumps({"sparkcdc": {"phase": "binlog", "offset": "b.1:4"}}))])
    assert not ledger.clean and not ledger.empty_in([(("zz",), None)], order)
    gap = _Ledger()
    gap.add([(5, "WRITE", _snapshot_meta([(0, None, None)]))])  # versions 0-4 are gone
    assert not gap.clean


def test_commit_metadata_is_only_ours() -> None:
    assert commit_metadata(None) is None
    assert commit_metadata("not json") is None
    assert commit_metadata('{"other": 1}') is None
    assert commit_metadata('{"sparkcdc": {"phase": "binlog"}}') == {"phase": "binlog"}


def test_changes_and_merge_condition() -> None:
    name = Column("name", 2, "varchar", "varchar(20)", charset="utf8mb4", collation="utf8mb4_bin")
    schema = _schema(ID, name)
    changes = TableChanges(
        TableId("db", "t"), {(7,): {"id": 7, "name": "x"}, (3,): {"id": 3, "name": "y"}}, [(9,)]
    )
    data = _changes_table(schema, changes)
    assert data.to_pylist() == [
        {"id": 7, "name": "x", "__sparkcdc_delete": False},
        {"id": 3, "name": "y", "__sparkcdc_delete": False},
        {"id": 9, "name": None, "__sparkcdc_delete": True},
    ]
    assert _merge_condition(schema, data) == (
        "t.`id` = s.`id` AND t.`id` >= CAST(3 AS bigint) AND t.`id` <= CAST(9 AS bigint)"
    )

    assert _key_span(schema, data.slice(0, 0)) is None  # nothing to bound


def test_append_probes_rest_after_a_span_held_rows() -> None:
    probes = AppendProbes(rest=2)
    assert probes.due("a") and probes.due("a")  # spans found empty: asked every batch
    probes.held("a")
    assert [probes.due("a") for _ in range(4)] == [False, False, True, True]
    assert probes.due("b")  # per table


def test_added_column_defaults() -> None:
    n = Column("n", 3, "int", "int(11)")
    s = Column("s", 4, "varchar", "varchar(10)", charset="utf8mb4", collation="utf8mb4_general_ci")
    assert _default_value(AddedColumn(n, "7")) == (7, " (existing rows: 7)")
    assert _default_value(AddedColumn(s, "'it''s'"))[0] == "it's"
    assert _default_value(AddedColumn(n, None)) == (None, "")
    assert _default_value(AddedColumn(n, "NULL")) == (None, "")
    value, note = _default_value(AddedColumn(TS, "current_timestamp()"))
    assert value is None and "expression" in note


def test_factory_and_configuration() -> None:
    spec = DeltaSinkSpec.model_validate(
        {
            "type": "delta",
            "path": "s3a://lake/shop/",
            "partitionBy": {"shop.orders": ["day"]},
            "tableProperties": {"delta.appendOnly": "false"},
            "changeDataFeed": True,
            "optimizeEveryCommits": 10,
        }
    )
    config = sink_config(spec, None)
    assert isinstance(config, DeltaSinkConfig) and writes_in_driver(config)
    assert not writes_splits(config)  # an object store: only Spark writes it
    assert config.merge_schema and config.optimize_every_commits == 10
    orders = _schema(ID)
    assert (
        config.table_path(replace(orders, table=TableId("shop", "orders"))) == "s3a://lake/shop/shop/orders"
    )
    assert config.partition_columns(TableId("shop", "orders")) == ("day",)
    odd = _schema(ID, Column("odd name", 2, "int", "int(11)"))
    assert config.properties(odd) == {
        "delta.appendOnly": "false",
        "delta.enableChangeDataFeed": "true",
        "delta.columnMapping.mode": "name",
    }
    assert "delta.columnMapping.mode" not in config.properties(_schema(ID))
    assert config.properties(_schema(ID), creating=True)["delta.enableDeletionVectors"] == "true"
    off = DeltaSinkConfig("/lake", table_properties=(("delta.enableDeletionVectors", "false"),))
    assert off.properties(_schema(ID), creating=True)["delta.enableDeletionVectors"] == "false"


def test_delta_session_settings() -> None:
    conf = delta_conf(EngineOptions(), snapshot_partitions=2)
    assert conf["spark.sql.extensions"] == "io.delta.sql.DeltaSparkSessionExtension"
    assert conf["spark.databricks.delta.snapshotPartitions"] == "2"
    assert "spark.jars" in conf or "spark.jars.packages" in conf
    merged = merge_conf({"spark.sql.extensions": "a.B", "spark.x": "1"}, conf, {"spark.x": "2"})
    assert merged["spark.sql.extensions"] == "a.B,io.delta.sql.DeltaSparkSessionExtension"
    assert merged["spark.x"] == "2"


def test_binlog_batches_tuned_for_merge_unless_the_spec_sets_them() -> None:
    from sparkcdc.api.spec import BinlogSpec
    from sparkcdc.sinks.delta.config import (
        DELTA_BATCH_INTERVAL_MS,
        DELTA_BATCH_ROWS,
        DELTA_LOCAL_BATCH_INTERVAL_MS,
    )

    remote = DeltaSinkConfig("s3a://bucket/lake").tune_binlog(BinlogSpec())
    assert (remote.batch_rows, remote.batch_interval_ms) == (DELTA_BATCH_ROWS, DELTA_BATCH_INTERVAL_MS)
    config = DeltaSinkConfig("/lake")  # delta-rs writes most batches: a shorter interval
    tuned = config.tune_binlog(BinlogSpec())
    assert (tuned.batch_rows, tuned.batch_interval_ms) == (DELTA_BATCH_ROWS, DELTA_LOCAL_BATCH_INTERVAL_MS)
    explicit = config.tune_binlog(BinlogSpec.model_validate({"batchRows": 500, "batchIntervalMs": 300}))
    assert (explicit.batch_rows, explicit.batch_interval_ms) == (500, 300)
    one = config.tune_binlog(BinlogSpec.model_validate({"batchIntervalMs": 300}))
    assert (one.batch_rows, one.batch_interval_ms) == (DELTA_BATCH_ROWS, 300)


def test_only_local_tables_take_splits_from_the_driver_threads() -> None:
    assert local_table_path("/lake/shop") == "/lake/shop"
    assert local_table_path("file:///lake/shop") == "/lake/shop"
    assert local_table_path("file://localhost/lake") == "/lake"
    for remote in ("s3a://lake/shop", "abfss://c@a.dfs.core.windows.net/x", "gs://b/x", "lake/relative"):
        assert local_table_path(remote) is None, remote
    assert writes_splits(DeltaSinkConfig("/lake")) and writes_splits(DeltaSinkConfig("file:///lake"))
    assert not writes_splits(DeltaSinkConfig("s3a://lake"))


def test_the_delta_sink_starts_spark_only_when_it_first_needs_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """No Spark at ``open`` (delta-rs may write everything); the session the entry point gave is
    started by the first use, and a sink finding none running says so."""
    from pyspark import SparkContext

    from sparkcdc.sinks.base import start_driver_session_with

    # As in a fresh driver process, whatever this test process started before.
    monkeypatch.setattr(SparkContext, "_active_spark_context", None)

    starts: list[int] = []
    start_driver_session_with(lambda: starts.append(1))
    try:
        sink = DeltaSinkConfig("/lake").open()
        assert starts == []
        with pytest.raises(SinkError, match="no Spark session is running"):
            _ = sink.session  # this starter starts nothing
        assert starts == [1]
    finally:
        start_driver_session_with(None)
    with pytest.raises(SinkError, match="no Spark session is running"):
        _ = DeltaSinkConfig("/lake").open().session
    assert starts == [1]
