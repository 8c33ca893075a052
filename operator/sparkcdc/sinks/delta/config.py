"""The Delta sink's settings and the marks its commits carry (``txnVersion``, ``userMetadata``)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from sparkcdc.api.spec import BinlogSpec
from sparkcdc.core.offsets import BinlogOffset, binlog_file_index
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks.base import SinkError

if TYPE_CHECKING:
    from sparkcdc.sinks.delta.sink import DeltaSink

__all__ = [
    "APP_ID",
    "DELTA_BEHIND_BATCH_EVENTS",
    "DELTA_LOCAL_BATCH_INTERVAL_MS",
    "CommitMarks",
    "DeltaSinkConfig",
    "commit_metadata",
    "metadata",
    "txn_version",
]

APP_ID = "sparkcdc"
_META = "sparkcdc"
_NEEDS_MAPPING = re.compile(r"[ ,;{}()\n\t=]")
_FILE_BITS = 23
_POS_BITS = 40
# A MERGE by Spark costs seconds whatever its size (the target's file scan, the rewrite, the
# commit): the sink asks for fewer, larger binlog batches than the defaults unless the spec sets
# them. On a local path delta-rs appends and merges most batches in a fraction of a second
# (arrow_append.py, rs_merge.py): a shorter interval keeps the table fresh; while a Spark MERGE
# runs, the batches waiting are gathered into one anyway (DELTA_BEHIND_BATCH_EVENTS).
DELTA_BATCH_ROWS = 50_000
DELTA_BATCH_INTERVAL_MS = 10_000
DELTA_LOCAL_BATCH_INTERVAL_MS = 1_000
# When the Go decoder's live path is behind, the batches waiting are merged as one up to this many
# events (engine/batch_sizing.py): the MERGE's fixed cost is paid once per this many, not per batch.
DELTA_BEHIND_BATCH_EVENTS = 200_000


def txn_version(offset: BinlogOffset) -> int:
    """A binlog offset as Delta's increasing transaction version: file index, then position."""
    index = binlog_file_index(offset.file)
    if index >= 1 << _FILE_BITS or offset.pos >= 1 << _POS_BITS:
        raise SinkError(
            f"binlog offset {offset} is beyond what the delta sink can record (file index < 2^23)"
        )
    return (index << _POS_BITS) | offset.pos


def commit_metadata(user_metadata: str | None) -> dict[str, Any] | None:
    """The sparkcdc part of a Delta commit's ``userMetadata``; None for other commits."""
    if not user_metadata:
        return None
    try:
        doc = json.loads(user_metadata)
    except ValueError:
        return None
    part = doc.get(_META) if isinstance(doc, dict) else None
    return part if isinstance(part, dict) else None


@dataclass(frozen=True)
class CommitMarks:
    """A binlog commit's idempotent-write marks (application id and version, which Delta keeps
    per application and skips a write at or below) and its ``userMetadata``."""

    app_id: str
    version: int
    user_metadata: str


def metadata(phase: str, table: TableId, **fields: Any) -> str:
    """A commit's ``userMetadata``: which phase wrote it, for which table, and its details."""
    return json.dumps({_META: {"phase": phase, "table": str(table), **fields}}, separators=(",", ":"))


@dataclass(frozen=True)
class DeltaSinkConfig:
    path: str
    partition_by: tuple[tuple[str, tuple[str, ...]], ...] = ()
    table_properties: tuple[tuple[str, str], ...] = ()
    change_data_feed: bool = False
    optimize_every_commits: int = 0
    merge_schema: bool = True
    # A FrameSink: the snapshot hands it DataFrames in the driver (sinks/base.py).
    writes_in_driver: ClassVar[bool] = True

    @property
    def writes_splits(self) -> bool:
        """Whether the driver's own threads may write snapshot splits too (``write_split``):
        delta-rs appends them to tables on the local file system (arrow_append.py)."""
        from sparkcdc.sinks.delta.arrow_append import local_table_path

        return local_table_path(self.path) is not None

    def open(self) -> DeltaSink:
        from sparkcdc.sinks.delta.sink import DeltaSink

        return DeltaSink(self)

    def describe(self) -> str:
        return f"delta at {self.path}"

    def tune_binlog(self, spec: BinlogSpec) -> BinlogSpec:
        """``spec`` with the batch size and interval the sink prefers where the spec left the
        defaults (``spec.binlog.batchRows`` / ``batchIntervalMs`` set explicitly win)."""
        update: dict[str, int] = {}
        if "batch_rows" not in spec.model_fields_set:
            update["batch_rows"] = max(spec.batch_rows, DELTA_BATCH_ROWS)
        if "batch_interval_ms" not in spec.model_fields_set:
            interval = DELTA_LOCAL_BATCH_INTERVAL_MS if self.writes_splits else DELTA_BATCH_INTERVAL_MS
            update["batch_interval_ms"] = max(spec.batch_interval_ms, interval)
        return spec.model_copy(update=update) if update else spec

    def table_path(self, schema: TableSchema) -> str:
        """The directory of ``schema``'s target (``spec.sink.tableName``, ``{db}/{table}``)."""
        table = schema.table
        name = f"{table.database}/{table.table}" if schema.target is None else schema.target.name
        return f"{self.path.rstrip('/')}/{name}"

    def partition_columns(self, table: TableId) -> tuple[str, ...]:
        return dict(self.partition_by).get(str(table), ())

    def properties(self, schema: TableSchema, *, creating: bool = False) -> dict[str, str]:
        """Table properties to set: the configured ones, change data feed, column mapping when a
        name needs it, and for a new table deletion vectors unless configured otherwise (a
        MERGE then marks replaced rows instead of rewriting every file it touches)."""
        props = dict(self.table_properties)
        if creating:
            props.setdefault("delta.enableDeletionVectors", "true")
        if self.change_data_feed:
            props["delta.enableChangeDataFeed"] = "true"
        if any(_NEEDS_MAPPING.search(c.name) for c in schema.columns):
            props.setdefault("delta.columnMapping.mode", "name")
        return props
