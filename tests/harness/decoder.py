"""The Go binlog decoder as the engine finds it, and a table's schema as the source has it now: for
the tests that hold the decoder to python-mysql-replication."""

from __future__ import annotations

from pathlib import Path

from sparkcdc.core.tables import TableId
from sparkcdc.mysql.binlog.native import decoder_path
from sparkcdc.mysql.connection import SourceConfig, connect
from sparkcdc.mysql.schema import TableSchema, load_table_schema
from sparkcdc.options import EngineOptions


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
