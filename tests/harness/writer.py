"""The random writer: tests that change source tables while a pipeline (or a reader) runs use it.

``RandomWriter`` writes in a thread of its own, on a root connection of its own, until stopped.
Each round is one transaction: ``transaction(cur)`` issues its statements, the writer commits
and counts it in ``transactions``, then pauses. What a transaction writes is the subclass's:

* override ``op(cur)``, one operation: a transaction is 1 to ``most`` of them; or
* override ``transaction(cur)``, when a transaction is more than a number of operations.

Random choices come from ``self.rng``, seeded: a test writes the same statements in the same
order on every run (only how they interleave with the pipeline varies). ``pause_seconds()``
says how long to pause after a transaction (``pause`` by default).

``stop()`` — or leaving the ``with`` block — stops the writer, waits for its thread and raises
whatever the writer met, so a broken writer fails its test instead of quietly writing nothing.
A stopped writer can be started again (its random sequence goes on where it stopped).

The connection is not in autocommit mode, so a transaction's statements commit together and a
single statement is a transaction of its own; statements need no ``BEGIN``/``COMMIT``.
"""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass
from typing import Any, Protocol

import pymysql

__all__ = ["Address", "RandomWriter"]


class _Server(Protocol):
    @property
    def host(self) -> str: ...

    @property
    def port(self) -> int: ...


@dataclass(frozen=True)
class Address:
    """Where a server listens, for a writer without its ``MariaDBServer`` (a subprocess's)."""

    host: str
    port: int


class RandomWriter:
    """Random transactions on a server until stopped; see the module docstring.

    ``server`` is a ``MariaDBServer`` or an ``Address`` (the writer connects as the passwordless
    root user); ``db`` is the connection's default database (statements may still name others).
    """

    def __init__(
        self,
        server: _Server,
        seed: int,
        *,
        db: str | None = None,
        most: int = 3,
        pause: float = 0.005,
        name: str | None = None,
    ) -> None:
        self.server, self.db = server, db
        self.rng = random.Random(seed)
        self.most, self.pause = most, pause
        self.transactions = 0
        self.error: BaseException | None = None
        self._name = name or type(self).__name__
        self._halt = threading.Event()
        self._thread: threading.Thread | None = None

    # -- what is written: the subclass's ------------------------------------------------------

    def op(self, cur: Any) -> None:
        """One operation (a statement or a few) of a transaction."""
        raise NotImplementedError

    def transaction(self, cur: Any) -> None:
        """The statements of one transaction: 1 to ``most`` operations."""
        for _ in range(self.rng.randint(1, self.most)):
            self.op(cur)

    def pause_seconds(self) -> float:
        """How long to pause after a transaction."""
        return self.pause

    # -- running ------------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> RandomWriter:
        assert not self.running, f"{self._name} is already running"
        self._halt.clear()
        self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop, wait for the thread, and raise what the writer met (if anything)."""
        self._halt.set()
        if self._thread is not None:
            self._thread.join(30)
        if self.error is not None:
            raise self.error

    def __enter__(self) -> RandomWriter:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _connect(self) -> Any:
        """A new connection of the writer's kind: root, not autocommit, ``db`` as default."""
        return pymysql.connect(
            host=self.server.host,
            port=self.server.port,
            user="root",
            password="",
            database=self.db,
            charset="utf8mb4",
            autocommit=False,
            connect_timeout=5,
        )

    def _run(self) -> None:
        try:
            conn = self._connect()
        except BaseException as err:  # raised by stop()
            self.error = err
            return
        try:
            while not self._halt.is_set():
                with conn.cursor() as cur:
                    self.transaction(cur)
                conn.commit()
                self.transactions += 1
                self._halt.wait(self.pause_seconds())
        except BaseException as err:  # raised by stop()
            self.error = err
        finally:
            conn.close()
