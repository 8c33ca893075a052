"""What one pipeline's binlog phase shares between its readers: tables, sink, failures, settings.

The live path runs on the Go decoder (native_live.py) or on python-mysql-replication
(python_live.py), with parallel catch-up in between (catchup.py); all of them write the same
sink, keep the same table definitions and failures and checkpoint the same way, so that one
reader can take over from another at any committed batch (streaming.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from sparkcdc.api.spec import BinlogSpec
from sparkcdc.core.checkpoint import Checkpoint, Phase, collapse_pure_tables
from sparkcdc.core.event_filter import BinlogSplitFilter
from sparkcdc.core.events import ChangeEvent
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.tables import TableId
from sparkcdc.engine.backlog import LAG_CHECK_SECONDS
from sparkcdc.engine.cascading import CascadeFollower
from sparkcdc.engine.catchup import CatchupSettings
from sparkcdc.engine.interleaved import InterleavedSnapshot
from sparkcdc.engine.listener import PipelineListener
from sparkcdc.engine.planning import key_order
from sparkcdc.engine.schema_history import SchemaHistory
from sparkcdc.engine.table_capture import TableCapture
from sparkcdc.engine.table_failures import StreamFailures
from sparkcdc.mysql.connection import SourceConfig, connect
from sparkcdc.mysql.failover import with_gtid
from sparkcdc.mysql.flavor import detect_flavor
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks.base import Sink

__all__ = ["StreamSettings", "StreamState"]


@dataclass(frozen=True)
class StreamSettings:
    server_id: int
    binlog: BinlogSpec
    # Stop once everything up to this offset is committed (``--exit-when-caught-up``).
    stop_at: BinlogOffset | None = None
    chunk_key_overrides: Mapping[str, list[str]] = field(default_factory=dict)
    # Parallel catch-up of a large backlog before the live reader starts (engine/catchup.py).
    catchup: CatchupSettings | None = None
    # The source's @@server_id at start: the live reader refuses a (re)connection to another.
    source_server_id: int | None = None
    # How often the live reader asks whether it fell behind far enough for catch-up (backlog.py).
    lag_check_seconds: float = LAG_CHECK_SECONDS
    # The Go decoder for the live path where it is exact (native_live.py); None: Python only.
    native_decoder: Path | None = None
    # The Go decoder hands over every change in order (a sink keeping a log), not net effects.
    native_changes: bool = False
    # The replica id of the binlog backfill of splits read beside the stream (interleaved.py).
    split_server_id: int | None = None


@dataclass
class StreamState:
    """The binlog phase's shared parts (see the module docstring); ``schemas`` is what rows are
    written with, per table, kept current by schema changes and tables joining or leaving."""

    source: SourceConfig
    sink: Sink
    schemas: dict[TableId, TableSchema]
    settings: StreamSettings
    listener: PipelineListener
    save: Callable[[Checkpoint], None]
    interleaved: InterleavedSnapshot
    capture: TableCapture | None = None
    cascades: CascadeFollower | None = None
    loaded_at: dict[TableId, BinlogOffset] = field(default_factory=dict)  # schema_changes.py
    history: SchemaHistory = field(default_factory=SchemaHistory)  # the definitions checkpointed
    failures: StreamFailures = field(init=False)

    def __post_init__(self) -> None:
        self.failures = StreamFailures(Checkpoint(), self.schemas, self.listener)

    def build_filter(self, checkpoint: Checkpoint) -> BinlogSplitFilter:
        """The split filter of the tables whose snapshot is done (or which have none); those
        snapshotted beside the stream are routed by interleaved.py."""
        snapshotting = {t for t, s in checkpoint.tables.items() if s.phase is Phase.SNAPSHOT}
        beside = self.interleaved.tables() | snapshotting
        tables = [t for t in self.schemas if t not in beside]
        snapshotted = {t: checkpoint.finished.get(t, ()) for t in tables if checkpoint.finished.get(t)}
        return BinlogSplitFilter(
            snapshotted,
            {t: self.schemas[t].chunk_key for t in snapshotted},
            {t: key_order(self.schemas[t]) for t in snapshotted},
            streaming=[t for t in tables if t not in snapshotted],
        )

    def busy(self) -> bool:
        """Whether tables are being added or snapshotted beside the stream (the Python reader's)."""
        return bool(self.interleaved) or (self.capture is not None and self.capture.adding)

    def apply_events(self, events: Sequence[ChangeEvent], end: BinlogOffset) -> None:
        self.failures.apply(self.sink, self.failures.build(events, end), end)

    def with_failures(self, checkpoint: Checkpoint) -> Checkpoint:
        return self.history.onto(self.failures.onto(checkpoint))

    def with_gtid(self, offset: BinlogOffset) -> BinlogOffset:
        """``offset`` with its GTID position (catch-up rounds end at positions listed without
        one), so that its checkpoint can follow a failover."""
        if offset.gtid_set:
            return offset
        conn = connect(self.source)
        try:
            return with_gtid(conn, offset, detect_flavor(conn))
        finally:
            conn.close()

    def save_done(self, checkpoint: Checkpoint) -> Checkpoint:
        """Checkpoint what the sink committed, with pure tables collapsed and failures kept."""
        if checkpoint.binlog_offset is not None:
            checkpoint = replace(checkpoint, binlog_offset=self.with_gtid(checkpoint.binlog_offset))
        checkpoint = self.with_failures(collapse_pure_tables(checkpoint))
        self.save(checkpoint)
        return checkpoint
