"""``harness.waiting.wait_until``, the tests' one polling helper: it returns what the condition
returned once it holds, and fails with what was awaited and the last value when it never does."""

from __future__ import annotations

import pytest

from harness.waiting import WaitTimeoutError, wait_until


def test_returns_the_first_truthy_value() -> None:
    values = iter([None, 0, "", [], {"found": 3}, {"later": 4}])
    assert wait_until(lambda: next(values), timeout=60, interval=0, message="a value") == {"found": 3}


def test_a_condition_that_holds_at_once_is_called_once() -> None:
    calls: list[int] = []
    assert wait_until(lambda: calls.append(1) or True, timeout=0, message="x") is True
    assert calls == [1]


def test_timeout_says_what_was_awaited_and_the_last_value() -> None:
    # A zero timeout: one call, then the deadline has passed (no real time needed).
    with pytest.raises(WaitTimeoutError, match=r"waiting for the checkpoint \(last value: \[\]\)") as caught:
        wait_until(lambda: [], timeout=0, message="the checkpoint")
    assert caught.value.last == []
    assert isinstance(caught.value, AssertionError)  # a failed test, not an error


def test_a_message_callable_is_called_only_when_it_fails() -> None:
    asked: list[int] = []

    def message() -> str:
        asked.append(1)
        return "the run to end; its output: boom"

    assert wait_until(lambda: 7, timeout=0, message=message) == 7
    assert asked == []
    with pytest.raises(WaitTimeoutError, match="the run to end; its output: boom"):
        wait_until(lambda: None, timeout=0, message=message)
    assert asked == [1]


def test_exceptions_of_the_condition_are_not_swallowed() -> None:
    def broken() -> bool:
        raise KeyError("no such pod")

    with pytest.raises(KeyError, match="no such pod"):
        wait_until(broken, timeout=60, message="a pod")
