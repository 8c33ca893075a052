"""What the Delta sink checks share: the sink, its table's rows, history and engines, and a
switch that leaves every MERGE to Spark (sink_checks.py, merge_checks.py)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
from delta_support import assert_rows_equal, normalized, source_schema

from sparkcdc.mysql.connection import SourceConfig
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks.delta import DeltaSink, DeltaSinkConfig, rs_merge
from sparkcdc.sinks.spark_types import spark_struct, to_spark_arrow


class ChecksBase:
    def __init__(self, request: dict[str, Any], spark: Any) -> None:
        self.source = SourceConfig(**request["source"])
        self.db = request["db"]
        self.lake = Path(request["lake"])
        self.spark = spark

    def schema(self, table: str) -> TableSchema:
        return source_schema(self.source, self.db, table)

    def sink(self, **options: Any) -> DeltaSink:
        return DeltaSinkConfig(str(self.lake), **options).open()

    def frame(self, sink: DeltaSink, schema: TableSchema, data: pa.Table) -> Any:
        return sink.session.createDataFrame(to_spark_arrow(schema, data), schema=spark_struct(schema))

    def read(self, sink: DeltaSink, schema: TableSchema, version: int | None = None) -> pa.Table:
        reader = sink.session.read.format("delta")
        if version is not None:
            reader = reader.option("versionAsOf", version)
        return reader.load(sink._config.table_path(schema)).toArrow()

    def history(self, sink: DeltaSink, schema: TableSchema) -> list[Any]:
        from delta.tables import DeltaTable

        table = DeltaTable.forPath(sink.session, sink._config.table_path(schema))
        return sorted(table.history().select("version", "operation", "userMetadata").collect())

    def properties(self, sink: DeltaSink, schema: TableSchema) -> dict[str, str]:
        from delta.tables import DeltaTable

        table = DeltaTable.forPath(sink.session, sink._config.table_path(schema))
        return dict(table.detail().select("properties").collect()[0][0] or {})

    def expect(self, sink: DeltaSink, schema: TableSchema, canonical: pa.Table, what: str) -> None:
        want = normalized(schema, to_spark_arrow(schema, canonical))
        got = normalized(schema, self.read(sink, schema))
        assert_rows_equal(schema, want, got, what)

    # -- the checks -----------------------------------------------------------------------------

    def engines(self, sink: DeltaSink, schema: TableSchema) -> list[str]:
        """The engine of each commit of the table (its log's ``commitInfo.engineInfo``)."""
        log_dir = Path(sink._config.table_path(schema)) / "_delta_log"
        out = []
        for commit in sorted(log_dir.glob("*.json")):
            for line in commit.read_text().splitlines():
                info = json.loads(line).get("commitInfo")
                if info is not None:
                    out.append(str(info.get("engineInfo", "")).split("/")[0].split(":")[0])
        return out


@contextlib.contextmanager
def rs_merge_rows(limit: int) -> Iterator[None]:
    """The most rows delta-rs rewrites for a MERGE (rs_merge.py) within the block: 0, Spark's."""
    saved, rs_merge.RS_MERGE_ROWS = rs_merge.RS_MERGE_ROWS, limit
    try:
        yield
    finally:
        rs_merge.RS_MERGE_ROWS = saved
