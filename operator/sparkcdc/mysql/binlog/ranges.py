"""Transaction boundaries of a binlog stretch, from ``SHOW BINLOG EVENTS`` (no row decoding).

The server lists every event's type and end position without decoding rows, so finding where
transactions end in a backlog costs a scan of the event headers on the server, not a decode.
A commit is an ``Xid`` event, or a ``Query`` event ``COMMIT`` / ``XA …`` (non-transactional
tables, XA); any other ``Query`` except ``BEGIN`` is a statement that changes definitions (DDL).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sparkcdc.core.catchup import Boundary
from sparkcdc.core.offsets import BinlogOffset, binlog_file_index
from sparkcdc.mysql.queries import binlog_files

__all__ = ["boundary_of", "list_boundaries"]

_FIRST_EVENT = 4  # after the binlog file's magic number
_PAGE_EVENTS = 10_000


def boundary_of(file: str, event_type: str, end_pos: int, info: str) -> Boundary | None:
    """The boundary after one ``SHOW BINLOG EVENTS`` row, or None when it is not one."""
    if event_type == "Xid":
        return Boundary(BinlogOffset(file, end_pos))
    if event_type != "Query":
        return None
    head = info.lstrip().split(None, 1)[0].upper() if info.strip() else ""
    if head == "BEGIN":
        return None
    return Boundary(BinlogOffset(file, end_pos), ddl=head not in ("COMMIT", "XA"))


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, (bytes, bytearray)) else str(value)


def _file_boundaries(conn: Any, file: str, start: int, stop: int | None) -> Iterator[Boundary]:
    # In pages: a binlog file can hold millions of events, of which only boundaries are kept, and
    # a caller that stops early (at a DDL) leaves no unread rows for the connection to drain.
    pos = start
    while True:
        with conn.cursor() as cur:
            cur.execute("SHOW BINLOG EVENTS IN %s FROM %s LIMIT %s", (file, pos, _PAGE_EVENTS))
            rows = cur.fetchall()
        for _log, _pos, event_type, _server, end_pos, info in rows:
            if stop is not None and int(end_pos) > stop:
                return
            found = boundary_of(file, _text(event_type), int(end_pos), _text(info or ""))
            if found is not None:
                yield found
        if len(rows) < _PAGE_EVENTS:
            return
        pos = int(rows[-1][4])  # an event ends where the next one starts


def list_boundaries(conn: Any, start: BinlogOffset, stop: BinlogOffset) -> list[Boundary]:
    """Commit boundaries in ``(start, stop]``, in binlog order, up to and including the first
    DDL: a catch-up stretch ends there (``core.catchup.stretch_end``), so listing the rest of a
    long backlog would be wasted."""
    names = [name for name, _size in binlog_files(conn)]
    first, last = binlog_file_index(start.file), binlog_file_index(stop.file)
    found: list[Boundary] = []
    for name in names:
        index = binlog_file_index(name)
        if index < first or index > last:
            continue
        begin = start.pos if index == first else _FIRST_EVENT
        for boundary in _file_boundaries(conn, name, begin, stop.pos if index == last else None):
            found.append(boundary)
            if boundary.ddl:
                return found
    return found
