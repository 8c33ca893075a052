"""The connection a binlog reader streams over: PyMySQL's, with what the library lacks.

python-mysql-replication reconnects silently on a lost connection; the errors here are not
``OperationalError``s, so they pass through it: a server-id clash (another replica registered with
our id; see ``BinlogChangeReader``), and a stop the reader asked for (``interrupt`` wakes a read
blocked waiting for the next event, instead of leaving it blocked until a heartbeat).
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable
from typing import Any

import pymysql
from pymysql.protocol import MysqlPacket

__all__ = ["LOST", "ServerIdClashError", "SourceChangedError", "StoppedError", "StreamConnection", "is_clash"]

LOST = (2013, 2006)  # CR_SERVER_LOST, CR_SERVER_GONE_ERROR


def is_clash(code: Any, message: str) -> bool:
    # MariaDB: 4052 ER_SLAVE_SAME_ID "A slave with the same server_uuid/server_id is already
    # connected"; MySQL: 1236 "A slave with the same server_uuid/server_id as this slave has
    # connected to the master".
    return code == 4052 or (code == 1236 and "same server" in message)


class ServerIdClashError(Exception):
    """Raised inside the stream connection; not an OperationalError, so the library does not
    swallow it with a silent reconnect."""


class SourceChangedError(Exception):
    """Raised when a (re)connection reaches another server than the stream was reading; not an
    OperationalError, so the library does not swallow it either."""


class StoppedError(Exception):
    """Raised inside a connection of a reader asked to stop (not an OperationalError either)."""


class StreamConnection(pymysql.connections.Connection):
    def __init__(
        self, *args: Any, on_lost: Any, stopping: threading.Event, opened: Any, **kwargs: Any
    ) -> None:
        self._on_lost = on_lost
        self._stopping = stopping
        self._opened = opened
        if "db" in kwargs:  # the library still uses PyMySQL's deprecated name
            kwargs["database"] = kwargs.pop("db")
        super().__init__(*args, **kwargs)

    def connect(self, sock: Any = None) -> None:
        super().connect(sock)
        self._opened(self)

    def interrupt(self) -> None:
        """Wake a read blocked on this connection from another thread: shutting the socket down
        ends the read with end-of-file (closing it instead would race the reading thread)."""
        sock = getattr(self, "_sock", None)  # PyMySQL's socket; None once closed
        if sock is not None:
            with contextlib.suppress(OSError):  # not connected any more
                sock.shutdown(socket.SHUT_RDWR)

    def _read_packet(self, packet_type: Any = MysqlPacket) -> Any:
        read: Callable[[Any], Any] = super()._read_packet
        if self._stopping.is_set():
            raise StoppedError
        try:
            return read(packet_type)
        except pymysql.err.OperationalError as exc:
            if self._stopping.is_set():
                raise StoppedError from None  # the read ended by ``interrupt``
            code = exc.args[0] if exc.args else None
            message = str(exc.args[1]) if len(exc.args) > 1 else ""
            if is_clash(code, message):
                raise ServerIdClashError(message) from None
            if code in LOST:
                self._on_lost(exc)
            raise
