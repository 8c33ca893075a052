"""Reading one snapshot split between watermarks (architecture §3 rule 2).

Low watermark, chunk, high watermark; if the binlog moved in between, the split's events of
``(low, high]`` are collapsed to the last image per key and applied to the chunk. The result is
the split's exact content as of the high watermark.

Which split owns a key is decided by the database for keys with text columns (one query per
``_KEYS_PER_QUERY`` touched keys, each value cast to its column's charset and collation), and
exactly in Python otherwise (ints, Decimals, temporal values, bytes); see
``chunk_reader.keys_in_range``.

On MariaDB the low watermark is exact: the chunk is read in ``START TRANSACTION WITH CONSISTENT
SNAPSHOT`` and ``binlog_snapshot_file``/``binlog_snapshot_position`` give the binlog position of
that very snapshot. MySQL has no such status, so there the low watermark is the position
reported just before the snapshot starts (as Flink CDC does).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pymysql

from sparkcdc.core.events import ChangeEvent
from sparkcdc.core.keys import key_of
from sparkcdc.core.merge import BackfillChanges, collapse_events
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.splits import Key, SnapshotSplit
from sparkcdc.mysql.binlog.reader import read_changes
from sparkcdc.mysql.chunk_reader import keys_in_range, read_chunk
from sparkcdc.mysql.connection import SourceConfig, connect, source_error
from sparkcdc.mysql.flavor import ServerFlavor, detect_flavor
from sparkcdc.mysql.queries import current_offset
from sparkcdc.mysql.schema import TableSchema

__all__ = ["SplitReadResult", "SplitReader", "apply_backfill", "read_split", "read_split_snapshot"]


@dataclass(frozen=True)
class SplitReadResult:
    """A split's content as of ``high``; ``rows_read`` rows came from the chunk query and
    ``backfill_events`` binlog changes of the bracket touched the split."""

    data: pa.Table
    low: BinlogOffset
    high: BinlogOffset
    rows_read: int
    backfill_events: int


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, (bytes, bytearray)) else str(value)


def _execute(conn: Any, sql: str) -> list[tuple[Any, ...]]:
    with conn.cursor(pymysql.cursors.Cursor) as cur:
        cur.execute(sql)
        return list(cur.fetchall())


def read_split_snapshot(
    conn: Any,
    flavor: ServerFlavor,
    schema: TableSchema,
    split: SnapshotSplit,
    fetch_size: int,
    reader: str = "auto",
) -> tuple[BinlogOffset, pa.Table]:
    """The chunk and its low watermark: a binlog position no later than the chunk's read view
    (``reader``: ``SourceConfig.chunk_reader``)."""
    before = current_offset(conn, flavor)
    if not flavor.is_mariadb:
        return before, read_chunk(conn, schema, split, fetch_size, reader)
    # A consistent read view, and the binlog position it corresponds to. (When read_chunk reads
    # over ConnectorX's own connection, that read view starts later still, which keeps this
    # position a valid low watermark; see chunk_reader.)
    _execute(conn, "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
    _execute(conn, "START TRANSACTION WITH CONSISTENT SNAPSHOT")
    try:
        status = {
            _text(k).lower(): _text(v) for k, v in _execute(conn, "SHOW STATUS LIKE 'binlog_snapshot_%'")
        }
        data = read_chunk(conn, schema, split, fetch_size, reader)
    finally:
        _execute(conn, "COMMIT")
    file, pos = status.get("binlog_snapshot_file", ""), status.get("binlog_snapshot_position", "")
    if not file or not pos.isdigit():
        return before, data  # cannot happen with log_bin on; the earlier position is still valid
    return BinlogOffset(file, int(pos)), data


def _touched_mask(data: pa.Table, key_columns: Sequence[str], touched: set[Key]) -> pa.Array:
    """True for the rows of ``data`` whose key is in ``touched``."""
    if len(key_columns) == 1:
        name = key_columns[0]
        values = pa.array([k[0] for k in touched], type=data.schema.field(name).type)
        return pc.fill_null(pc.is_in(data[name], value_set=values), False)
    columns = [data[c].to_pylist() for c in key_columns]
    return pa.array([key in touched for key in zip(*columns, strict=True)], type=pa.bool_())


def apply_backfill(
    conn: Any, schema: TableSchema, split: SnapshotSplit, data: pa.Table, events: Sequence[ChangeEvent]
) -> tuple[pa.Table, int]:
    """``data`` with the split's events applied; also the number of events that touched the split."""
    if not events:
        return data, 0
    row_key = schema.row_key
    chunk_len = len(schema.chunk_key)
    images = [image for e in events for image in (e.before, e.after) if image is not None]
    keys = list({key_of(image, row_key) for image in images})
    chunk_keys = [k[:chunk_len] for k in keys]
    flags = keys_in_range(conn, schema.chunk_key_columns, chunk_keys, split.start, split.end)
    inside = {k for k, flag in zip(keys, flags, strict=True) if flag}
    touching = sum(
        1
        for e in events
        if any(image is not None and key_of(image, row_key) in inside for image in (e.before, e.after))
    )
    changes: BackfillChanges = collapse_events(events, row_key, inside.__contains__)
    touched = changes.touched()
    if not touched:
        return data, touching
    kept = data.filter(pc.invert(_touched_mask(data, row_key, touched))) if data.num_rows else data
    upserts = pa.Table.from_pylist([dict(row) for row in changes.upserts.values()], schema=data.schema)
    return pa.concat_tables([kept, upserts]), touching


