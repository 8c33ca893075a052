"""When the binlog the pipeline needs is gone, and warning before it goes.

Before the reader starts, the offset it must read from is compared with ``SHOW BINARY LOGS``.
If its file was purged (or the binlog was reset), reading would fail later with a vaguer error,
so the pipeline fails at once naming the missing file and the oldest one still there — or, with
``spec.startup.onBinlogLost: resnapshot``, only the tables whose position was lost are
snapshotted again: a table still needs the binlog from its committed position (the offset, or
the high watermark of a split the stream has not passed yet), so tables whose every split's
watermark is still in the binlog keep their snapshot.

During a snapshot, ``ExpiryWatch`` projects its finish from the splits done so far and warns when
that is later than the source keeps its binlog (``binlog_expire_logs_seconds`` /
``expire_logs_days``): the first splits' watermarks would be purged before streaming starts.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

from sparkcdc.core.checkpoint import Checkpoint, Phase
from sparkcdc.core.offsets import BinlogOffset, binlog_file_index
from sparkcdc.core.tables import TableId
from sparkcdc.engine.discovery import discover_tables
from sparkcdc.engine.listener import PipelineListener
from sparkcdc.engine.runtime import PipelineRuntime
from sparkcdc.mysql.connection import connect
from sparkcdc.mysql.errors import BinlogLostError, SourceError
from sparkcdc.mysql.queries import binlog_files, server_variables

if TYPE_CHECKING:
    from sparkcdc.spark.snapshot import SplitSummary

__all__ = [
    "ExpiryWatch",
    "binlog_expiry_seconds",
    "expiry_from_variables",
    "is_available",
    "lost_message",
    "lost_tables",
    "needed_offsets",
    "reset_lost_tables",
    "source_binlog_files",
]


def is_available(offset: BinlogOffset, files: Sequence[str]) -> bool:
    """Whether the source still has the file ``offset`` is in."""
    return offset.file in files


def needed_offsets(
    checkpoint: Checkpoint, start: BinlogOffset, captured: Iterable[TableId]
) -> dict[TableId, BinlogOffset]:
    """Per captured table, the earliest binlog position it still needs: the committed offset (or
    ``start``), raised to each of its splits' high watermarks."""
    committed = checkpoint.binlog_offset or start
    needed: dict[TableId, BinlogOffset] = {}
    for table in set(captured) | set(checkpoint.finished):
        state = checkpoint.tables.get(table)
        if state is not None and state.phase is Phase.FAILED:
            continue
        infos = checkpoint.finished.get(table, ())
        if infos:
            needed[table] = min((max(committed, i.high_watermark) for i in infos), key=BinlogOffset.sort_key)
        elif table not in checkpoint.plans:
            needed[table] = committed  # captured without a snapshot
        # planned, nothing finished: its splits' watermarks are still to be taken
    return needed


def lost_tables(
    checkpoint: Checkpoint, start: BinlogOffset, captured: Iterable[TableId], files: Sequence[str]
) -> list[TableId]:
    """Tables whose needed position (``needed_offsets``) is no longer on the source."""
    needed = needed_offsets(checkpoint, start, captured)
    return sorted(t for t, o in needed.items() if not is_available(o, files))


def lost_message(start: BinlogOffset, files: Sequence[str]) -> str:
    oldest = files[0] if files else "none"
    if files and binlog_file_index(start.file) >= binlog_file_index(files[0]):
        what = f"binlog file {start.file} is not on the source (its binlog was reset or renamed)"
    else:
        what = f"binlog file {start.file} was purged from the source"
    return (
        f"the pipeline must resume reading at {start}, but {what}; the oldest binlog file available is "
        f"{oldest}. Set spec.startup.onBinlogLost: resnapshot to snapshot the affected tables again, "
        "and keep binlogs (binlog_expire_logs_seconds) longer than the pipeline may be down"
    )


def source_binlog_files(conn: Any) -> list[str]:
    """``SHOW BINARY LOGS`` names; raises ``SourceError`` when the list is empty."""
    files = [name for name, _size in binlog_files(conn)]
    if not files:
        raise SourceError("the source lists no binary logs (SHOW BINARY LOGS is empty); is log_bin on?")
    return files


