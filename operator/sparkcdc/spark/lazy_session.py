"""A SparkSession started on first use.

A restarted pipeline that is past its snapshot streams the binlog in the driver without Spark;
starting the JVM anyway costs seconds on every restart. ``LazySession`` stands in for the
session and starts it the first time anything is asked of it (a snapshot wave, a Delta sink's
first Spark write: sinks/base.py ``start_driver_session``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

__all__ = ["LazySession"]


class LazySession:
    def __init__(self, create: Callable[[], Any], master: str | None = None) -> None:
        """``master``: the master ``create`` starts the session with, known before it does."""
        self._create = create
        self.master = master
        self._session: Any = None
        self._lock = threading.Lock()

    @property
    def started(self) -> bool:
        return self._session is not None

    def get(self) -> Any:
        with self._lock:
            if self._session is None:
                self._session = self._create()
            return self._session

    def __getattr__(self, name: str) -> Any:
        return getattr(self.get(), name)

    def stop(self) -> None:
        """Stop the session if it was ever started."""
        with self._lock:
            session, self._session = self._session, None
        if session is not None:
            session.stop()
