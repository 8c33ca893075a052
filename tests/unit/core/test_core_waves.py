"""Snapshot wave sizing (core/waves.py): waves grow while short, shrink when long, never below
the starting count or above the spec's bound, and stay fixed when the spec sets splitsPerTask.
And when Spark is worth starting: only for more work than the driver does alone in a while."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparkcdc.core.waves import (
    MAX_SPLITS_PER_TASK,
    SPARK_WORTH_SECONDS,
    WAVE_TARGET_SECONDS,
    WaveSizer,
    spark_worth_starting,
)

pytestmark = pytest.mark.unit


def test_short_waves_double_until_they_take_about_the_target() -> None:
    sizer = WaveSizer(4, adaptive=True)
    seen = []
    for _ in range(6):
        seen.append(sizer.splits_per_task)
        # A wave's time is proportional to its size: 0.3 s for four splits per task.
        sizer.observe(0.3 * sizer.splits_per_task / 4)
    assert seen == [4, 8, 16, 32, 32, 32]  # 1.2 s → 2.4 s, then within the target's band


def test_a_long_wave_halves_the_next_but_not_below_the_start() -> None:
    sizer = WaveSizer(4, adaptive=True)
    for _ in range(3):
        sizer.observe(0.1)
    assert sizer.splits_per_task == 32
    sizer.observe(WAVE_TARGET_SECONDS * 3)
    assert sizer.splits_per_task == 16
    for _ in range(5):
        sizer.observe(WAVE_TARGET_SECONDS * 3)
    assert sizer.splits_per_task == 4


def test_a_spec_that_sets_splits_per_task_keeps_it() -> None:
    sizer = WaveSizer(2, adaptive=False)
    for seconds in (0.01, 100.0, 0.01):
        sizer.observe(seconds)
        assert sizer.splits_per_task == 2


@given(
    floor=st.integers(1, MAX_SPLITS_PER_TASK),
    seconds=st.lists(st.floats(0, 1000, allow_nan=False), max_size=40),
)
def test_size_stays_within_the_start_and_the_bound(floor: int, seconds: list[float]) -> None:
    sizer = WaveSizer(floor, adaptive=True)
    for s in seconds:
        sizer.observe(s)
        assert floor <= sizer.splits_per_task <= MAX_SPLITS_PER_TASK


def test_spark_starts_for_a_long_rest_and_not_for_a_short_one() -> None:
    # 0.5 s per split in the driver: 39 more splits are 19.5 s, 41 are 20.5 s.
    assert not spark_worth_starting(39, 4, 2.0)
    assert spark_worth_starting(41, 4, 2.0)
    assert not spark_worth_starting(0, 4, 2.0)  # nothing left


def test_without_a_measurement_spark_starts_unless_nothing_is_left() -> None:
    assert spark_worth_starting(1, 0, 0.0)
    assert not spark_worth_starting(0, 0, 0.0)


@given(
    remaining=st.integers(0, 10**6),
    done=st.integers(1, 10**4),
    seconds=st.floats(0, 10**4, allow_nan=False),
    more=st.integers(0, 10**6),
)
def test_more_work_left_never_makes_spark_less_worth_it(
    remaining: int, done: int, seconds: float, more: int
) -> None:
    if spark_worth_starting(remaining, done, seconds):
        assert spark_worth_starting(remaining + more, done, seconds)
    if remaining > 0 and seconds / done * remaining > SPARK_WORTH_SECONDS:
        assert spark_worth_starting(remaining, done, seconds)
