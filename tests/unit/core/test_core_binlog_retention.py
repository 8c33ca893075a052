"""BinlogExpiry: the operator judges the driver's last retention report against the clock, also
for a suspended pipeline whose driver is long gone (pure decisions)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from harness.reconcile_fixtures import NOW, apply_status, condition, make_spec, make_status, observed
from sparkcdc.core.binlog_retention import RetentionReport, judge, purge_not_before
from sparkcdc.core.reconcile import reconcile
from sparkcdc.core.reconcile_types import Event, format_time

HOUR = 3600.0


def report(**changes: Any) -> RetentionReport:
    values: dict[str, Any] = {
        "needed_file": "bin.000007",
        "current_file": "bin.000007",
        "files_before": 3,
        "expire_seconds": 7 * 86400.0,
        "purge_not_before": NOW + timedelta(days=7),
    }
    values.update(changes)
    return RetentionReport(**values)


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({}, ("False", "WithinRetention")),
        ({"purge_not_before": NOW + timedelta(hours=5)}, ("True", "ExpiresSoon")),
        ({"purge_not_before": NOW - timedelta(hours=1)}, ("True", "ExpiresSoon")),
        # the oldest file but still the current one: a purge never removes the file being written
        ({"files_before": 0}, ("False", "WithinRetention")),
        ({"files_before": 0, "current_file": "bin.000009"}, ("True", "OldestRetainedFile")),
        ({"files_before": 1, "current_file": "bin.000009"}, ("False", "WithinRetention")),
        # a source that keeps binlogs forever: only the oldest-file rule can warn
        ({"expire_seconds": None, "purge_not_before": None}, ("False", "WithinRetention")),
    ],
)
def test_judge(changes: dict[str, Any], expected: tuple[str, str]) -> None:
    verdict = judge(report(**changes), NOW, margin_seconds=6 * HOUR, margin_files=1)
    assert verdict.condition[:2] == expected
    assert verdict.condition[2]


def test_the_message_names_the_file_the_time_left_and_the_way_out() -> None:
    verdict = judge(report(purge_not_before=NOW + timedelta(hours=5)), NOW, 6 * HOUR, 1)
    message = verdict.condition[2]
    assert "bin.000007" in message and "5.0 h" in message and "binlog_expire_logs_seconds" in message
    assert verdict.seconds_left == pytest.approx(5 * HOUR)
    past = judge(report(purge_not_before=NOW - timedelta(hours=1)), NOW, 6 * HOUR, 1)
    assert "may already be purged" in past.condition[2] and past.seconds_left == pytest.approx(-HOUR)


def test_no_report_is_unknown_not_a_warning() -> None:
    verdict = judge(None, NOW, 6 * HOUR, 1)
    assert verdict.condition[:2] == ("Unknown", "NotReported") and verdict.seconds_left is None


def test_purge_not_before_needs_an_age_limit_and_a_write_bound() -> None:
    assert purge_not_before(None, NOW) is None
    assert purge_not_before(60.0, None) is None
    assert purge_not_before(60.0, NOW) == NOW + timedelta(seconds=60)


def _retention(purge_in: timedelta) -> dict[str, Any]:
    return {
        "neededFile": "bin.000007",
        "currentFile": "bin.000007",
        "filesBefore": 2,
        "expireSeconds": 86400.0,
        "purgeNotBefore": format_time(NOW + purge_in),
    }


def test_a_suspended_pipeline_is_warned_as_its_binlog_runs_out_with_one_event() -> None:
    spec = make_spec(suspend=True)
    status = make_status(phase="Suspended", progress={"binlogRetention": _retention(timedelta(hours=8))})
    first = reconcile(spec, status, observed(), NOW)
    status = apply_status(status, first)
    assert condition(status, "BinlogExpiry") == ("False", "WithinRetention")
    assert not [a for a in first if isinstance(a, Event) and a.reason == "BinlogExpiry"]

    # no driver reports anything more: the clock alone brings the file within the margin
    later = NOW + timedelta(hours=3)
    second = reconcile(spec, status, observed(), later)
    status = apply_status(status, second)
    assert condition(status, "BinlogExpiry") == ("True", "ExpiresSoon")
    events = [a for a in second if isinstance(a, Event) and a.reason == "BinlogExpiry"]
    assert len(events) == 1 and events[0].type == "Warning" and "bin.000007" in events[0].message

    third = reconcile(spec, status, observed(), later + timedelta(minutes=1))
    assert not [a for a in third if isinstance(a, Event) and a.reason == "BinlogExpiry"]


def test_a_pipeline_without_a_report_has_the_condition_unknown() -> None:
    status = apply_status(make_status(), reconcile(make_spec(), make_status(), observed(), NOW))
    assert condition(status, "BinlogExpiry") == ("Unknown", "NotReported")
