"""Delayed reconciles ("requeue after N seconds") without writing anything to the object."""

from __future__ import annotations

import heapq
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

Key = tuple[str, str]  # namespace, name


class Scheduler:
    """Runs ``callback(key)`` once per key at the earliest requested time, on a small thread pool."""

    def __init__(self, callback: Callable[[Key], None], workers: int = 4) -> None:
        self._callback = callback
        self._due: dict[Key, float] = {}
        self._heap: list[tuple[float, Key]] = []
        self._cond = threading.Condition()
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="requeue")
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="requeue-scheduler", daemon=True)
        self._thread.start()

    def schedule(self, key: Key, delay: float) -> None:
        at = time.monotonic() + max(delay, 0.0)
        with self._cond:
            if key in self._due and self._due[key] <= at:
                return  # an earlier reconcile is coming anyway
            self._due[key] = at
            heapq.heappush(self._heap, (at, key))
            self._cond.notify()

    def cancel(self, key: Key) -> None:
        with self._cond:
            self._due.pop(key, None)

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify()
        self._thread.join(timeout=5)
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _run(self) -> None:
        with self._cond:
            while not self._stopped:
                if not self._heap:
                    self._cond.wait()
                    continue
                at, key = self._heap[0]
                wait = at - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                heapq.heappop(self._heap)
                if self._due.get(key) == at:  # else superseded or cancelled
                    del self._due[key]
                    self._pool.submit(self._callback, key)
