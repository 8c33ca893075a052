"""Terminal progress for ``sparkcdc run``: one bar per table, then binlog batches."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)

from sparkcdc.core.tables import TableId
from sparkcdc.engine.listener import BatchCommit, PipelineListener
from sparkcdc.spark.snapshot import SplitSummary

if TYPE_CHECKING:
    from typing_extensions import Self


class LiveDisplay:
    """A live rich display shared by threads: one console, one lock, bars only on a terminal."""

    def __init__(self, console: Console, *columns: ProgressColumn) -> None:
        self.console = console
        self.progress = Progress(
            *columns,
            console=console,
            # Without a terminal a live display holds log lines back until it stops; a killed run
            # would leave no log at all. Plain log lines only, then.
            disable=not console.is_terminal,
        )
        self.lock = threading.Lock()

    def log(self, pipeline: str, text: str) -> None:
        # Escaped: "[name]" would otherwise be swallowed as rich markup.
        self.console.log(escape(f"[{pipeline}] {text}"))

    def __enter__(self) -> Self:
        self.progress.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.progress.stop()


class RichProgress(LiveDisplay):
    """One live display shared by every pipeline of the run."""

    def __init__(self, console: Console | None = None) -> None:
        super().__init__(
            console or Console(stderr=True),
            TextColumn("[bold]{task.description:<20}"),
            BarColumn(bar_width=16),
            MofNCompleteColumn(),
            TextColumn("splits {task.fields[rows]:>10,} rows {task.fields[rate]:>8,.0f}/s"),
            TextColumn("ETA"),
            TimeRemainingColumn(),
        )

    def listener(self, pipeline: str) -> PipelineListener:
        return _PipelineProgress(self, pipeline)


class _PipelineProgress(PipelineListener):
    """Splits done/total per table with rows, rows/s and ETA; a log line per binlog batch."""

    def __init__(self, display: RichProgress, pipeline: str) -> None:
        self._display = display
        self._pipeline = pipeline
        self._tasks: dict[TableId, TaskID] = {}
        self._rows: dict[TableId, int] = {}
        self._events = 0

    def message(self, text: str) -> None:
        self._display.log(self._pipeline, text)

    def snapshot_planned(self, totals: Mapping[TableId, int], finished: Mapping[TableId, int]) -> None:
        with self._display.lock:
            for table, total in sorted(totals.items()):
                self._rows[table] = 0
                self._tasks[table] = self._display.progress.add_task(
                    f"{self._pipeline} {table}",
                    total=total,
                    completed=finished.get(table, 0),
                    rows=0,
                    rate=0.0,
                )

    def splits_finished(self, summaries: Sequence[SplitSummary]) -> None:
        progress = self._display.progress
        with self._display.lock:
            for summary in summaries:
                table = summary.split.table
                task = self._tasks.get(table)
                if task is None:
                    continue
                self._rows[table] += summary.rows
                total = max(progress.tasks[task].total or 0, summary.split.index + 1)
                elapsed = progress.tasks[task].elapsed or 0.0
                rate = self._rows[table] / elapsed if elapsed > 0 else 0.0
                progress.update(task, advance=1, total=total, rows=self._rows[table], rate=rate)

    def batch_committed(self, commit: BatchCommit) -> None:
        events, offset = commit.events, commit.offset
        if events:
            self._events += events
            self.message(f"binlog: {events} changes committed up to {offset} ({self._events} in all)")
