"""Re-checking a chunk that differed: no false alarms while rows change under verification.

A first-pass difference may only mean that the sink has not caught up yet, or has already
applied a change the source's read did not see. A re-check compares the chunk row by row:

1. every source row's hash, by row key, in one read view at binlog position ``P``;
2. wait until the pipeline has applied the table's binlog up to ``P`` — its checkpointed offset
   is at or after ``P``, or ``SHOW BINLOG EVENTS`` lists no change of the table between that
   offset and ``P`` (so a stopped pipeline that is up to date for the table also qualifies);
   a pipeline that does not get there within the wait leaves the chunk *unsettled*;
3. every sink row's hash; then the source's current position ``H``;
4. the rows whose hashes differ (or exist on one side only) are checked against the binlog
   between ``P`` and ``H`` (decoded for this table only): the sink read happened at some
   position in ``[P, H]``, so a row the source changed in between may legitimately hold any of
   the states it went through. A differing row is explained when the sink holds one of those
   states (an after image, or no row after a delete).

Rows that no change touched are identical on the source at ``P`` and at whatever position the
sink was read, and the sink has applied everything up to ``P``: any difference there is real.
So the chunk *differs* exactly when some differing row is not explained; the report names a few
of those row keys (their canonical text).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import pymysql

from sparkcdc.core.events import ChangeEvent
from sparkcdc.core.offsets import BinlogOffset, binlog_file_index
from sparkcdc.core.splits import SnapshotSplit
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.flavor import ServerFlavor
from sparkcdc.mysql.queries import binlog_files, current_offset
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.verify.canonical import python_row_text, row_hash
from sparkcdc.verify.checksum import ChunkChecksum, RowHashes, SinkChecker, source_row_hashes

__all__ = [
    "AppliedOffset",
    "ChangeReader",
    "Outcome",
    "RecheckSettings",
    "recheck_chunk",
    "table_changed_between",
]

# The binlog offset the pipeline has applied to the sink, or None when nothing is known (no
# checkpoint): then re-checks do not wait.
AppliedOffset = Callable[[], BinlogOffset | None]
# The row changes of a table in (start, stop].
ChangeReader = Callable[[TableSchema, BinlogOffset, BinlogOffset], Iterable[ChangeEvent]]

SAMPLE_KEYS = 10
_EVENTS_PER_PAGE = 5000


@dataclass(frozen=True)
class RecheckSettings:
    wait_seconds: float = 120.0
    poll_seconds: float = 0.2


@dataclass(frozen=True)
class Outcome:
    """``status``: ``match``, ``differ`` or ``unsettled`` (``reason``), with the re-check's
    checksums; for ``differ`` the number of unexplained rows and a sample of their keys;
    ``changing_rows`` differed but were explained by concurrent changes."""

    status: str
    source: ChunkChecksum
    sink: ChunkChecksum
    position: BinlogOffset
    reason: str = ""
    differing_rows: int = 0
    sample_keys: tuple[str, ...] = ()
    changing_rows: int = 0


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, (bytes, bytearray)) else str(value)


def table_changed_between(conn: Any, table: TableId, start: BinlogOffset, stop: BinlogOffset) -> bool:
    """Whether the binlog holds a row change of ``table`` in ``[start, stop)`` (``Table_map``
    events name the table; nothing is decoded). Unreadable ranges count as changed."""
    if not start < stop:
        return False
    marker = f"({table.database}.{table.table})"
    first, last = binlog_file_index(start.file), binlog_file_index(stop.file)
    try:
        files = [f for f, _ in binlog_files(conn) if first <= binlog_file_index(f) <= last]
        with conn.cursor(pymysql.cursors.Cursor) as cur:
            for file in files:
                pos = start.pos if file == start.file else 4
                while True:
                    cur.execute(f"SHOW BINLOG EVENTS IN %s FROM {int(pos)} LIMIT {_EVENTS_PER_PAGE}", (file,))
                    rows = cur.fetchall()
                    for _log, event_pos, kind, _server, end_pos, info in rows:
                        if file == stop.file and int(event_pos) >= stop.pos:
                            return False
                        if _text(kind) == "Table_map" and _text(info).endswith(marker):
                            return True
                        pos = int(end_pos)
                    if len(rows) < _EVENTS_PER_PAGE:
                        break
    except pymysql.err.MySQLError:
        return True
    return False


def wait_caught_up(
    conn: Any,
    table: TableId,
    target: BinlogOffset,
    applied: AppliedOffset,
    deadline: float,
    poll_seconds: float,
) -> bool:
    """Wait until the pipeline has applied ``table``'s changes up to ``target``; False on timeout."""
    scanned_from: BinlogOffset | None = None
    while True:
        offset = applied()
        if offset is None or offset >= target:
            return True
        if scanned_from is None or not offset.same_position(scanned_from):
            # One scan per distinct checkpoint: a stopped pipeline that is up to date for this
            # table is recognised at once, a running one mostly passes the target first.
            scanned_from = offset
            if not table_changed_between(conn, table, offset, target):
                return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(poll_seconds)


def sink_states(
    schema: TableSchema, events: Iterable[ChangeEvent], keys: set[str]
) -> dict[str, set[int | None]]:
    """For each of ``keys`` touched by ``events``: the row hashes it went through (None: absent)."""
    columns, key_columns = schema.columns, schema.row_key_columns
    states: dict[str, set[int | None]] = {}
    for event in events:
        before = None if event.before is None else python_row_text(key_columns, event.before)
        after = None if event.after is None else python_row_text(key_columns, event.after)
        if before is not None and before != after and before in keys:
            states.setdefault(before, set()).add(None)
        if after is not None and after in keys:
            assert event.after is not None
            states.setdefault(after, set()).add(row_hash(python_row_text(columns, event.after)))
    return states


def recheck_chunk(
    conn: Any,
    flavor: ServerFlavor,
    sink: SinkChecker,
    schema: TableSchema,
    split: SnapshotSplit,
    *,
    applied: AppliedOffset,
    changes: ChangeReader,
    settings: RecheckSettings,
    deadline: float,
) -> Outcome:
    """Re-check one chunk row by row (module docstring)."""
    in_source, position = source_row_hashes(conn, flavor, schema, split)
    caught_up = wait_caught_up(conn, schema.table, position, applied, deadline, settings.poll_seconds)
    in_sink: RowHashes = sink.row_hashes(schema, split)
    later = current_offset(conn, flavor)
    source_sum, sink_sum = ChunkChecksum.of(in_source), ChunkChecksum.of(in_sink)
    differing = {k for k in in_source.keys() | in_sink.keys() if in_source.get(k) != in_sink.get(k)}
    if not differing:
        return Outcome("match", source_sum, sink_sum, position)
    if not caught_up:
        reason = f"the pipeline did not apply the binlog past {position} within the wait"
        return Outcome("unsettled", source_sum, sink_sum, position, reason, len(differing))
    states = sink_states(schema, changes(schema, position, later), differing)
    unexplained = sorted(k for k in differing if in_sink.get(k) not in states.get(k, ()))
    changing = len(differing) - len(unexplained)
    if not unexplained:
        return Outcome("match", source_sum, sink_sum, position, changing_rows=changing)
    return Outcome(
        "differ",
        source_sum,
        sink_sum,
        position,
        differing_rows=len(unexplained),
        sample_keys=tuple(unexplained[:SAMPLE_KEYS]),
        changing_rows=changing,
    )
