"""The sink contract: what the snapshot and binlog phases ask of every sink.

A sink is opened inside a Spark task (snapshot splits) or in the driver (binlog batches), so
its configuration is a small picklable object and the sink itself is created where it runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import pyarrow as pa

from sparkcdc.core.fence import Fence
from sparkcdc.core.microbatch import ChangelogRecord, TableChanges
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.splits import SnapshotSplit
from sparkcdc.core.table_errors import DataError
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.columns import Column
from sparkcdc.mysql.schema import TableSchema

__all__ = [
    "AddedColumn",
    "ChangelogRecord",
    "ColumnChanges",
    "EvolvingSink",
    "FrameSink",
    "Sink",
    "SinkConfig",
    "SinkError",
    "TableChanges",
    "TableDataError",
    "TableFollowingSink",
    "TableSchemaError",
    "start_driver_session",
    "start_driver_session_with",
    "start_fenced",
    "writes_in_driver",
    "writes_splits",
]


@dataclass(frozen=True)
class AddedColumn:
    """A column added at the source. ``default_sql`` is the default as a MySQL expression (a
    literal such as ``5`` or ``'abc'``, or ``current_timestamp()``), None when it has none."""

    column: Column
    default_sql: str | None = None
    after: str | None = None  # the column before it at the source; None: first


@dataclass(frozen=True)
class ColumnChanges:
    """One followed DDL statement's effect on a target table (engine/schema_changes.py).

    A sink applies it as: drops, renames (``(old, new)`` names), adds, then ``altered``: the
    new definitions of widened columns (mysql/widening.py). Every step is skipped when the
    target already shows it, so a replay after a crash between the target's change and the
    checkpoint converges; the tracker refuses statements whose steps a target could not tell
    apart by its columns' names (mysql/ddl_alter.py). ``statement`` and ``offset`` say where in
    the stream it happened (the changelog records them).
    """

    added: tuple[AddedColumn, ...] = ()
    dropped: tuple[str, ...] = ()
    renamed: tuple[tuple[str, str], ...] = ()
    altered: tuple[Column, ...] = ()
    statement: str = ""
    offset: BinlogOffset | None = None

    def describe(self) -> str:
        parts = []
        if self.added:
            parts.append(f"added {[a.column.name for a in self.added]}")
        if self.dropped:
            parts.append(f"dropped {list(self.dropped)}")
        if self.renamed:
            parts.append("renamed " + ", ".join(f"{a} to {b}" for a, b in self.renamed))
        if self.altered:
            parts.append("widened " + ", ".join(f"{c.name} to {c.column_type}" for c in self.altered))
        return "; ".join(parts) or "no column change"


class SinkError(RuntimeError):
    """A sink refused a write; the message names the table and what to do."""


class TableSchemaError(SinkError):
    """The sink cannot follow a schema change of one table exactly (a Delta type change its
    type widening does not cover): that table stops, the others go on. Raised before the
    target was changed."""

    def __init__(self, message: str, table: TableId) -> None:
        super().__init__(message)
        self.table = table

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (str(self), self.table))


class TableDataError(SinkError):
    """The sink refused one table's rows (core/table_errors.py): that table stops, not the run.
    Nothing of the refused write was committed."""

    def __init__(self, message: str, table: TableId, error: DataError, statement: str) -> None:
        super().__init__(message)
        self.table, self.error, self.statement = table, error, statement

    def __reduce__(self) -> tuple[object, ...]:
        # Pickled from Spark tasks and threads like any exception: with its fields.
        return (type(self), (str(self), self.table, self.error, self.statement))


class Sink(Protocol):
    """What every sink implements."""

    def prepare(self, schemas: Sequence[TableSchema]) -> None:
        """Create or check target tables before any write; runs once in the driver."""

    def write_split(
        self, schema: TableSchema, split: SnapshotSplit, data: pa.Table, hw: BinlogOffset
    ) -> None:
        """Make the sink's rows in ``split``'s key range exactly ``data``, atomically."""

    def apply_changes(self, schema: TableSchema, changes: TableChanges) -> None:
        """Apply a collapsed binlog batch for one table, idempotently."""

    def close(self) -> None: ...


@runtime_checkable
class EvolvingSink(Protocol):
    """A sink that follows schema changes and truncations of its tables at their place in the
    stream (JDBC, Delta, the changelog). Both return what they did, for the log."""

    def evolve_table(self, schema: TableSchema, changes: ColumnChanges) -> list[str]: ...

    def truncate_table(self, schema: TableSchema, offset: BinlogOffset, statement: str) -> list[str]:
        """Remove every row of ``schema``'s table from its target (only its own rows in a target
        merged by a route), as one commit after everything before ``offset``."""


@runtime_checkable
class TableFollowingSink(Protocol):
    """A sink that follows a source table's rename and drop at their place in the stream
    (engine/table_moves.py): JDBC, Delta, the changelog. Each step is skipped where the target
    already shows it, so a replay after a crash before the checkpoint past the statement
    converges. Both return what they did, for the log."""

    def rename_table(
        self, old: TableSchema, new: TableSchema, offset: BinlogOffset, statement: str
    ) -> list[str]:
        """Give ``old``'s target ``new``'s name (nothing when the names are the same). Done already
        when only ``new``'s target exists. ``TableSchemaError`` before anything changed when
        ``new``'s target exists beside ``old``'s and holds rows."""

    def drop_table(self, schema: TableSchema, drop: bool, offset: BinlogOffset, statement: str) -> list[str]:
        """The table is gone at the source: remove its target when ``drop`` (only its own rows in
        a target merged by a route), else leave it as it is."""


class SinkConfig(Protocol):
    """Picklable settings that know how to open their sink where they run."""

    def open(self) -> Sink: ...

    def describe(self) -> str:
        """A one-line description for progress output, without secrets."""


class FrameSink(Sink, Protocol):
    """A sink that writes with Spark from the driver (Delta Lake).

    Its configuration has ``writes_in_driver = True``. The snapshot then never opens it in a
    Spark task: the tasks only read their splits, and their rows stay in the JVM as the DataFrame
    ``rows`` (built on ``session``), which the sink writes in one commit per wave and table. The
    driver's own threads may open it and ``write_split`` when its configuration ``writes_splits``.
    It asks for the driver's Spark session when it first needs it (``start_driver_session``).
    """

    @property
    def session(self) -> Any:
        """The SparkSession that ``rows`` DataFrames must be built on."""

    def write_frame(self, schema: TableSchema, splits: Sequence[SnapshotSplit], rows: Any) -> None:
        """Make the sink's rows in the key ranges of ``splits`` exactly ``rows``, atomically.

        ``rows`` is a lazy DataFrame in the sink's Spark types (sinks/spark_types.py); it is
        evaluated once, by the write.
        """


# How this process starts its Spark session, given by the entry point (driver/local.py,
# driver/main.py): a ``FrameSink`` starts it when it first writes with Spark, not before — on a
# local path Delta's creations, appends and small MERGEs need no JVM (sinks/delta/rs_merge.py).
_DRIVER_SESSION: list[Callable[[], Any]] = []


def start_driver_session_with(start: Callable[[], Any] | None) -> None:
    """Let ``FrameSink``s start this process's Spark session with ``start`` when they need it
    (None: no longer, e.g. once the run that gave it is over)."""
    _DRIVER_SESSION[:] = [] if start is None else [start]


def start_driver_session() -> None:
    """Start this process's Spark session if an entry point said how (else the caller finds
    none running and says so)."""
    for start in _DRIVER_SESSION:
        start()


def writes_in_driver(config: SinkConfig) -> bool:
    """True for configurations of ``FrameSink``s."""
    return bool(getattr(config, "writes_in_driver", False))


def writes_splits(config: SinkConfig) -> bool:
    """Whether the sink writes snapshot splits where they are read (``write_split``): every sink
    but a ``FrameSink``, unless its configuration says it can (``writes_splits``: Delta on the
    local file system)."""
    return not writes_in_driver(config) or bool(getattr(config, "writes_splits", False))


def start_fenced(config: SinkConfig, fence: Fence) -> SinkConfig:
    """A starting driver's sink settings: the sink's fence raised to ``fence`` now, and writes
    refused once a newer driver raised it (``FencedError``). Sinks without a fence (Delta, the
    changelog, the console) come back unchanged: their zombie writes are not fenced."""
    claim = getattr(config, "claim_fence", None)
    if claim is None:
        return config
    fenced: SinkConfig = claim(fence)
    return fenced
