"""The live path on the Go decoder: batches of whole transactions, reduced to the last image per
key by ``sparkcdc-binlogdec`` in follow mode (mysql/binlog/follow.py), applied and checkpointed.

The native path serves what parallel catch-up serves — sinks that apply each key's net change
(catch-up's ``applies_net_effects``; Delta's MERGE, below), tables the Go decoder renders exactly
(``native_eligible``), no referential actions to follow in order — and only past the snapshot
handoff: every table's split filter must pass every event (its maximum high watermark is behind
the start), since the Go decoder knows nothing of splits. Everything else, and whatever the
decoder stops at (a DDL statement, a definition it was not given), is the Python reader's
(engine/streaming.py), which hands back once it committed past that point (and, unless it was a
schema change, read a few seconds: python_live.py). The log says which decoder runs. While it is
behind, the batches waiting are applied as one where the sink asks for that (batch_sizing.py).

A JDBC sink into MySQL/MariaDB that loads upserts with ``LOAD DATA`` (``reads_load_text``) gets the
upserts of every table the decoder spells (mysql/binlog/rendered.py) as that statement's text too
(binlogdec/loadtext.go, core/image_columns.py): no value of theirs is made in Python unless the
load falls back to ``INSERT``.

The changelog sink, which keeps every change as it happened, gets every change in order instead
(``logs_every_change``: the decoder's log mode, binlogdec/changelog.go), as the same records the
Python reader's events make; a replayed batch rewrites its files (named by their first offset).

Delta sinks without metadata columns or soft deletes apply net last images too (one MERGE per
table and batch): they take this path, with batches that waited behind a MERGE applied as one.
The Python reader follows a DDL statement the decoder stops at even when the source already ran
later ones (engine/column_changes.py judges each with the definition as of its statement) and
hands back as soon as it committed past it.

A batch is applied exactly as a catch-up round: per table in its own sink transaction, then the
checkpoint at the batch's end (architecture §3 rules 5 and 6), so a crash replays at most the
batch that was not checkpointed, which converges because it holds net last images.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from sparkcdc.api.spec import CdcPipelineSpec
from sparkcdc.core.checkpoint import Checkpoint
from sparkcdc.core.event_filter import BinlogSplitFilter
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.tables import TableId
from sparkcdc.engine.backlog import BacklogProbe
from sparkcdc.engine.batch_sizing import Gathering, Waiting, gather
from sparkcdc.engine.catchup import applies_net_effects, net_images_suffice
from sparkcdc.mysql.binlog.follow import NativeBatch, NativeDdl, NativeFollower, NativeStopped
from sparkcdc.mysql.binlog.native import decoder_path, native_eligible
from sparkcdc.mysql.binlog.reader import DdlStatement
from sparkcdc.mysql.connection import SourceConfig
from sparkcdc.mysql.errors import SourceError
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.options import EngineOptions

__all__ = ["NativeLive", "NativeOutcome", "logs_every_change", "native_decoder", "native_tables"]

Apply = Callable[[NativeBatch, Checkpoint], Checkpoint]  # applies and checkpoints one batch


def native_decoder(spec: CdcPipelineSpec, options: EngineOptions) -> Path | None:
    """The Go decoder for the live path of this pipeline, or None when its sink needs what the
    decoder does not hand over (per-row metadata, soft deletes) or the options say Python."""
    if not (applies_net_effects(spec) or logs_every_change(spec) or _merges_net_images(spec)):
        return None
    return decoder_path(options.binlog_decoder, options.cache_dir)


def _merges_net_images(spec: CdcPipelineSpec) -> bool:
    """A Delta sink whose MERGE applies net last images (catchup.net_images_suffice)."""
    return spec.sink.type == "delta" and net_images_suffice(spec)


def logs_every_change(spec: CdcPipelineSpec) -> bool:
    """Whether the sink keeps every change as it happened (the changelog sink, its records as
    written): the Go decoder then hands over each table's changes in order (log mode), not net
    effects."""
    return spec.sink.type == "changelog"  # which has no metadata columns or soft deletes


def native_tables(
    source: SourceConfig,
    schemas: Mapping[TableId, TableSchema],
    event_filter: BinlogSplitFilter,
    start: BinlogOffset,
) -> dict[TableId, TableSchema] | BinlogOffset | None:
    """The tables to give the Go decoder from ``start``; or, inside the snapshot handoff (the split
    filter decides per event until the last high watermark), that watermark: the Python reader's
    until it has passed it; or None when the Go decoder would not be exact for these tables."""
    if not schemas or not native_eligible(source, schemas):
        return None
    handoff = [w for t in schemas if (w := event_filter.max_watermark(t)) is not None and w > start]
    return max(handoff) if handoff else dict(schemas)


@dataclass(frozen=True)
class NativeOutcome:
    """How a stretch on the native path ended: ``reason`` None (stopped or caught up), "behind"
    (catch-up takes over), "ddl" (a schema change the Python reader follows, then hands back) or
    "unsupported" (the Python reader goes on from the checkpoint for a while)."""

    checkpoint: Checkpoint
    reason: str | None
    detail: str = ""


class NativeLive:
    """Runs one follower until it stops, the pipeline stops or catch-up should take over."""

    def __init__(
        self,
        follower: NativeFollower,
        apply: Apply,
        concerns: Callable[[DdlStatement], bool],
        poll_seconds: float,
        gathering: Gathering | None = None,
    ) -> None:
        """``concerns``: whether a DDL statement touches a captured table (then the Python reader,
        which follows schema changes, reads on from before it). ``gathering``: how batches after the
        one taken are applied with it while the reader is behind (batch_sizing.py)."""
        self._follower, self._apply, self._concerns, self._poll = follower, apply, concerns, poll_seconds
        self._gathering = gathering or Gathering()
        self._held: Waiting = None  # what ended the last gathering, handled next

    def run(
        self,
        checkpoint: Checkpoint,
        should_stop: Callable[[], bool],
        stop_at: BinlogOffset | None,
        probe: BacklogProbe | None,
    ) -> NativeOutcome:
        self._follower.start()
        try:
            while not should_stop():
                try:
                    item = self._next()
                except SourceError as err:
                    # Whatever ended the decoder (a lost connection, another replica with its id, a
                    # failover), the Python reader meets it again from the checkpoint and says it
                    # the way it says it on its own path, or reads on where the decoder could not.
                    return NativeOutcome(checkpoint, "unsupported", str(err))
                if isinstance(item, NativeStopped):
                    return NativeOutcome(checkpoint, "unsupported", item.why)
                if isinstance(item, NativeDdl):
                    if self._concerns(item.statement):
                        return NativeOutcome(checkpoint, "ddl", "a schema change of a captured table")
                    continue
                if item is None:
                    continue
                item, self._held = gather(item, self._follower.get, self._gathering)
                checkpoint = self._apply(item, checkpoint)
                committed = checkpoint.binlog_offset or item.end
                if stop_at is not None and committed >= stop_at:
                    return NativeOutcome(checkpoint, None)
                if probe is not None and probe.behind(committed):
                    return NativeOutcome(checkpoint, "behind")
            return NativeOutcome(checkpoint, None)
        finally:
            self._follower.close()

    def _next(self) -> NativeBatch | NativeDdl | NativeStopped | None:
        held, self._held = self._held, None
        if isinstance(held, BaseException):
            raise held
        return held if held is not None else self._follower.get(self._poll)
