"""One table's failure is that table's: a table whose rows the sink refuses stops alone.

When the sink refuses a table's rows for what they hold (``sinks.base.TableDataError``: a value
too long for a column altered by hand, a NULL into NOT NULL, a constraint of the target; the
classification is core/table_errors.py) or the binlog holds rows of it that cannot be decoded,
that table becomes ``Phase.FAILED`` with a message naming it, the statement and the column, and
the other tables go on: in the snapshot the wave's other splits commit and the table's remaining
splits are not read; in the stream the batch's other tables are applied (each table is its own
sink transaction) and the failed table's events are dropped from then on. The failure is in the
same checkpoint write as the offset or splits it happened at, so a crash in between repeats the
refused write, which fails the table again. Any other error still stops the run with the
checkpoint at the last commit.

With referential actions (engine/cascading.py) a batch is one transaction over all its tables,
and a failed parent's events — the source of its children's cascades — are dropped: so a table
fails together with every table the followed actions link it to (``ReferentialPlan.linked``),
and the batch is applied again without them. A referential action's own statement that the sink
refuses is not attributed to one table: it stops the run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, MutableMapping, Sequence
from dataclasses import replace

from sparkcdc.core.assigner import SnapshotSplitAssigner
from sparkcdc.core.cascades import Cascade
from sparkcdc.core.checkpoint import Checkpoint, Phase, TableState
from sparkcdc.core.events import ChangeEvent
from sparkcdc.core.microbatch import TableChanges, build_batch
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.tables import TableId
from sparkcdc.engine.listener import PipelineListener
from sparkcdc.engine.runtime import PipelineRuntime
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks.base import Sink, TableDataError
from sparkcdc.sinks.targets import sink_changes, sink_schema
from sparkcdc.spark.snapshot import SplitSummary

__all__ = [
    "StreamFailures",
    "decode_failure_message",
    "failed_tables",
    "record_wave",
    "without_tables",
]


def _what_to_do(table: TableId) -> str:
    return (
        f"Fix the target table (or the source rows), then resnapshot {table} (spec.resnapshotNonce with "
        f"resnapshotTables: [{table}]), or remove it from spec.source.tables"
    )


def failed_tables(checkpoint: Checkpoint | None) -> dict[TableId, str]:
    """The checkpoint's failed tables and their messages."""
    if checkpoint is None:
        return {}
    return {t: s.error for t, s in checkpoint.tables.items() if s.phase is Phase.FAILED}


def record_wave(
    assigner: SnapshotSplitAssigner, summaries: Sequence[SplitSummary], listener: PipelineListener
) -> list[SplitSummary]:
    """Record a wave's committed splits as finished and fail the tables whose rows the sink
    refused (their other splits are not handed out again); returns the committed splits."""
    done = [s for s in summaries if not s.failure]
    assigner.on_finished([s.finished_info() for s in done])
    for summary in summaries:
        table = summary.split.table
        state = assigner.state(table)
        if summary.failure and (state is None or state.phase is not Phase.FAILED):
            message = (
                f"table {table} stopped during the snapshot: {summary.failure}. The other tables go on. "
                + _what_to_do(table)
            )
            assigner.set_state(table, TableState(Phase.FAILED, message))
            listener.table_failed(table, message)
    return done


def decode_failure_message(table: TableId, offset: BinlogOffset, detail: str) -> str:
    return (
        f"table {table} stopped streaming at binlog {offset}: a row event of it could not be decoded "
        f"({detail}); the other tables keep streaming. {_what_to_do(table)}"
    )


def without_tables(
    events: Sequence[ChangeEvent], marks: Sequence[tuple[int, Cascade]], tables: Iterable[TableId]
) -> tuple[list[ChangeEvent], list[tuple[int, Cascade]]]:
    """A batch's events and cascade marks without those of ``tables``; the marks' positions
    (after the first n events) are moved to the events kept."""
    gone = set(tables)
    kept: list[ChangeEvent] = []
    before = [0]  # events kept among the first n
    for event in events:
        if event.table not in gone:
            kept.append(event)
        before.append(len(kept))
    moved = [(before[min(i, len(events))], c) for i, c in marks if not c.tables & gone]
    return kept, moved