def distinct_by_row_key(schema: TableSchema, data: pa.Table) -> pa.Table:
    """``data`` with one row per row key. Only a row key that is not a source key (a full-row
    identity, or sinkKeyColumns) can repeat: identical rows are one row in the sink
    (docs/reference.md, tables without a primary key), and the target's key would refuse two."""
    if schema.row_key_unique or data.num_rows < 2:
        return data
    columns = [data[c].to_pylist() for c in schema.row_key]
    first: dict[Key, int] = {}
    for index, key in enumerate(zip(*columns, strict=True)):
        first.setdefault(key, index)
    if len(first) == data.num_rows:
        return data
    return data.take(pa.array(sorted(first.values()), type=pa.int64()))


class SplitReader:
    """Reads splits one after another over one source connection.

    A task's splits share the connection and its flavor detection (a connection per split
    cost a TCP and authentication round trip and two queries before the first watermark).
    Every split still gets its own low and high watermark and its own backfill. After a
    source error the connection is dropped and the next split opens a new one.
    """

    def __init__(self, cfg: SourceConfig, server_id: int, fetch_size: int = 10_000) -> None:
        self._cfg = cfg
        self._server_id = server_id
        self._fetch_size = fetch_size
        self._conn: Any = None
        self._flavor: ServerFlavor | None = None

    def __enter__(self) -> SplitReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def _connection(self) -> tuple[Any, ServerFlavor]:
        if self._conn is None:
            conn = connect(self._cfg, streaming=True)
            try:
                self._flavor = detect_flavor(conn)
            except BaseException:
                conn.close()
                raise
            self._conn = conn
        assert self._flavor is not None
        return self._conn, self._flavor

    def read(self, schema: TableSchema, split: SnapshotSplit) -> SplitReadResult:
        """The split's exact content as of its high watermark (see the module docstring)."""
        cfg = self._cfg
        try:
            conn, flavor = self._connection()
            low, data = read_split_snapshot(conn, flavor, schema, split, self._fetch_size, cfg.chunk_reader)
            high = current_offset(conn, flavor)
        except pymysql.err.MySQLError as exc:
            self.close()
            raise source_error(exc, cfg, f"reading split {split.split_id}") from None
        except BaseException:
            self.close()
            raise
        rows_read = data.num_rows
        data = distinct_by_row_key(schema, data)
        if not high > low:  # nothing was logged while the chunk was read: no backfill to read
            return SplitReadResult(data, low, high, rows_read, 0)
        events = list(read_changes(cfg, self._server_id, low, high, {schema.table: schema}))
        try:
            merged, touching = apply_backfill(conn, schema, split, data, events)
        except pymysql.err.MySQLError as exc:
            self.close()
            raise source_error(exc, cfg, f"merging split {split.split_id}") from None
        return SplitReadResult(merged, low, high, rows_read, touching)


def read_split(
    cfg: SourceConfig, schema: TableSchema, split: SnapshotSplit, server_id: int, fetch_size: int = 10_000
) -> SplitReadResult:
    """One split's exact content as of its high watermark, on a connection of its own."""
    with SplitReader(cfg, server_id, fetch_size) as reader:
        return reader.read(schema, split)
