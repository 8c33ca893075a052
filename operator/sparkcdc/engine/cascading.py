"""Following the source's referential actions in the binlog phase (core/cascades.py).

At start the captured tables' foreign keys are read and planned; each warning (a parent not
captured, an action that cannot be followed, a sink without predicate writes) is reported once.
While streaming, every parent event that cascades places its ``Cascade``s after it in the batch
(``mark``), and every batch of such a pipeline is applied in one sink transaction as its segments:
each segment's cascades, then its events' net effect per table. The transaction also records the
batch's end in the sink (sinks/jdbc/applied.py), and a batch replayed after a kill is first cut to
what the sink does not hold yet (``core.cascades.unapplied``): a cascade of two hops replayed over
the sink's later state would miss the rows the replay writes again.

A cascade is followed only once every table it reads or writes has left the snapshot's
transition (the stream is past the table's last split high watermark): before that, part of the
child's rows in the sink are as of a later high watermark, and a predicate over all of them
would also hit rows that the source inserted after the cascade. Such skipped cascades, like
those inside a split's own watermark window, are named in a warning (docs/reference.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, cast, runtime_checkable

from sparkcdc.core.cascades import Cascade, ReferentialPlan, segments, unapplied
from sparkcdc.core.event_filter import BinlogSplitFilter
from sparkcdc.core.events import ChangeEvent
from sparkcdc.core.microbatch import build_batch
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.source_identity import SourceIdentity
from sparkcdc.core.tables import TableId
from sparkcdc.engine.listener import PipelineListener
from sparkcdc.mysql.connection import SourceConfig, connect
from sparkcdc.mysql.foreign_keys import load_foreign_keys
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks.base import Sink
from sparkcdc.sinks.targets import sink_changes, sink_schema

__all__ = ["CascadeFollower", "CascadingSink"]


@runtime_checkable
class CascadingSink(Protocol):
    """A sink that can run predicate writes, all of a batch in one transaction (JDBC)."""

    def batch_transaction(self) -> Any: ...

    def apply_cascades(self, cascades: Sequence[Cascade], names: Mapping[TableId, str]) -> None: ...

    def track_applied(self) -> None: ...

    def applied_through(self) -> tuple[str, str] | None: ...

    def mark_applied(self, source: str, through: str) -> None: ...


def _followable(schemas: Mapping[TableId, TableSchema]) -> Callable[[TableId], bool]:
    def followable(table: TableId) -> bool:
        target = schemas[table].target
        return target is None or target.plain

    return followable


class CascadeFollower:
    """Plans the referential actions of ``schemas`` and applies batches that carry cascades."""

    def __init__(
        self,
        source: SourceConfig,
        sink: Sink,
        schemas: Mapping[TableId, TableSchema],
        listener: PipelineListener,
    ) -> None:
        self._sink = sink
        self._listener = listener
        conn = connect(source)
        try:
            foreign_keys = load_foreign_keys(conn, schemas)
        finally:
            conn.close()
        plan = ReferentialPlan(foreign_keys, set(schemas), _followable(schemas))
        for warning in plan.warnings:
            listener.warning(f"{warning} (docs/reference.md, referential actions)")
        if plan and not isinstance(sink, CascadingSink):
            listener.warning(
                f"the sink does not follow referential actions: rows that ON DELETE CASCADE / SET NULL or "
                f"ON UPDATE CASCADE change at the source stay unchanged in "
                f"{', '.join(sorted(str(t) for t in plan.tables))}; use a jdbc sink for an exact replica"
            )
            plan = ReferentialPlan((), ())
        if plan:
            cast(CascadingSink, sink).track_applied()
        self.plan = plan
        self._skipped: set[TableId] = set()

    def __bool__(self) -> bool:
        return bool(self.plan)

    def cascades(
        self, event: ChangeEvent, event_filter: BinlogSplitFilter, live: Mapping[TableId, Any]
    ) -> list[Cascade]:
        """``event``'s cascades that the sink follows: all of whose tables are streaming
        (``live``) and past the snapshot transition (module docstring)."""
        out = []
        for cascade in self.plan.cascades(event):
            if not all(t in live for t in cascade.tables):
                continue  # a failed table: nothing is written to it any more
            unsettled = [t for t in cascade.tables if not _settled(event_filter, t, event.offset)]
            if unsettled:
                self._warn_skipped(unsettled, event.offset)
                continue
            out.append(cascade)
        return out

    def _warn_skipped(self, tables: Sequence[TableId], offset: BinlogOffset) -> None:
        new = sorted(set(tables) - self._skipped)
        if new:
            self._skipped.update(new)
            self._listener.warning(
                f"a referential action at {offset} reached {', '.join(str(t) for t in new)} while its "
                "snapshot's high watermarks were still ahead; it is not followed there: run sparkcdc "
                "verify, and resnapshot the table if it differs"
            )

    def apply(
        self,
        events: Sequence[ChangeEvent],
        marks: Sequence[tuple[int, Cascade]],
        schemas: Mapping[TableId, TableSchema],
        end: BinlogOffset,
        source: SourceIdentity | None,
    ) -> None:
        """Apply a batch in one sink transaction, segment by segment, without what the sink holds
        already, and record its end there (module docstring)."""
        sink = self._sink
        assert isinstance(sink, CascadingSink)
        names = {t: s.sink_name for t, s in schemas.items()}
        row_keys = {t: s.row_key for t, s in schemas.items()}
        server = _server(source)
        with sink.batch_transaction():
            applied = sink.applied_through()
            through = BinlogOffset.parse(applied[1]) if applied is not None and applied[0] == server else None
            events, marks = unapplied(events, marks, through)
            for cascades, segment in segments(events, marks):
                if cascades:
                    sink.apply_cascades(cascades, names)
                for changes in build_batch(segment, row_keys, end=end):
                    schema = schemas[changes.table]
                    self._sink.apply_changes(sink_schema(schema), sink_changes(schema, changes))
            sink.mark_applied(server, str(end))


def _server(source: SourceIdentity | None) -> str:
    """The source server whose positions the sink's record holds (offsets of another server do
    not compare): its ids, never its address."""
    if source is None:
        return ""
    return f"{source.server_id}:{source.server_uuid}:{source.gtid_domain_id}"


def _settled(event_filter: BinlogSplitFilter, table: TableId, offset: BinlogOffset) -> bool:
    watermark = event_filter.max_watermark(table)
    return watermark is None or offset > watermark