def reset_lost_tables(checkpoint: Checkpoint, tables: Sequence[TableId]) -> Checkpoint:
    """Forget ``tables``' snapshot and stream position so they are planned and snapshotted anew.

    The remaining tables keep their finished splits; the stream restarts from their minimum
    high watermark (all still available), replaying idempotently what they had applied.
    """
    gone = set(tables)
    return replace(
        checkpoint,
        tables={t: s for t, s in checkpoint.tables.items() if t not in gone},
        plans={t: p for t, p in checkpoint.plans.items() if t not in gone},
        finished={t: f for t, f in checkpoint.finished.items() if t not in gone},
        snapshot_done=False,
        binlog_offset=None,
    )


def expiry_from_variables(values: Mapping[str, str | None]) -> float | None:
    """Seconds the source keeps binlog files, or None when it keeps them forever.

    ``binlog_expire_logs_seconds`` (MySQL 8.0, MariaDB 10.6) wins over ``expire_logs_days``
    (older servers; a fraction of a day on MariaDB) when it is set; 0 means never.
    """
    seconds = float(values.get("binlog_expire_logs_seconds") or 0)
    if seconds > 0:
        return seconds
    days = float(values.get("expire_logs_days") or 0)
    return days * 86400 if days > 0 else None


def binlog_expiry_seconds(conn: Any) -> float | None:
    return expiry_from_variables(server_variables(conn, "binlog_expire_logs_seconds", "expire_logs_days"))


def _duration(seconds: float) -> str:
    if seconds >= 5400:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 90:
        return f"{seconds / 60:.0f} min"
    return f"{seconds:.0f} s"


class ExpiryWatch:
    """Stands in for the listener ``inner``: forwards every call to it (also hooks added to
    listeners later) and warns once when the snapshot will outlast the binlog's expiry."""

    def __init__(self, inner: PipelineListener, expiry_seconds: float | None) -> None:
        self._inner = inner
        self._expiry = expiry_seconds
        self._started = time.monotonic()
        self._remaining = 0
        self._done = 0
        self.warned = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def snapshot_planned(self, totals: Mapping[TableId, int], finished: Mapping[TableId, int]) -> None:
        self._started = time.monotonic()
        self._remaining = sum(totals.values()) - sum(finished.values())
        self._done = 0
        self._inner.snapshot_planned(totals, finished)

    def splits_finished(self, summaries: Sequence[SplitSummary]) -> None:
        self._inner.splits_finished(summaries)
        self._done += len(summaries)
        projected = self.projected_seconds()
        if self._expiry is None or self.warned or projected is None or projected <= self._expiry:
            return
        self.warned = True
        self._inner.warning(
            f"the snapshot is projected to take {_duration(projected)}, longer than the source keeps its "
            f"binlog ({_duration(self._expiry)}): the binlog from the first splits' watermarks may be purged "
            "before streaming starts. Keep binlogs longer (binlog_expire_logs_seconds), raise "
            "spec.snapshot.parallelism, or set spec.startup.onBinlogLost: resnapshot"
        )

    def projected_seconds(self) -> float | None:
        """This run's projected snapshot duration from its pace so far."""
        if self._done <= 0 or self._remaining <= 0:
            return None
        elapsed = time.monotonic() - self._started
        return elapsed * self._remaining / min(self._done, self._remaining)

    def as_listener(self) -> PipelineListener:
        return cast(PipelineListener, self)


def binlog_reset(
    runtime: PipelineRuntime, checkpoint: Checkpoint, start: BinlogOffset, listener: PipelineListener
) -> Checkpoint | None:
    """None when streaming can start at ``start``; else the checkpoint with the lost tables
    reset (``onBinlogLost: resnapshot``), or ``BinlogLostError`` (``fail``)."""
    conn = connect(runtime.source)
    try:
        files = source_binlog_files(conn)
        if is_available(start, files):
            return None
        captured = list(discover_tables(runtime, conn))
    finally:
        conn.close()
    if runtime.pipeline.spec.startup.on_binlog_lost != "resnapshot":
        raise BinlogLostError(lost_message(start, files))
    lost = lost_tables(checkpoint, start, captured, files)
    listener.warning(
        lost_message(start, files).split(". Set")[0]
        + f"; snapshotting {', '.join(map(str, lost)) or 'nothing'} again (onBinlogLost: resnapshot)"
    )
    return reset_lost_tables(checkpoint, lost)
