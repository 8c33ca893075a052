"""``sparkcdc run``'s progress on stderr without a terminal (CI, nohup, a log file): no bars, a
line per table at most every ``PLAIN_EVERY`` seconds and when it is done, batch lines with rate and
lag, no source location, no 80-column wrap."""

from __future__ import annotations

import io
import re
import time

from rich.console import Console

from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.splits import SnapshotSplit
from sparkcdc.core.tables import TableId
from sparkcdc.driver.progress import PLAIN_EVERY, RichProgress
from sparkcdc.engine.listener import BatchCommit
from sparkcdc.spark.snapshot import SplitSummary

ORDERS = TableId("shop", "orders_with_a_rather_long_table_name_that_would_wrap_at_eighty_columns")
HW = BinlogOffset("binlog.000001", 400)


def summary(index: int, rows: int) -> SplitSummary:
    return SplitSummary(SnapshotSplit(ORDERS, index, None, None), HW, HW, rows, 0)


def test_a_log_file_hears_from_the_snapshot_and_the_stream() -> None:
    out, now = io.StringIO(), [100.0]
    console = Console(file=out, force_terminal=False, log_path=False, width=200)
    with RichProgress(console, clock=lambda: now[0]) as display:
        listener = display.listener("shop")
        listener.snapshot_planned({ORDERS: 3}, {})
        now[0] += 1
        listener.splits_finished([summary(0, 1000)])  # within the interval: nothing yet
        now[0] += PLAIN_EVERY
        listener.splits_finished([summary(1, 1000)])
        now[0] += 1
        listener.splits_finished([summary(2, 500)])
        listener.batch_committed(BatchCommit(0, HW))  # a heartbeat: no line
        now[0] += 2
        listener.batch_committed(BatchCommit(6000, HW, 0.1, int(time.time() * 1000) - 1500))
    # Without the time rich prints when it changes.
    lines = [re.sub(r"^\[[\d:]+\]", "", line).strip() for line in out.getvalue().splitlines() if line.strip()]
    assert lines[:2] == [
        f"[shop] snapshot of {ORDERS}: 2/3 splits, 2,000 rows, 182 rows/s",
        f"[shop] snapshot of {ORDERS} done: 3 splits, 2,500 rows, 208 rows/s",
    ]
    assert "binlog: 6000 changes committed up to binlog.000001:400 (6000 in all, 3,000/s, lag 1." in lines[2]
    assert len(lines) == 3 and not any("progress.py" in line for line in lines)


def test_a_log_hears_from_the_stream_at_a_bounded_rate() -> None:
    out, now = io.StringIO(), [100.0]
    console = Console(file=out, force_terminal=False, log_path=False, width=200)
    with RichProgress(console, clock=lambda: now[0]) as display:
        listener = display.listener("shop")
        listener.binlog_reader("native")
        for _ in range(50):  # five seconds of batches: one line, the first
            now[0] += 0.1
            listener.batch_committed(BatchCommit(100, HW, 0.01, int(time.time() * 1000) - 200))
        now[0] += PLAIN_EVERY
        listener.batch_committed(BatchCommit(100, HW, 0.01, int(time.time() * 1000) - 200))
    lines = [line for line in out.getvalue().splitlines() if "binlog:" in line]
    assert len(lines) == 2, lines
    assert "binlog: 100 changes committed" in lines[0] and "reader native" in lines[0]
    assert "binlog: 5000 changes committed up to binlog.000001:400 (5100 in all, " in lines[1]


def test_a_terminal_shows_one_live_line_per_streaming_pipeline() -> None:
    out, now = io.StringIO(), [100.0]
    console = Console(file=out, force_terminal=True, width=200)
    with RichProgress(console, clock=lambda: now[0]) as display:
        for pipeline in ("shop", "crm"):
            listener = display.listener(pipeline)
            listener.binlog_reader("native")
            listener.backlog_measured(3 * 2**20)
            for _ in range(30):
                now[0] += 0.1
                listener.batch_committed(BatchCommit(200, HW, 0.01, int(time.time() * 1000) - 300))
        lines = [str(task.fields.get("stream")) for task in display.progress.tasks]
    assert len(lines) == 2, lines  # one per pipeline, however many batches
    shop = lines[0]
    assert shop.startswith("shop streaming  2,000/s, lag 0.")
    assert "3.0 MiB behind, reader native, last commit " in shop and "6,000 changes in all" in shop
    assert "binlog:" not in out.getvalue()  # no line per batch on a terminal
