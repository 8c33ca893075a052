"""Which tables a streaming pipeline captures, as that changes while it streams.

Three things change it without a restart: a spec edit (capture_changes.py), a statement at the
source that may create a table the spec selects (``CREATE TABLE``, a rename to a selected name),
and a resnapshot request. The streamer calls :meth:`TableCapture.follow` at a batch boundary; a
table that is no longer selected stops being captured at once, a new one is handed to the live
reader (``ReaderThread.add_tables``), which says from which item on it decodes it
(``TablesAdded``), and only then does :meth:`TableCapture.added` start its snapshot beside the
stream (interleaved.py) — or, for a pipeline that captures without a snapshot (startup modes
other than ``initial``), simply stream it from there.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from dataclasses import replace

from sparkcdc.core.checkpoint import Checkpoint, Phase, without_table
from sparkcdc.core.interleaved import interleaved_tables, without_snapshot
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.tables import TableId
from sparkcdc.engine.capture_changes import CaptureChange, CaptureChanges
from sparkcdc.engine.discovery import captures_table, discover_tables
from sparkcdc.engine.interleaved import InterleavedSnapshot
from sparkcdc.engine.listener import PipelineListener
from sparkcdc.engine.runtime import PipelineRuntime
from sparkcdc.engine.table_failures import without_failed_tables
from sparkcdc.mysql.binlog.reader import DdlStatement
from sparkcdc.mysql.connection import SourceError, connect
from sparkcdc.mysql.ddl import created_tables, strip_comments
from sparkcdc.mysql.queries import current_offset
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks.base import Sink
from sparkcdc.sinks.targets import sink_schemas

__all__ = ["TableCapture"]

# Statements after which a table the spec selects may exist that did not before.
_MAY_CREATE = re.compile(
    r"^(?:CREATE\s+(?:OR\s+REPLACE\s+)?TABLE|RENAME\s+TABLES?|ALTER\s+(?:ONLINE\s+|IGNORE\s+)*TABLE\s.*\sRENAME\b)",
    re.IGNORECASE | re.DOTALL,
)

AddToReader = Callable[[Mapping[TableId, TableSchema | None], BinlogOffset | None], None]


def may_create_table(ddl: DdlStatement) -> bool:
    return _MAY_CREATE.match(strip_comments(ddl.query).strip()) is not None


class TableCapture:
    """The streamer's captured tables as spec edits and the source's DDL change them."""

    def __init__(
        self,
        runtime: PipelineRuntime,
        sink: Sink,
        schemas: MutableMapping[TableId, TableSchema],
        interleaved: InterleavedSnapshot,
        listener: PipelineListener,
        changes: CaptureChanges | None = None,
    ) -> None:
        self._runtime = runtime
        self._sink = sink
        self._schemas = schemas  # the streamer's
        self.interleaved = interleaved
        self._listener = listener
        self._changes = changes
        self._change: CaptureChange | None = None
        self._rediscover = False
        self._adding: dict[TableId, TableSchema] = {}  # handed to the reader, not yet decoded
        self._look_again_at: BinlogOffset | None = None  # rediscover once the stream is there
        self.changed = False  # the captured set changed: the streamer rebuilds its split filter

    @property
    def snapshots(self) -> bool:
        return self._runtime.pipeline.spec.startup.mode == "initial"

    def resume(self, checkpoint: Checkpoint) -> Checkpoint:
        """At the stream's start: those whose snapshot ran beside the stream go on. Tables the
        checkpoint does not know yet (added while the pipeline was down) are captured once the
        stream has passed the source's position now: a statement before it may be what made
        them (a rename of a captured table, which the stream follows without a snapshot)."""
        if not self.snapshots:
            return checkpoint
        new = [t for t in self._schemas if t not in checkpoint.tables]
        if new:
            for table in new:
                del self._schemas[table]
            self._look_again_at = self._position()
        self.interleaved.start(checkpoint, [t for t in interleaved_tables(checkpoint) if t in self._schemas])
        return checkpoint

    def passed(self, offset: BinlogOffset) -> None:
        """The stream committed up to ``offset``."""
        if self._look_again_at is not None and not offset < self._look_again_at:
            self._look_again_at, self._rediscover = None, True

    @property
    def adding(self) -> bool:
        """Whether tables are waiting to be captured: for the stream to pass a position, or
        handed to the reader, which has not said it decodes them yet."""
        return bool(self._adding) or self._look_again_at is not None

    def abandon(self) -> None:
        """The reader stops before it took the tables handed to it: look for them again."""
        if self._adding:
            self._adding.clear()
            self._rediscover = True

    def may_capture(self, ddl: DdlStatement) -> bool:
        """Whether ``ddl`` may make a table exist that the spec selects (the Go decoder hands the
        stream over at it: the Python reader follows new tables). A statement whose new names the
        spec does not select — a table of the sink's own database on the source's server, a
        scratch table — does not; one whose names cannot be read does."""
        if not may_create_table(ddl):
            return False
        names = created_tables(ddl.query, ddl.schema)
        spec = self._runtime.pipeline.spec
        return names is None or any(captures_table(spec, t) for t in names)

    def saw(self, ddl: DdlStatement) -> None:
        """A statement that concerns no captured table: look for new tables after it."""
        if may_create_table(ddl):
            self._rediscover = True

    def pending(self) -> bool:
        """Whether something is to be followed at the next batch boundary (does not block)."""
        if self._change is None and self._changes is not None:
            self._change = self._changes.take()
        return self._rediscover or self._change is not None

    def follow(self, checkpoint: Checkpoint, add_to_reader: AddToReader) -> Checkpoint:
        """At a batch boundary (everything before it committed): apply the spec edit or look for
        new tables; tables to add go to the reader, and come back through ``added``."""
        if not self.pending():
            return checkpoint
        change, self._change, self._rediscover = self._change, None, False
        if change is not None:
            self._runtime = replace(self._runtime, pipeline=change.pipeline)
        wanted, loaded_at = self._discover(checkpoint)
        if wanted is None:
            return checkpoint
        captured = {*self._schemas, *self._adding}
        failed = {t for t, s in checkpoint.tables.items() if s.phase is Phase.FAILED}
        # Only what the spec no longer selects: a table gone from the source is the stream's to
        # follow, at its RENAME or DROP (table_moves.py), which may still be ahead.
        spec = self._runtime.pipeline.spec
        gone = [t for t in self._schemas if t not in wanted and not captures_table(spec, t)]
        new = {t: s for t, s in wanted.items() if t not in captured and t not in failed}
        if gone:
            checkpoint = self._stop_capturing(checkpoint, gone, add_to_reader)
        if new:
            self._listener.message(f"capturing {', '.join(map(str, new))} from now on")
            self._adding.update(new)
            add_to_reader(dict(new), loaded_at)
        again = [t for t in (change.resnapshot if change else ()) if t in self._schemas]
        if again:
            self._listener.message(f"snapshotting {', '.join(map(str, again))} again while streaming")
            self.interleaved.forget(again)
            checkpoint = without_snapshot(checkpoint, again)
            self.interleaved.start(checkpoint, again)
            self.changed = True
        return checkpoint

    def added(self, checkpoint: Checkpoint, tables: Iterable[TableId]) -> Checkpoint:
        """The reader decodes ``tables`` from here on: capture them."""
        schemas = {t: self._adding.pop(t) for t in tables if t in self._adding}
        if not schemas:
            return checkpoint
        self._schemas.update(schemas)
        self._sink.prepare(sink_schemas(self._schemas.values()))
        self._listener.tables_prepared(list(schemas))
        self.changed = True
        if not self.snapshots:
            return checkpoint
        checkpoint = without_snapshot(checkpoint, list(schemas))
        self.interleaved.start(checkpoint, schemas)
        return checkpoint

    def _position(self) -> BinlogOffset:
        conn = connect(self._runtime.source)
        try:
            return current_offset(conn)
        finally:
            conn.close()

    def _discover(self, checkpoint: Checkpoint) -> tuple[dict[TableId, TableSchema] | None, BinlogOffset]:
        # A table named in the spec that stopped (dropped, say) must not stop the discovery.
        runtime = without_failed_tables(self._runtime, checkpoint)
        conn = connect(runtime.source)
        try:
            loaded_at = current_offset(conn)
            try:
                return discover_tables(runtime, conn), loaded_at
            except SourceError as err:
                self._listener.warning(f"the captured tables stay as they are: {err}")
                return None, loaded_at
        finally:
            conn.close()

    def _stop_capturing(
        self, checkpoint: Checkpoint, tables: list[TableId], add_to_reader: AddToReader
    ) -> Checkpoint:
        self._listener.message(f"no longer capturing {', '.join(map(str, tables))}")
        add_to_reader(dict.fromkeys(tables), None)
        self.interleaved.forget(tables)
        self.changed = True
        for table in tables:  # added again later, it is snapshotted anew
            self._schemas.pop(table, None)
            checkpoint = without_table(checkpoint, table)
        return checkpoint
