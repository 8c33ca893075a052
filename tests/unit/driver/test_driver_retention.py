"""The driver's retention report: which file the pipeline needs and the lower bound of when the
source may purge it by age, carried from one look (and one driver) to the next."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from sparkcdc.api.status import BinlogRetention
from sparkcdc.core.checkpoint import Checkpoint
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.reconcile_types import format_time
from sparkcdc.driver.retention import (
    REPUBLISH_AFTER,
    RetentionTracker,
    RetentionWatch,
    SourceRetention,
    needed_file,
)

T0 = datetime(2026, 11, 27, 12, 0, tzinfo=timezone.utc)
DAY = 86400.0


def source(current: str, *files: str, expire: float | None = DAY) -> SourceRetention:
    return SourceRetention(files or (current,), current, expire)


def test_the_needed_file_is_the_committed_offset_s_file() -> None:
    assert needed_file(None) is None
    assert needed_file(Checkpoint()) is None  # nothing finished yet: nothing to resume from
    assert needed_file(Checkpoint(binlog_offset=BinlogOffset("bin.000004", 120))) == "bin.000004"


def test_a_file_seen_current_bounds_itself_and_later_files_not_earlier_ones() -> None:
    tracker = RetentionTracker()
    files = ("bin.000003", "bin.000004", "bin.000005")
    first = tracker.report("bin.000004", source("bin.000004", *files[:2]), T0)
    assert first.purge_not_before == format_time(T0 + timedelta(days=1))
    assert first.files_before == 1 and first.current_file == "bin.000004"

    # an hour later the source writes .000005; the pipeline still needs .000004: its bound stays
    later = tracker.report("bin.000004", source("bin.000005", *files), T0 + timedelta(hours=1))
    assert later.purge_not_before == format_time(T0 + timedelta(days=1))
    # .000003 was never seen current, and a later file's moment says nothing about it
    assert tracker.report("bin.000003", source("bin.000005", *files), T0).purge_not_before is None
    # .000005 was current an hour later, so it was written then or later
    newest = tracker.report("bin.000005", source("bin.000005", *files), T0 + timedelta(hours=1))
    assert newest.purge_not_before == format_time(T0 + timedelta(hours=25))


def test_a_new_driver_continues_from_the_previous_report() -> None:
    previous = BinlogRetention(
        needed_file="bin.000004",
        current_file="bin.000004",
        expire_seconds=DAY,
        purge_not_before=format_time(T0 + timedelta(days=1)),
    )
    tracker = RetentionTracker()
    tracker.carry(previous)
    # the source rotated twice while no driver ran; the pipeline still needs .000004
    now = T0 + timedelta(hours=20)
    report = tracker.report("bin.000004", source("bin.000006", "bin.000004", "bin.000005", "bin.000006"), now)
    assert report.purge_not_before == previous.purge_not_before
    assert report.files_before == 0 and report.observed_at == format_time(now)


def test_no_age_limit_no_purge_time() -> None:
    report = RetentionTracker().report("bin.000001", source("bin.000001", expire=None), T0)
    assert report.purge_not_before is None and report.expire_seconds is None


def test_the_watch_publishes_only_when_a_file_is_needed_and_survives_a_lost_source() -> None:
    published: list[BinlogRetention] = []
    checkpoint: list[Checkpoint | None] = [None]
    looks = [source("bin.000002"), source("bin.000002")]

    def look() -> SourceRetention:
        if not looks:
            raise ConnectionError("source gone")
        return looks.pop(0)

    watch = RetentionWatch(
        look, lambda: checkpoint[0], published.append, RetentionTracker(), clock=lambda: T0
    )
    assert watch.check() is None and not published  # no checkpoint yet
    checkpoint[0] = Checkpoint(binlog_offset=BinlogOffset("bin.000002", 4))
    assert watch.check() is not None and published[-1].needed_file == "bin.000002"
    # the moment remembered from the first look bounds the file
    assert published[-1].purge_not_before == format_time(T0 + timedelta(days=1))
    assert watch.check() is None and len(published) == 1  # a lost source is skipped, not raised


def test_a_bound_that_only_moves_is_republished_at_a_bounded_rate() -> None:
    """Each publication is a status write: the same files again are not news until the bound
    moved by ``REPUBLISH_AFTER`` (a driver paused and resumed writes nothing new at once)."""
    published: list[BinlogRetention] = []
    now = [T0]
    checkpoint = Checkpoint(binlog_offset=BinlogOffset("bin.000002", 4))
    watch = RetentionWatch(
        lambda: source("bin.000002"),
        lambda: checkpoint,
        published.append,
        RetentionTracker(),
        clock=lambda: now[0],
    )
    watch.check()
    now[0] = T0 + REPUBLISH_AFTER / 2
    watch.check()
    assert len(published) == 1
    now[0] = T0 + REPUBLISH_AFTER
    watch.check()
    assert len(published) == 2 and published[-1].purge_not_before == format_time(now[0] + timedelta(days=1))
    checkpoint = Checkpoint(binlog_offset=BinlogOffset("bin.000003", 4))  # a new needed file: news
    watch.check()
    assert len(published) == 3
