"""How a running pipeline reports progress: the terminal, the CR status and metrics listen."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.source_identity import SourceIdentity
from sparkcdc.core.tables import TableId

if TYPE_CHECKING:
    from sparkcdc.spark.snapshot import SplitSummary


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

    def batch_committed(self, events: int, offset: BinlogOffset) -> None:
        return None

    def source_identified(self, identity: SourceIdentity) -> None:
        """The source server the pipeline reads from, checked at start (engine/source_change.py)."""
        return None
