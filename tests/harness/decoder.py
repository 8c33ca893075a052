"""The Go binlog decoder as the engine finds it, and a table's schema as the source has it now: for
the tests that hold the decoder to python-mysql-replication."""

from __future__ import annotations

from pathlib import Path

from harness.mariadb import binlog_offset
from harness.type_table import UNSPELLED, create_without_geometry, write_changes_without_geometry
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.binlog.follow import FollowSettings, NativeBatch, NativeDdl, NativeFollower, NativeStopped
from sparkcdc.mysql.binlog.native import decoder_path
from sparkcdc.mysql.connection import SourceConfig, connect
from sparkcdc.mysql.schema import TableSchema, load_table_schema
from sparkcdc.options import EngineOptions
from sparkcdc.testing.mariadb import MariaDBServer


def built_decoder() -> Path | None:
    """The Go decoder the engine would use here (EngineOptions from this environment)."""
    options = EngineOptions.from_environment()
    return decoder_path(options.binlog_decoder, options.cache_dir)


def source_schema(cfg: SourceConfig, table: TableId) -> TableSchema:
    conn = connect(cfg)
    try:
        return load_table_schema(conn, table)
    finally:
        conn.close()


SMALL = FollowSettings(batch_events=50, batch_millis=200, heartbeat_seconds=5)


def follow_items(
    binary: Path,
    cfg: SourceConfig,
    schema: TableSchema,
    start: BinlogOffset,
    until: BinlogOffset,
    settings: FollowSettings = SMALL,
) -> list[NativeBatch | NativeDdl | NativeStopped]:
    """What the follower answers from ``start`` until a batch reaches ``until`` or it stops."""
    follower = NativeFollower(binary, cfg, 4301, {schema.table: schema}, start, "mariadb", settings)
    follower.start()
    items: list[NativeBatch | NativeDdl | NativeStopped] = []
    try:
        for _ in range(600):
            item = follower.get(0.1)
            if item is None:
                continue
            items.append(item)
            if isinstance(item, NativeStopped) or (isinstance(item, NativeBatch) and item.end >= until):
                break
    finally:
        follower.close()
    return items


def spelled_type_table_stretch(
    server: MariaDBServer, table: str, tricky: str, latin1_hex: str
) -> tuple[BinlogOffset, BinlogOffset]:
    """The type table without the columns the decoder does not spell (``UNSPELLED``), its changes,
    then ``tricky`` text in ``vc`` and, reversed, ``tx`` of rows 1 and 150, and the latin1 bytes
    ``latin1_hex`` in ``lat`` of row 1: the stretch of binlog they fill."""
    create_without_geometry(server, table)
    server.execute(f"ALTER TABLE {table} " + ", ".join(f"DROP COLUMN {c}" for c in UNSPELLED))
    start = binlog_offset(server)
    write_changes_without_geometry(server, table, UNSPELLED)
    server.execute(f"UPDATE {table} SET vc = %s, tx = %s WHERE id IN (1, 150)", (tricky, tricky[::-1]))
    server.execute(f"UPDATE {table} SET lat = CONVERT(UNHEX('{latin1_hex}') USING latin1) WHERE id = 1")
    return start, binlog_offset(server)
