"""Console sink: prints what would be written, for trying a pipeline out."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa

from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.splits import SnapshotSplit
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks.base import Sink, TableChanges
from sparkcdc.sinks.values import dumps


@dataclass(frozen=True)
class ConsoleSinkConfig:
    max_rows_per_table: int = 20

    def open(self) -> ConsoleSink:
        return ConsoleSink(self.max_rows_per_table)

    def describe(self) -> str:
        return "console"


class ConsoleSink(Sink):
    """Writes JSON lines to stderr; in a Spark task that is the executor's log."""

    def __init__(self, max_rows: int) -> None:
        self._max_rows = max_rows

    def prepare(self, schemas: Sequence[TableSchema]) -> None:
        for schema in schemas:
            cols = ", ".join(f"{c.name} {c.column_type}" for c in schema.columns)
            print(f"[console sink] {schema.table} ({cols})", file=sys.stderr)

    def write_split(
        self, schema: TableSchema, split: SnapshotSplit, data: pa.Table, hw: BinlogOffset
    ) -> None:
        print(f"[console sink] {split.split_id}: {data.num_rows} rows as of {hw}", file=sys.stderr)
        for row in data.slice(0, self._max_rows).to_pylist():
            print(dumps({"op": "+I", "table": str(schema.table), "data": row}), file=sys.stderr)

    def apply_changes(self, schema: TableSchema, changes: TableChanges) -> None:
        for record in changes.changelog[: self._max_rows]:
            print(dumps({"op": record.op, "table": str(schema.table), "data": record.data}), file=sys.stderr)

    def close(self) -> None:
        return None
