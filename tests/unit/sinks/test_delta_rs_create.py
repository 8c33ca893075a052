"""New Delta tables created by delta-rs (sinks/delta/rs_create.py): the schema Spark would store,
no ``variantType`` reader feature, deletion vectors awaited once; Spark's cases left to Spark.
delta-rs runs in this process on a temporary directory: no JVM, no service."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from deltalake import DeltaTable

from sparkcdc.core.tables import TableId
from sparkcdc.mysql.columns import Column
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks.base import SinkError
from sparkcdc.sinks.delta import DeltaSinkConfig
from sparkcdc.sinks.delta.ledger import Ledger
from sparkcdc.sinks.delta.rs_create import (
    DELETION_VECTORS,
    awaits_deletion_vectors,
    create_table,
    table_state,
)
from sparkcdc.sinks.delta.tables import prepared_without_spark
from sparkcdc.sinks.spark_types import spark_struct

pytestmark = pytest.mark.unit

ID = Column("id", 1, "bigint", "bigint(20)", nullable=False)
PART = Column("part", 2, "tinyint", "tinyint(4)")
DTM = Column("dtm", 3, "datetime", "datetime(6)", datetime_precision=6)
WIDE = Column("wide", 4, "decimal", "decimal(65,30)", precision=65, scale=30)
ODD = Column("odd name", 5, "int", "int(11)")


def _schema(*columns: Column) -> TableSchema:
    return TableSchema(TableId("db", "t"), columns, ("id",), ("id",), ("id",))


def _create(
    path: Path, schema: TableSchema, config: DeltaSinkConfig, partitions: tuple[str, ...] = ()
) -> bool:
    return create_table(str(path), schema, partitions, config.properties(schema, creating=True))


def test_a_new_local_table_gets_sparks_schema_and_no_variant_feature(tmp_path: Path) -> None:
    schema = _schema(ID, PART, DTM, WIDE)
    path = tmp_path / "lake" / "t"
    assert _create(path, schema, DeltaSinkConfig(str(tmp_path), change_data_feed=True), ("part",))
    table = DeltaTable(str(path))
    assert json.loads(table.schema().to_json()) == json.loads(spark_struct(schema).json())
    assert table.metadata().partition_columns == ["part"]
    assert table.metadata().configuration == {"delta.enableChangeDataFeed": "true"}
    protocol = table.protocol()
    features = [*(protocol.reader_features or []), *(protocol.writer_features or [])]
    assert "variantType" not in features and "deletionVectors" not in features, protocol
    # Created once: a second call leaves the table to tables.py (it is there now).
    assert not _create(path, schema, DeltaSinkConfig(str(tmp_path)))


def test_deletion_vectors_are_awaited_once_per_table(tmp_path: Path) -> None:
    schema = _schema(ID)
    wanted, off = tmp_path / "wanted", tmp_path / "off"
    assert _create(wanted, schema, DeltaSinkConfig(str(tmp_path)))
    assert awaits_deletion_vectors(str(wanted))
    assert not awaits_deletion_vectors(str(wanted)), "asked twice in one process"
    assert not awaits_deletion_vectors(str(tmp_path / "none")), "no table"
    # A table someone else created without them: nothing awaited.
    DeltaTable.create(str(off), DeltaTable(str(wanted)).schema())
    assert not awaits_deletion_vectors(str(off))


def test_the_creation_commit_leaves_the_ledger_clean(tmp_path: Path) -> None:
    path = tmp_path / "t"
    assert _create(path, _schema(ID), DeltaSinkConfig(str(tmp_path)))
    ledger = Ledger()
    ledger.add(
        [
            (int(c["version"]), str(c["operation"]), c.get("userMetadata"))
            for c in DeltaTable(str(path)).history()
        ]
    )
    assert ledger.clean and ledger.version == 0


@pytest.mark.parametrize(
    ("config", "schema", "where"),
    [
        (DeltaSinkConfig("/x", table_properties=((DELETION_VECTORS, "false"),)), _schema(ID), "local"),
        (DeltaSinkConfig("/x", table_properties=(("delta.appendOnly", "true"),)), _schema(ID), "local"),
        (DeltaSinkConfig("/x"), _schema(ID, ODD), "local"),  # column mapping by name
        (DeltaSinkConfig("s3a://bucket/lake"), _schema(ID), "s3a://bucket/lake/t"),
    ],
)
def test_other_cases_are_left_to_spark(
    tmp_path: Path, config: DeltaSinkConfig, schema: TableSchema, where: str
) -> None:
    path = str(tmp_path / "t") if where == "local" else where
    assert not create_table(path, schema, (), config.properties(schema, creating=True))
    assert not (tmp_path / "t").exists()


def test_a_cut_off_creation_is_left_to_spark(tmp_path: Path) -> None:
    """A ``_delta_log`` without commits (a driver killed mid-creation) is cleared by tables.py."""
    (tmp_path / "t" / "_delta_log").mkdir(parents=True)
    assert not _create(tmp_path / "t", _schema(ID), DeltaSinkConfig(str(tmp_path)))


def test_an_existing_table_is_prepared_without_spark_unless_a_property_is_missing(tmp_path: Path) -> None:
    schema = _schema(ID, PART)
    config = DeltaSinkConfig(str(tmp_path), partition_by=(("db.t", ("part",)),))
    path = config.table_path(schema)
    assert prepared_without_spark(config, schema, path) == {"id", "part"}  # created
    state = table_state(path)
    assert state is not None and state.partitions == ("part",) and state.columns == {"id", "part"}
    assert prepared_without_spark(config, schema, path) == {"id", "part"}  # read: nothing to set
    with_feed = DeltaSinkConfig(str(tmp_path), partition_by=config.partition_by, change_data_feed=True)
    assert prepared_without_spark(with_feed, schema, path) is None  # Spark sets the property
    other = DeltaSinkConfig(str(tmp_path), partition_by=(("db.t", ("id",)),))
    with pytest.raises(SinkError, match="partitioned by"):
        prepared_without_spark(other, schema, path)
    assert table_state(str(tmp_path / "none")) is None
