"""Progress of ``sparkcdc run`` on stderr: one bar per table, then the stream's state.

On a terminal the snapshot shows live bars (a table's bar goes once its snapshot is done), and
the stream one live status line per pipeline: lag in seconds and binlog bytes, events/s, the last
commit, which reader decodes the binlog. Without one (CI, ``nohup``, ``| tee``) there are no bars
and no live lines: each table's snapshot and each pipeline's stream say how far they are at most
every ``PLAIN_EVERY`` seconds, so a log never goes silent for minutes nor floods with a line per
batch. Stream lines carry what an on-call reader asks first: how many changes, up to where, how
fast, and the lag behind the source. Lines are wide enough for a log file (no 80-column wrap) and
carry no source location.
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

from rich.console import Console, RenderableType
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from sparkcdc.core.tables import TableId
from sparkcdc.engine.listener import BatchCommit, PipelineListener
from sparkcdc.spark.snapshot import SplitSummary

if TYPE_CHECKING:
    from typing_extensions import Self

PLAIN_EVERY = 10.0  # seconds between a table's (or a stream's) lines without a terminal
RATE_EVERY = 1.0  # seconds over which the live line's events/s is measured
LOG_WIDTH = 200  # columns of a log that is not a terminal


def stderr_console(debug: bool = False) -> Console:
    """The console of ``sparkcdc run`` and ``verify``: stderr, no source location on log lines
    (``debug``: with them). Without a terminal tables are as wide as ``$COLUMNS`` says, else
    ``LOG_WIDTH`` (rich would take 80), and ``LiveDisplay.log`` prints each message on one line,
    never wrapped."""
    if sys.stderr.isatty():
        return Console(stderr=True, log_path=debug)
    width = shutil.get_terminal_size(fallback=(LOG_WIDTH, 24)).columns  # $COLUMNS first
    return Console(stderr=True, log_path=debug, soft_wrap=True, width=width)


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


class _StreamOrBars(ProgressColumn):
    """A snapshot task's bar columns, or a stream task's one status line (field ``stream``): one
    live display holds both, as rich allows one live display per console."""

    def __init__(self, *columns: ProgressColumn) -> None:
        super().__init__()
        self._columns = columns

    def render(self, task: Task) -> RenderableType:
        line = task.fields.get("stream")
        if line is not None:
            return Text(str(line))
        grid = Table.grid(padding=(0, 1))
        grid.add_row(*(column(task) for column in self._columns))
        return grid


class RichProgress(LiveDisplay):
    """One live display shared by every pipeline of the run."""

    def __init__(self, console: Console | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        super().__init__(
            console or stderr_console(),
            _StreamOrBars(
                TextColumn("[bold]{task.description:<20}"),
                BarColumn(bar_width=16),
                MofNCompleteColumn(),
                TextColumn("splits {task.fields[rows]:>10,} rows {task.fields[rate]:>8,.0f}/s"),
                TextColumn("ETA"),
                TimeRemainingColumn(),
            ),
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
        self._stream = _StreamState()
        self._stream_task: TaskID | None = None  # the live status line, on a terminal

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
        stream = self._stream
        stream.committed(commit, now)
        if self._display.console.is_terminal:
            with self._display.lock:
                line = f"{self._pipeline} {stream.status()}"
                if self._stream_task is None:
                    self._stream_task = self._display.progress.add_task(
                        self._pipeline, total=None, stream=line
                    )
                else:
                    self._display.progress.update(self._stream_task, stream=line)
        elif stream.unsaid and (stream.said is None or now - stream.said >= PLAIN_EVERY):
            self.message(stream.line(now))

    def binlog_reader(self, reader: str) -> None:
        self._stream.reader = reader

    def backlog_measured(self, bytes_behind: int) -> None:
        self._stream.bytes_behind = bytes_behind


class _StreamState:
    """What a pipeline's stream line says: events, their rate, the lag, where it is, who reads."""

    def __init__(self) -> None:
        self.events = 0  # in all
        self.unsaid = 0  # since the last plain line
        self.said: float | None = None  # when the last plain line was written
        self.offset = ""
        self.lag: float | None = None
        self.bytes_behind: int | None = None
        self.reader = ""
        self.last_commit: datetime | None = None
        self.rate = 0.0
        self._window: tuple[float, int] | None = None  # (since, events) of the rate being measured

    def committed(self, commit: BatchCommit, now: float) -> None:
        self.last_commit = datetime.now()
        if commit.newest_ms:
            self.lag = max(0.0, time.time() - commit.newest_ms / 1000)
        elif self.lag is not None:
            self.lag = 0.0  # a heartbeat: nothing waits
        if self._window is None:
            self._window = (now, 0)
        since, counted = self._window
        counted += commit.events
        if now - since >= RATE_EVERY:
            self.rate, self._window = counted / (now - since), (now, 0)
        else:
            self._window = (since, counted)
        if not commit.events:
            return
        self.events += commit.events
        self.unsaid += commit.events
        self.offset = str(commit.offset)

    def _details(self) -> list[str]:
        details = [f"{self.rate:,.0f}/s"]
        if self.lag is not None:
            details.append(f"lag {self.lag:.1f}s")
        if self.bytes_behind is not None:
            details.append(f"{self.bytes_behind / 2**20:,.1f} MiB behind")
        if self.reader:
            details.append(f"reader {self.reader}")
        return details

    def status(self) -> str:
        """The live line on a terminal."""
        commit = self.last_commit.strftime("%H:%M:%S") if self.last_commit else "-"
        return (
            f"streaming  {', '.join(self._details())}, last commit {commit}, "
            f"{self.events:,} changes in all, at {self.offset or '-'}"
        )

    def line(self, now: float) -> str:
        """A plain line for a log: the changes since the previous one."""
        text = (
            f"binlog: {self.unsaid} changes committed up to {self.offset} "
            f"({self.events} in all, {', '.join(self._details())})"
        )
        self.unsaid, self.said = 0, now
        return text
