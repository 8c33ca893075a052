"""How a running pipeline reports progress: the terminal, the CR status and metrics listen.

The engine tells its listener everything a reporter needs, timings included (how long the sink
took to apply a batch, the newest source timestamp in it) and every checkpoint the store holds,
so that no reporter has to wrap the sink or the store to find out. The driver's Prometheus series
(driver/metrics.py) are fed from here alone: the engine stays free of any metrics library.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sparkcdc.core.checkpoint import Checkpoint
from sparkcdc.core.events import ChangeEvent, Op
from sparkcdc.core.logged_columns import LoggedColumns
from sparkcdc.core.merge import BackfillChanges
from sparkcdc.core.microbatch import ChangelogRecord
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.rendered_log import RenderedLog
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
    # Per (table, op): row events by operation where the reader sees each event (the Python
    # reader: create / update / delete); keys by net effect where a reader hands over whole
    # transactions reduced per key (the Go decoder, parallel catch-up: upsert / delete).
    changes: Mapping[tuple[TableId, str], int] = field(default_factory=dict)
    read_at: float = 0.0  # wall-clock time the reader handed the batch over (epoch seconds); 0: unknown


# Debezium's names for the operations (NumberOfCreateEventsSeen, ...).
_OP_NAMES = {Op.INSERT: "create", Op.UPDATE: "update", Op.DELETE: "delete"}


def event_counts(events: Iterable[ChangeEvent]) -> dict[tuple[TableId, str], int]:
    """``BatchCommit.changes`` of a batch of row events."""
    return dict(Counter((e.table, _OP_NAMES[e.op]) for e in events))


# The changelog record that stands for each row event (an update has two: -U and +U).
_RECORD_OPS = {"+I": "create", "+U": "update", "-D": "delete"}


def record_counts(changelog: Mapping[TableId, Sequence[ChangelogRecord]]) -> dict[tuple[TableId, str], int]:
    """``BatchCommit.changes`` of every table's changelog records (the Go decoder's log mode),
    counted from the records' operations alone (columns stay columns: core/logged_columns.py)."""
    counts: dict[tuple[TableId, str], int] = {}
    for table, records in changelog.items():
        if isinstance(records, RenderedLog):
            counted = Counter(records.op_counts)
        else:
            counted = Counter(records.ops if isinstance(records, LoggedColumns) else [r.op for r in records])
        for op, count in counted.items():
            if (name := _RECORD_OPS.get(op)) is not None:
                counts[(table, name)] = count
    return counts


def net_counts(changes: Mapping[TableId, BackfillChanges]) -> dict[tuple[TableId, str], int]:
    """``BatchCommit.changes`` of changes reduced per key: the events behind them are not known."""
    counts: dict[tuple[TableId, str], int] = {}
    for table, change in changes.items():
        if change.upserts:
            counts[(table, "upsert")] = len(change.upserts)
        if change.deletes:
            counts[(table, "delete")] = len(change.deletes)
    return counts


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

    def binlog_reader(self, reader: str) -> None:
        """Who reads the binlog from now on: ``native`` (the Go decoder following the source),
        ``python`` (python-mysql-replication) or ``catchup`` (parallel catch-up's tasks)."""
        return None

    def backlog_measured(self, bytes_behind: int) -> None:
        """The source's binlog is ``bytes_behind`` bytes past the committed offset (engine/backlog.py)."""
        return None
