"""Waiting in tests: ``wait_until`` polls a condition until it holds or a timeout runs out.

Use it instead of a hand-written ``while time.monotonic() < deadline: ... time.sleep(...)`` loop::

    row = wait_until(lambda: server.execute("SELECT ..."), timeout=30, message="the row to appear")

The timeout only bounds the wait, so that a broken condition fails the test instead of hanging
it: it is not a claim about speed. Make it generous (a loaded 2-core CI machine must pass), and
never assert how long something took — speed belongs in ``benchmarks/``.

(``SparkcdcProcess.wait_for`` in runner.py does more than poll: it also stops waiting when the run
exits, and keeps track of the run's processes so that ``kill()`` can freeze them at once.
``sparkcdc.testing.kube.wait_until`` is the product's own, used by the Kubernetes tests.)
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

__all__ = ["WaitTimeoutError", "wait_until"]

T = TypeVar("T")


class WaitTimeoutError(AssertionError):
    """A ``wait_until`` whose condition did not hold in time; ``last`` is its last value."""

    def __init__(self, message: str, last: object) -> None:
        super().__init__(message)
        self.last = last


def wait_until(
    condition: Callable[[], T | None],
    *,
    timeout: float,
    interval: float = 0.1,
    message: str | Callable[[], str],
) -> T:
    """Call ``condition`` every ``interval`` seconds until it returns something truthy; return that.

    It is called at least once, and once more when ``timeout`` seconds have passed; if it still
    returns something falsy then, raise ``WaitTimeoutError`` (an ``AssertionError``) saying what was
    awaited (``message``, or what the callable returns then: e.g. a subprocess's output) and the
    condition's last value. Exceptions of the condition are not caught: they fail the test.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            what = message() if callable(message) else message
            raise WaitTimeoutError(
                f"timed out after {timeout:g}s waiting for {what} (last value: {value!r})", value
            )
        time.sleep(interval)
