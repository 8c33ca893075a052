"""Progress of ``sparkcdc run`` on stderr: one bar per table, then a line per binlog batch.

On a terminal the snapshot shows live bars (a table's bar goes once its snapshot is done, so the
stream's lines do not redraw finished bars). Without one (CI, ``nohup``, ``| tee``) there are no
bars: each table's snapshot says how far it is at most every ``PLAIN_EVERY`` seconds, so a log
never goes silent for minutes. Batch lines carry what an on-call reader asks first: how many
changes, up to where, how fast, and the lag behind the source. Lines are wide enough for a log
file (no 80-column wrap) and carry no source location.
"""

from __future__ import annotations

import shutil
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
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

PLAIN_EVERY = 10.0  # seconds between a table's snapshot lines without a terminal
LOG_WIDTH = 200  # columns of a log that is not a terminal


def stderr_console() -> Console:
    """The console of ``sparkcdc run`` and ``verify``: stderr, no source location on log lines.
    Without a terminal tables are as wide as ``$COLUMNS`` says, else ``LOG_WIDTH`` (rich would
    take 80), and ``LiveDisplay.log`` prints each message on one line, never wrapped."""
    if sys.stderr.isatty():
        return Console(stderr=True, log_path=False)
    width = shutil.get_terminal_size(fallback=(LOG_WIDTH, 24)).columns  # $COLUMNS first
    return Console(stderr=True, log_path=False, soft_wrap=True, width=width)


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
        if self.console.is_terminal:
            self.console.log(escape(f"[{pipeline}] {text}"))
        else:  # one line per message, never wrapped: a log file is searched, not read on a screen
            stamp = datetime.now().strftime("%H:%M:%S")
            self.console.print(escape(f"[{stamp}] [{pipeline}] {text}"), soft_wrap=True)

    def __enter__(self) -> Self:
        self.progress.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.progress.stop()


class RichProgress(LiveDisplay):
    """One live display shared by every pipeline of the run."""

    def __init__(self, console: Console | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        super().__init__(
            console or stderr_console(),
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
        self._table_rows: dict[TableId, tuple[int, int, int]] = {}  # done, total, rows
        self._started: dict[TableId, float] = {}
        self._said: dict[TableId, float] = {}  # when a plain line last said it
        self._events = 0
        self._last_commit: float | None = None

    def message(self, text: str) -> None:
        self._display.log(self._pipeline, text)

    def snapshot_planned(self, totals: Mapping[TableId, int], finished: Mapping[TableId, int]) -> None:
        now = self._display.clock()
        with self._display.lock:
            for table, total in sorted(totals.items()):
                done = finished.get(table, 0)
                self._table_rows[table] = (done, total, 0)
                self._started[table] = self._said[table] = now
                if done < total:
                    self._tasks[table] = self._display.progress.add_task(
                        f"{self._pipeline} {table}", total=total, completed=done, rows=0, rate=0.0
                    )

    def splits_finished(self, summaries: Sequence[SplitSummary]) -> None:
        now = self._display.clock()
        with self._display.lock:
            for summary in summaries:
                table = summary.split.table
                done, total, rows = self._table_rows.get(table, (0, 0, 0))
                self._table_rows[table] = (done + 1, max(total, summary.split.index + 1), rows + summary.rows)
            for table in {s.split.table for s in summaries}:
                self._show(table, now)

    def _show(self, table: TableId, now: float) -> None:
        done, total, rows = self._table_rows[table]
        rate = rows / max(now - self._started[table], 1e-9)
        task = self._tasks.get(table)
        if task is not None:
            self._display.progress.update(task, completed=done, total=total, rows=rows, rate=rate)
        if done >= total:
            if task is not None:
                self._display.progress.remove_task(task)
                del self._tasks[table]
            self.message(f"snapshot of {table} done: {total} splits, {rows:,} rows, {rate:,.0f} rows/s")
        elif not self._display.console.is_terminal and now - self._said[table] >= PLAIN_EVERY:
            self._said[table] = now
            self.message(f"snapshot of {table}: {done}/{total} splits, {rows:,} rows, {rate:,.0f} rows/s")

    def batch_committed(self, commit: BatchCommit) -> None:
        now = self._display.clock()
        since, self._last_commit = self._last_commit, now
        if not commit.events:
            return
        self._events += commit.events
        rate = f", {commit.events / (now - since):,.0f}/s" if since is not None and now > since else ""
        lag = ""
        if commit.newest_ms:
            lag = f", lag {max(0.0, time.time() - commit.newest_ms / 1000):.1f}s"
        self.message(
            f"binlog: {commit.events} changes committed up to {commit.offset} "
            f"({self._events} in all{rate}{lag})"
        )
