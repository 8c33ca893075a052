"""How close is the source to purging the binlog a pipeline still needs? The ``BinlogExpiry``
warning (docs/operations.md, "Binlog expiry").

A pipeline that is suspended, crash-looping or far behind loses its place for good once the
source purges the binlog file its checkpoint resumes from: the only way back is a re-snapshot.
The operator must warn *before* that, also while no driver runs, and it holds no source
credentials. So the driver, while it runs, reports what it saw (:class:`RetentionReport`) and the
operator judges it against the clock (:func:`judge`), however long ago the report was written.

When may the source purge a file? MySQL and MariaDB purge by age (``binlog_expire_logs_seconds``)
at a rotation, comparing a file's modification time — the moment it was last written, which for
a rotated file is the moment it was rotated. No SQL statement reports that moment, so the driver
keeps a lower bound, which makes the estimate err on the early side:

* a file seen as the source's current file at time T was last written at T or later;
* a file the pipeline read an event of, written at time E, was last written at E or later.

Age is not the only way to lose a file: a ``PURGE BINARY LOGS``, a size limit
(``max_binlog_total_size``) or a host running out of disk removes the oldest files first. So a
needed file that is among the oldest retained ones (and no longer written to) is a warning too.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sparkcdc.core.reconcile_types import RetentionView, parse_time

__all__ = ["RetentionReport", "RetentionVerdict", "RetentionView", "judge", "purge_not_before", "report_of"]


@dataclass(frozen=True)
class RetentionReport:
    """What the driver saw of the source's binlog retention, for the file the pipeline needs."""

    needed_file: str  # the binlog file the checkpoint resumes from
    current_file: str  # the file the source writes now
    files_before: int  # retained files older than needed_file
    expire_seconds: float | None  # age-based retention; None: the source keeps files forever
    purge_not_before: datetime | None  # earliest moment an age-based purge can remove needed_file


@dataclass(frozen=True)
class RetentionVerdict:
    """The ``BinlogExpiry`` condition (status, reason, message) and the seconds left."""

    condition: tuple[str, str, str]
    seconds_left: float | None  # until purge_not_before; negative once past; None: no age limit


def report_of(view: RetentionView | None) -> RetentionReport | None:
    if view is None:
        return None
    return RetentionReport(
        needed_file=view.needed_file,
        current_file=view.current_file,
        files_before=view.files_before,
        expire_seconds=view.expire_seconds,
        purge_not_before=parse_time(view.purge_not_before),
    )


def purge_not_before(expire_seconds: float | None, last_written_at: datetime | None) -> datetime | None:
    """The earliest moment an age-based purge may remove a file last written at or after
    ``last_written_at``; None when the source keeps files forever or nothing bounds the write."""
    if expire_seconds is None or last_written_at is None:
        return None
    return last_written_at + timedelta(seconds=expire_seconds)


def judge(
    report: RetentionReport | None, now: datetime, margin_seconds: float, margin_files: int
) -> RetentionVerdict:
    """Whether the needed file is within ``margin_seconds`` of its age-based purge, or among the
    ``margin_files`` oldest retained files while the source no longer writes it."""
    if report is None:
        return RetentionVerdict(
            ("Unknown", "NotReported", "no driver has reported the source's retention yet"), None
        )
    left = None
    if report.purge_not_before is not None:
        left = (report.purge_not_before - now).total_seconds()
    what = f"binlog file {report.needed_file}, which this pipeline resumes from,"
    advice = (
        "Resume the pipeline or let it catch up before then, or keep binlogs longer on the source "
        "(binlog_expire_logs_seconds); once the file is purged the pipeline needs a re-snapshot."
    )
    if left is not None and left <= margin_seconds:
        when = "may already be purged" if left <= 0 else f"may be purged in {_duration(left)}"
        return RetentionVerdict(
            ("True", "ExpiresSoon", f"{what} {when} by the source's age limit. {advice}"), left
        )
    rotated = report.needed_file != report.current_file
    if rotated and report.files_before < margin_files:
        rank = "the oldest" if report.files_before == 0 else f"among the {report.files_before + 1} oldest"
        message = (
            f"{what} is {rank} binlog file(s) the source keeps: a PURGE BINARY LOGS, a size limit or a "
            f"full disk removes it first. {advice}"
        )
        return RetentionVerdict(("True", "OldestRetainedFile", message), left)
    message = "the binlog this pipeline needs is within the source's retention"
    if left is not None:
        message += f" for at least {_duration(left)}"
    return RetentionVerdict(("False", "WithinRetention", message), left)


def _duration(seconds: float) -> str:
    if seconds >= 2 * 86400:
        return f"{seconds / 86400:.1f} days"
    if seconds >= 5400:
        return f"{seconds / 3600:.1f} h"
    return f"{max(seconds, 0) / 60:.0f} min"
