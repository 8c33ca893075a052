"""Transaction boundaries of a binlog stretch, from ``SHOW BINLOG EVENTS`` (no row decoding).

The server lists every event's type and end position without decoding rows, so finding where
transactions end in a backlog costs a scan of the event headers on the server, not a decode.
A commit is an ``Xid`` event, or a ``Query`` event ``COMMIT`` / ``XA …`` (non-transactional
tables, XA); any other ``Query`` except ``BEGIN`` is a statement that changes definitions (DDL).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pymysql

from sparkcdc.core.catchup import Boundary
from sparkcdc.core.offsets import BinlogOffset, binlog_file_index
from sparkcdc.mysql.queries import binlog_files

__all__ = ["boundary_of", "list_boundaries"]

_FIRST_EVENT = 4  # after the binlog file's magic number


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
    # Unbuffered: a binlog file can hold millions of events; only boundaries are kept.
    with conn.cursor(pymysql.cursors.SSCursor) as cur:
        cur.execute("SHOW BINLOG EVENTS IN %s FROM %s", (file, start))
        for _log, _pos, event_type, _server, end_pos, info in cur:
            if stop is not None and int(end_pos) > stop:
                break  # drain the rest unread: the cursor closes with the block
            found = boundary_of(file, _text(event_type), int(end_pos), _text(info or ""))
            if found is not None:
                yield found


def list_boundaries(conn: Any, start: BinlogOffset, stop: BinlogOffset) -> list[Boundary]:
    """Commit and DDL boundaries in ``(start, stop]``, in binlog order."""
    names = [name for name, _size in binlog_files(conn)]
    first, last = binlog_file_index(start.file), binlog_file_index(stop.file)
    found: list[Boundary] = []
    for name in names:
        index = binlog_file_index(name)
        if index < first or index > last:
            continue
        begin = start.pos if index == first else _FIRST_EVENT
        found.extend(_file_boundaries(conn, name, begin, stop.pos if index == last else None))
    return found
