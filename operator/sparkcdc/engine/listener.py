"""How a running pipeline reports progress: the terminal, the CR status and metrics listen.

The engine tells its listener everything a reporter needs, timings included (how long the sink
took to apply a batch, the newest source timestamp in it) and every checkpoint the store holds,
so that no reporter has to wrap the sink or the store to find out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sparkcdc.core.checkpoint import Checkpoint
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.source_identity import SourceIdentity
from sparkcdc.core.tables import TableId

if TYPE_CHECKING:
    from sparkcdc.spark.snapshot import SplitSummary


@dataclass(frozen=True)
class BatchCommit:
    """A binlog batch (or catch-up round) the sink committed and the checkpoint now covers."""

    events: int  # row events of captured tables in it
    offset: BinlogOffset  # where the checkpoint now resumes
    sink_seconds: float = 0.0  # how long the sink took to apply it
    newest_ms: int = 0  # the newest source timestamp (``ts_ms``) of its row events; 0: none known


class PipelineListener:
    """Does nothing; subclasses override what they show."""

    def message(self, text: str) -> None:
        return None

    def warning(self, text: str) -> None:
        """A condition worth a look (progress ``warnings``); shown as a message by default."""
        self.message(f"WARNING: {text}")

    def table_failed(self, table: TableId, message: str) -> None:
        """``table`` stopped while the others go on (engine/table_failures.py); a warning by default."""
        self.warning(message)

    def snapshot_planned(self, totals: Mapping[TableId, int], finished: Mapping[TableId, int]) -> None:
        return None

    def splits_finished(self, summaries: Sequence[SplitSummary]) -> None:
        return None

    def batch_committed(self, commit: BatchCommit) -> None:
        return None

    def tables_prepared(self, tables: Sequence[TableId]) -> None:
        """The sink is ready for ``tables`` (their targets exist)."""
        return None

    def checkpoint_stored(self, checkpoint: Checkpoint | None) -> None:
        """What the checkpoint store holds now: the checkpoint loaded at start, then every one
        saved (after the sink committed what it covers, architecture §3 rule 6)."""
        return None

    def source_identified(self, identity: SourceIdentity) -> None:
        """The source server the pipeline reads from, checked at start (engine/source_change.py)."""
        return None