class StreamFailures:
    """The tables stopped while streaming (and those the checkpoint had stopped already), kept
    for every checkpoint; shared by the live consumer and the parallel catch-up."""

    def __init__(
        self,
        checkpoint: Checkpoint,
        schemas: MutableMapping[TableId, TableSchema],
        listener: PipelineListener,
    ) -> None:
        self.states = {t: TableState(Phase.FAILED, e) for t, e in failed_tables(checkpoint).items()}
        self._schemas = schemas  # the streamer's: a failed table's rows are not written any more
        self._listener = listener
        self._linked: Callable[[TableId], set[TableId]] = lambda t: {t}
        for table in self.states:
            self._schemas.pop(table, None)

    def __contains__(self, table: object) -> bool:
        return table in self.states

    def __bool__(self) -> bool:
        return bool(self.states)

    def link(self, linked: Callable[[TableId], set[TableId]]) -> None:
        """From now on fail tables together with the tables ``linked`` returns (referential
        actions). Tables failed before the stream started are not captured for the plan: the
        children of such a parent are named in the start's "parent not captured" warning."""
        self._linked = linked

    def fail(self, table: TableId, message: str) -> None:
        if table in self.states:
            return
        self.states[table] = TableState(Phase.FAILED, message)
        self._schemas.pop(table, None)
        self._listener.table_failed(table, message)
        self._fail_linked(table, message)

    def _fail_linked(self, table: TableId, message: str) -> None:
        for other in sorted(self._linked(table) - {table} - set(self.states)):
            self.fail(
                other,
                f"table {other} stopped with {table}, which referential actions link it to (its cascades "
                f"come from {table}'s events): {message}",
            )

    def onto(self, checkpoint: Checkpoint) -> Checkpoint:
        """``checkpoint`` with the failed tables' states."""
        if not self.states:
            return checkpoint
        return replace(checkpoint, tables={**checkpoint.tables, **self.states})

    def apply(self, sink: Sink, batch: Iterable[TableChanges], end: BinlogOffset) -> None:
        """Apply each table's changes (its own sink transaction); a table whose rows the sink
        refuses fails, the others are applied."""
        for changes in batch:
            schema = self._schemas.get(changes.table)
            if schema is None:
                continue  # failed earlier in this batch, or its rows arrived before it failed
            try:
                sink.apply_changes(sink_schema(schema), sink_changes(schema, changes))
            except TableDataError as err:
                self.fail(changes.table, self._message(changes.table, end, err))

    def apply_cascading(
        self,
        apply: Callable[[Sequence[ChangeEvent], Sequence[tuple[int, Cascade]]], None],
        events: Sequence[ChangeEvent],
        marks: Sequence[tuple[int, Cascade]],
        end: BinlogOffset,
    ) -> None:
        """Apply a batch with referential actions in one transaction (``apply``); when the sink
        refuses a table's rows, that table fails with its linked tables and the batch, rolled
        back, is applied again without them."""
        while True:
            kept, moved = without_tables(events, marks, self.states)
            try:
                apply(kept, moved)
                return
            except TableDataError as err:
                if err.table in self.states or err.table not in self._schemas:
                    raise  # not one of the batch's tables: no progress possible this way
                self.fail(err.table, self._message(err.table, end, err))

    def live_events(self, events: Sequence[ChangeEvent]) -> list[ChangeEvent]:
        return [e for e in events if e.table not in self.states]

    def row_keys(self) -> dict[TableId, tuple[str, ...]]:
        return {t: tuple(s.row_key) for t, s in self._schemas.items()}

    def build(self, events: Sequence[ChangeEvent], end: BinlogOffset) -> list[TableChanges]:
        """The batch's net changes of the tables that have not failed."""
        return build_batch(self.live_events(events), self.row_keys(), end=end)

    @staticmethod
    def _message(table: TableId, end: BinlogOffset, err: TableDataError) -> str:
        return (
            f"table {table} stopped streaming in the batch ending at binlog {end}: {err}; the other tables "
            f"keep streaming. {_what_to_do(table)}"
        )


def without_failed_tables(runtime: PipelineRuntime, checkpoint: Checkpoint | None) -> PipelineRuntime:
    """The runtime with ``spec.source.tables`` entries naming failed tables left out: a table that
    stopped on a rename or drop may be gone from the source, which must not stop the others."""
    if checkpoint is None:
        return runtime
    failed = {str(t) for t, s in checkpoint.tables.items() if s.phase is Phase.FAILED}
    source = runtime.pipeline.spec.source
    kept = [entry for entry in source.tables if entry not in failed]
    if not failed or len(kept) == len(source.tables) or not kept:
        return runtime
    spec = runtime.pipeline.spec.model_copy(update={"source": source.model_copy(update={"tables": kept})})
    return replace(runtime, pipeline=runtime.pipeline.model_copy(update={"spec": spec}))
