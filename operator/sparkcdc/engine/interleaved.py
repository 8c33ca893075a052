"""Tables snapshotted while the binlog streams on: the consumer's side of DBLog's algorithm.

The streamer (streaming.py) hands every event of such a table to :meth:`InterleavedSnapshot.route`
and calls :meth:`InterleavedSnapshot.commit` after each batch it committed. The reads run on one
worker thread of their own — planning the table, then one split at a time, each the snapshot
phase's exact split read (mysql/split_reader.py: low watermark, chunk, high watermark, backfill)
— so the stream never waits for a chunk query; the consumer writes a split and its held-back
events in its own thread, in stream order, between two batches (core/interleaved.py says why
that is exact). The other tables' batches go on meanwhile: a split write costs one batch about
as much as a batch of the split's size.

Whatever is asked for but not yet written is forgotten when the live reader stops (catch-up,
the Go decoder, a schema change of the table): the split is simply asked for again later.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, MutableMapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import cast

import pyarrow as pa

from sparkcdc.api.spec import SnapshotSpec
from sparkcdc.core.checkpoint import Checkpoint
from sparkcdc.core.events import ChangeEvent
from sparkcdc.core.interleaved import (
    Route,
    SplitRouter,
    interleaved_tables,
    unfinished_splits,
    with_finished_split,
    with_plan,
)
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.splits import FinishedSplitInfo, SnapshotSplit
from sparkcdc.core.tables import TableId
from sparkcdc.engine.listener import PipelineListener
from sparkcdc.engine.planning import key_order, plan_table, tail_splits
from sparkcdc.mysql.connection import SourceConfig, connect
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.mysql.split_reader import SplitReadResult, read_split
from sparkcdc.sinks.base import FrameSink, Sink, TableDataError
from sparkcdc.sinks.spark_types import spark_struct, to_spark_arrow
from sparkcdc.sinks.targets import sink_rows, sink_schema
from sparkcdc.spark.snapshot import SplitSummary

__all__ = ["InterleavedSnapshot"]

log = logging.getLogger(__name__)

# Splits asked for at once per table: the next one is read while the consumer waits to pass the
# previous one's high watermark, without holding back more than two splits' events.
ASK_AHEAD = 2

Fail = Callable[[TableId, str], None]


@dataclass
class _Asked:
    split: SnapshotSplit
    result: Future[SplitReadResult]
    held: list[ChangeEvent] = field(default_factory=list)


@dataclass
class _Table:
    schema: TableSchema
    plan: Future[list[SnapshotSplit]] | None = None  # being planned
    router: SplitRouter | None = None  # planned
    asked: dict[int, _Asked] = field(default_factory=dict)
    rows: int = 0
    # The unbounded last split is cut into chunks right before it is asked for: a table planned
    # empty (just created) fills up while its first splits are read.
    tail: Future[list[SnapshotSplit]] | None = None
    tail_cut: bool = False


class InterleavedSnapshot:
    """The tables of a streaming pipeline whose snapshot runs beside the stream."""

    def __init__(
        self,
        source: SourceConfig,
        sink: Sink,
        schemas: MutableMapping[TableId, TableSchema],
        snapshot: SnapshotSpec,
        server_id: int,
        listener: PipelineListener,
    ) -> None:
        """``schemas``: the streamer's own mapping (definitions change with DDL); ``server_id``:
        the replica id of the splits' binlog backfill reads."""
        self._source = source
        self._sink = sink
        self._schemas = schemas
        self._snapshot = snapshot
        self._server_id = server_id
        self._listener = listener
        self._tables: dict[TableId, _Table] = {}
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sparkcdc-interleaved")

    def __bool__(self) -> bool:
        """Whether a snapshot is still running beside the stream."""
        return any(not _done(e) for e in self._tables.values())

    def tables(self) -> set[TableId]:
        """The tables routed here: snapshotting, or done and not yet ``release``d."""
        return set(self._tables)

    def done(self) -> list[TableId]:
        return [t for t, e in self._tables.items() if _done(e)]

    def release(self, tables: Iterable[TableId]) -> None:
        """The caller's split filter routes these finished tables from now on (until then they
        are routed here, by the same watermarks)."""
        for table in tables:
            if table in self._tables and _done(self._tables[table]):
                del self._tables[table]

    def ready(self, end: BinlogOffset) -> bool:
        """Whether ``commit`` at ``end`` would write something or record a plan."""
        for entry in self._tables.values():
            if entry.router is None and entry.plan is not None and entry.plan.done():
                return True
            if entry.tail is not None and entry.tail.done():
                return True
            first = min(entry.asked.items(), default=None)
            if first is not None and first[1].result.done() and not _high(first[1]) > end:
                return True
        return False

    def start(self, checkpoint: Checkpoint, tables: Iterable[TableId]) -> None:
        """Snapshot ``tables`` (each in the snapshot phase in ``checkpoint``, planned or not)."""
        for table in tables:
            if table in self._tables or table not in self._schemas:
                continue
            entry = _Table(self._schemas[table])
            self._tables[table] = entry
            if table in checkpoint.plans:
                entry.router = self._router(checkpoint, table)
                self._listener.message(f"{table}: snapshotting its remaining splits while streaming")
                total, done = len(entry.router.splits), len(entry.router.finished)
                self._listener.snapshot_planned({table: total}, {table: done})
            else:
                entry.plan = self._worker.submit(self._plan, entry.schema)
                self._listener.message(f"{table}: snapshotting it while the other tables stream")

    def forget(self, tables: Iterable[TableId]) -> None:
        """Stop snapshotting ``tables`` (failed, no longer captured)."""
        for table in tables:
            self._tables.pop(table, None)

    def schema_changed(self, checkpoint: Checkpoint, tables: Iterable[TableId]) -> None:
        """A DDL of ``tables`` was followed: splits asked for were read with the old definition;
        a table renamed or dropped is gone from here, and one renamed to goes on under its name."""
        for table in tables:
            entry = self._tables.get(table)
            if entry is not None and table in self._schemas:
                entry.schema = self._schemas[table]
                _unask(entry)
        snapshotting = set(interleaved_tables(checkpoint))  # a rename may have moved another's over
        self.forget([t for t in self._tables if t not in self._schemas or t not in snapshotting])
        self.start(checkpoint, [t for t in interleaved_tables(checkpoint) if t in self._schemas])

    def abandon(self) -> None:
        """Forget what was asked for and not written: the live reader stops, and events it held
        back will not all reach it; the splits are asked for again later."""
        for entry in self._tables.values():
            _unask(entry)

    def close(self) -> None:
        self._worker.shutdown(wait=False, cancel_futures=True)

    # -- the consumer's calls ------------------------------------------------------------------

    def route(self, event: ChangeEvent) -> list[ChangeEvent] | None:
        """What of ``event`` goes into the batch now (held-back parts are kept here); None
        when its table is not snapshotted beside the stream."""
        entry = self._tables.get(event.table)
        if entry is None:
            return None
        if entry.router is None:
            return []  # not planned yet: nothing asked for
        emitted: list[ChangeEvent] = []
        for route, index, part in entry.router.route(event):
            if route is Route.EMIT:
                emitted.append(part)
            elif route is Route.HOLD:
                entry.asked[index].held.append(part)
        return emitted

    def commit(
        self,
        checkpoint: Checkpoint,
        end: BinlogOffset,
        due: list[ChangeEvent],
        open_events: list[ChangeEvent],
        fail: Fail,
    ) -> Checkpoint:
        """Before the batch up to ``end`` is applied: record finished plans, write every split
        read as of a high watermark at or before ``end``, and hand its held-back events after that
        watermark to the batch (``due``: the caller applies them with it, in stream order;
        those of the still open transaction go into ``open_events``); ask for the next splits."""
        for table in list(self._tables):
            entry = self._tables[table]
            try:
                checkpoint = self._advance(table, entry, checkpoint, end, due, open_events)
            except TableDataError as err:
                self._tables.pop(table, None)
                fail(table, str(err))
        return checkpoint

    # -- internals -----------------------------------------------------------------------------

    def _advance(
        self,
        table: TableId,
        entry: _Table,
        checkpoint: Checkpoint,
        end: BinlogOffset,
        due: list[ChangeEvent],
        open_events: list[ChangeEvent],
    ) -> Checkpoint:
        if entry.router is None:
            if entry.plan is None or not entry.plan.done():
                return checkpoint
            splits = entry.plan.result()  # a planning error fails the run: the checkpoint is valid
            checkpoint = with_plan(checkpoint, table, splits, entry.schema.chunk_key)
            entry.router = self._router(checkpoint, table)
            self._listener.snapshot_planned({table: len(splits)}, {table: 0})
        if entry.tail is not None and entry.tail.done():
            checkpoint = self._cut_tail(table, entry, checkpoint, entry.tail.result())
        router = entry.router
        if router.is_done():
            return checkpoint
        for index, asked in sorted(entry.asked.items()):
            if not asked.result.done() or _high(asked) > end:
                break  # splits are written in key order, as they were asked for
            checkpoint = self._write(entry, asked, checkpoint, end, due, open_events)
            del entry.asked[index]
            router.asked.discard(index)
        if router.is_done():
            self._listener.message(f"{table}: snapshot finished while streaming ({entry.rows:,} rows)")
        else:
            self._ask(entry, router, checkpoint, table)
        return checkpoint

    def _write(
        self,
        entry: _Table,
        asked: _Asked,
        checkpoint: Checkpoint,
        end: BinlogOffset,
        due: list[ChangeEvent],
        open_events: list[ChangeEvent],
    ) -> Checkpoint:
        result = asked.result.result()
        schema, split = entry.schema, asked.split
        self._write_rows(schema, split, sink_rows(schema, result.data, result.high), result.high)
        after = [e for e in asked.held if e.offset > result.high]
        due.extend(e for e in after if not e.offset > end)
        open_events.extend(e for e in after if e.offset > end)
        assert entry.router is not None
        entry.router.finished[split.index] = result.high
        entry.rows += result.data.num_rows
        summary = SplitSummary(split, result.low, result.high, result.data.num_rows, result.backfill_events)
        self._listener.splits_finished([summary])
        return with_finished_split(checkpoint, FinishedSplitInfo(split, result.high, result.data.num_rows))

    def _write_rows(
        self, schema: TableSchema, split: SnapshotSplit, rows: pa.Table, high: BinlogOffset
    ) -> None:
        """The split's rows into the sink, in one commit: a sink writing with Spark from the
        driver (Delta) takes them as a DataFrame built from the rows in memory."""
        target = sink_schema(schema)
        if not hasattr(self._sink, "write_frame"):
            self._sink.write_split(target, split, rows, high)
            return
        sink = cast(FrameSink, self._sink)
        frame = sink.session.createDataFrame(to_spark_arrow(target, rows), schema=spark_struct(target))
        sink.write_frame(target, [split], frame)

    def _ask(self, entry: _Table, router: SplitRouter, checkpoint: Checkpoint, table: TableId) -> None:
        waiting = [s for s in unfinished_splits(checkpoint, table) if s.index not in router.asked]
        for split in waiting[: max(0, ASK_AHEAD - len(router.asked))]:
            if split.end is None and not entry.tail_cut:
                if entry.tail is None:
                    entry.tail = self._worker.submit(self._tail_pieces, entry.schema, split)
                return
            router.asked.add(split.index)
            # Asked before the read starts: its low watermark comes after every event routed so far.
            future = self._worker.submit(self._read, entry.schema, split)
            entry.asked[split.index] = _Asked(split, future)

    def _cut_tail(
        self, table: TableId, entry: _Table, checkpoint: Checkpoint, pieces: list[SnapshotSplit]
    ) -> Checkpoint:
        """The plan with its tail cut into ``pieces``, recorded before any of them is written."""
        entry.tail, entry.tail_cut = None, True
        router = entry.router
        assert router is not None
        if len(pieces) < 2:
            return checkpoint
        splits = [s for s in router.splits if s.index < pieces[0].index] + pieces
        checkpoint = with_plan(checkpoint, table, splits, entry.schema.chunk_key)
        key, order = router.key_columns, router.order
        entry.router = SplitRouter(splits, key, order, dict(router.finished), set(router.asked))
        self._listener.message(
            f"{table} grew while its splits were read: its last split is now {len(pieces)}"
        )
        self._listener.snapshot_planned({table: len(splits)}, {table: len(router.finished)})
        return checkpoint

    def _tail_pieces(self, schema: TableSchema, tail: SnapshotSplit) -> list[SnapshotSplit]:
        conn = connect(self._source)
        try:
            size = self._snapshot.chunk_size
            return tail_splits(conn, schema, size, start=tail.start, first_index=tail.index)
        finally:
            conn.close()

    def _router(self, checkpoint: Checkpoint, table: TableId) -> SplitRouter:
        plan = checkpoint.plans[table]
        schema = self._schemas[table]
        finished = {i.split.index: i.high_watermark for i in checkpoint.finished.get(table, ())}
        return SplitRouter(plan.splits(table), tuple(schema.chunk_key), key_order(schema), finished)

    def _plan(self, schema: TableSchema) -> list[SnapshotSplit]:
        conn = connect(self._source)
        try:
            return plan_table(conn, schema, self._snapshot)
        finally:
            conn.close()

    def _read(self, schema: TableSchema, split: SnapshotSplit) -> SplitReadResult:
        return read_split(self._source, schema, split, self._server_id, self._snapshot.fetch_size)


def _done(entry: _Table) -> bool:
    return entry.router is not None and entry.router.is_done()


def _high(asked: _Asked) -> BinlogOffset:
    return asked.result.result().high


def _unask(entry: _Table) -> None:
    entry.asked.clear()
    if entry.router is not None:
        entry.router.asked.clear()
