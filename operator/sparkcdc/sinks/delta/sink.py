"""``DeltaSink``: the sink contract over the table, snapshot and merge modules, plus maintenance.

Writes happen in the Spark driver (``FrameSink``): on Spark the snapshot tasks only read, and each
wave's rows of one table are written by one Delta commit (spark/frame_wave.py); the waves the driver
reads on its own threads are appended split by split from Arrow by delta-rs where it can
(arrow_append.py), else written with Spark.

``optimizeEveryCommits`` compacts a table with ``OPTIMIZE`` after that many commits of this
driver process to it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any, ClassVar

import pyarrow as pa

from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.splits import SnapshotSplit
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks.base import ColumnChanges, FrameSink, SinkError, TableChanges
from sparkcdc.sinks.delta import follow, table_follow, tables
from sparkcdc.sinks.delta.arrow_append import append_split
from sparkcdc.sinks.delta.config import DELTA_BEHIND_BATCH_EVENTS, DeltaSinkConfig
from sparkcdc.sinks.delta.merge import AppendProbes, merge_batch
from sparkcdc.sinks.delta.session import driver_session, failing
from sparkcdc.sinks.delta.snapshot import write_wave
from sparkcdc.sinks.spark_types import spark_struct, to_spark_arrow

__all__ = ["DeltaSink"]

log = logging.getLogger(__name__)

# Commits per table path in this driver process, for ``optimizeEveryCommits``.
_COMMITS: dict[str, int] = {}
_LOCK = threading.Lock()


class DeltaSink(FrameSink):
    # Read by the Go decoder's live path (engine/batch_sizing.py): waiting batches merged as one.
    behind_batch_events: ClassVar[int] = DELTA_BEHIND_BATCH_EVENTS

    def __init__(self, config: DeltaSinkConfig) -> None:
        self._config = config
        self._spark: Any = None  # started on first use: delta-rs may write everything (module docstring)
        self._lock = threading.Lock()
        self._columns: dict[str, set[str]] = {}
        self._probes = AppendProbes()  # which batches ask whether they may append (merge.py)

    @property
    def session(self) -> Any:
        """The sink's Spark session, started (with the driver's, if need be) on first use."""
        with self._lock:
            if self._spark is None:
                self._spark = driver_session(self._config.describe())
            return self._spark

    def prepare(self, schemas: Sequence[TableSchema]) -> None:
        for schema in schemas:
            path = self._config.table_path(schema)
            with failing(f"preparing the table of {schema.table}", path):
                columns = tables.prepared_without_spark(self._config, schema, path)
                if columns is None:
                    columns = tables.prepare_table(self.session, self._config, schema, path)
                self._columns[path] = columns

    def evolve_table(self, schema: TableSchema, changes: ColumnChanges) -> list[str]:
        """Follow a source column change (engine/schema_changes.py; tables.evolve_table)."""
        path = self._config.table_path(schema)
        with failing(f"following a schema change of {schema.table}", path):
            done, columns = tables.evolve_table(self.session, self._config, schema, changes)
        self._columns[path] = columns
        return done

    def truncate_table(self, schema: TableSchema, offset: BinlogOffset, statement: str) -> list[str]:
        """Follow a source TRUNCATE as one marked DELETE commit (follow.py)."""
        path = self._config.table_path(schema)
        with failing(f"emptying the table of {schema.table} for {statement!r}", path):
            done = follow.truncate(self.session, schema, path, offset, statement)
            self._committed(path)
        return done

    def rename_table(
        self, old: TableSchema, new: TableSchema, offset: BinlogOffset, statement: str
    ) -> list[str]:
        """Follow a source table rename by moving its table's directory (table_follow.py)."""
        path = self._config.table_path(old)
        with failing(f"moving the table of {old.table} for {statement!r}", path):
            return table_follow.rename_table(self.session, self._config, old, new)

    def drop_table(self, schema: TableSchema, drop: bool, offset: BinlogOffset, statement: str) -> list[str]:
        """Follow a source table drop: the table stays, or goes with ``drop`` (table_follow.py)."""
        if not drop:
            return []
        path = self._config.table_path(schema)
        with failing(f"removing the table of {schema.table} for {statement!r}", path):
            return table_follow.drop_table(self.session, self._config, schema, offset, statement)

    def write_split(
        self, schema: TableSchema, split: SnapshotSplit, data: pa.Table, hw: BinlogOffset
    ) -> None:
        """A split the driver read on its own threads (engine/wave_runner.py): appended from
        Arrow by delta-rs where it can (arrow_append.py), else written with Spark."""
        path = self._config.table_path(schema)
        with failing(f"writing snapshot split {split.split_id} of {schema.table}", path):
            rows = to_spark_arrow(schema, data)
            if not append_split(path, schema, split, rows):
                spark = self.session
                frame = spark.createDataFrame(rows, schema=spark_struct(schema))
                write_wave(spark, schema, path, [split], frame)
            self._committed(path)

    def write_frame(self, schema: TableSchema, splits: Sequence[SnapshotSplit], rows: Any) -> None:
        path = self._config.table_path(schema)
        with failing(f"writing snapshot splits of {schema.table}", path):
            write_wave(self.session, schema, path, splits, rows)
            self._committed(path)

    def apply_changes(self, schema: TableSchema, changes: TableChanges) -> None:
        if not changes.upserts and not changes.deletes:
            return
        path = self._config.table_path(schema)
        end = changes.end or max((r.offset for r in changes.changelog), default=None)
        if end is None:
            raise SinkError(f"a binlog batch of {schema.table} has no offset; cannot apply it exactly once")
        with failing(f"merging a binlog batch of {schema.table} up to {end}", path):
            self._ensure_columns(schema, path)
            probe = bool(changes.upserts) and self._probes.due(path)
            if not merge_batch(lambda: self.session, schema, path, changes, end, probe) and probe:
                self._probes.held(path)
            self._committed(path)

    def _ensure_columns(self, schema: TableSchema, path: str) -> None:
        have = self._columns.get(path)
        if have is None:
            have = tables.table_columns(self.session, path)
        if any(c.lower() not in have for c in schema.column_names):
            have = tables.ensure_columns(self.session, self._config, schema, path, have)
        self._columns[path] = have

    def _committed(self, path: str) -> None:
        """Count the commit; every ``optimizeEveryCommits``-th compacts the table."""
        every = self._config.optimize_every_commits
        with _LOCK:
            count = _COMMITS[path] = _COMMITS.get(path, 0) + 1
        if every and count % every == 0:
            from delta.tables import DeltaTable

            DeltaTable.forPath(self.session, path).optimize().executeCompaction()
            log.info("optimized %s after %d commits", path, count)

    def close(self) -> None:
        return None
