"""Snapshot splits: half-open primary-key ranges of one table."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal

from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.tables import TableId

# A split-key value as the database returns it. Unsigned and DECIMAL keys are exact (int and
# Decimal), never float, so range checks agree with the server.
KeyValue = int | Decimal | str | bytes | float | dt.date | dt.datetime | dt.time | dt.timedelta
Key = tuple[KeyValue, ...]


@dataclass(frozen=True)
class SnapshotSplit:
    """Rows of ``table`` whose split key lies in ``[start, end)``; ``None`` is unbounded.

    The first split of a table has ``start=None`` and the last ``end=None``, so rows inserted
    outside the planned ``[min, max]`` during the snapshot still belong to some split.
    """

    table: TableId
    index: int
    start: Key | None
    end: Key | None

    @property
    def split_id(self) -> str:
        return f"{self.table}:{self.index}"


@dataclass(frozen=True)
class FinishedSplitInfo:
    """A split whose content is committed to the sink as of ``high_watermark``."""

    split: SnapshotSplit
    high_watermark: BinlogOffset
    rows: int = 0
