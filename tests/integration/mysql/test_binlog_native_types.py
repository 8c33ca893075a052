"""The Go catch-up decoder (mysql/binlog/native.py) against python-mysql-replication.

The same binlog range over the type table of tests/harness/type_table.py (every type family
but GEOMETRY, which the Go path leaves to Python; a non-UTC server time zone) is reduced by a
catch-up task once with each decoder; the reduced rows and deleted keys must be identical. The
range also holds key changes and deletes. Ranges the Go decoder cannot reproduce — a table whose
binlog rows have fewer columns than its definition now, a DDL statement — are answered with
"unsupported" and fall back to Python.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from harness.decoder import built_decoder, source_schema
from harness.mariadb import binlog_offset
from harness.type_table import create_without_geometry, write_changes_without_geometry
from sparkcdc.core.catchup import CatchupRange
from sparkcdc.core.event_filter import BinlogSplitFilter
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.binlog.native import decode_range, decoder_path, native_eligible
from sparkcdc.mysql.connection import SourceConfig
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.mysql.zero_dates import keep_zero_dates
from sparkcdc.spark.catchup_tasks import RangeContext, RangeResult, read_range
from sparkcdc.testing.mariadb import MariaDBServer


def _read(cfg: SourceConfig, schema: TableSchema, window: CatchupRange, native: bool) -> RangeResult:
    event_filter = BinlogSplitFilter({}, {}, streaming=[schema.table])
    context = RangeContext(
        cfg, {schema.table: schema}, event_filter, "mariadb", built_decoder() if native else None
    )
    return read_range(context, window, 4201 if native else 4202)


@pytest.mark.parametrize("zero_dates", [False, True], ids=["dates", "zero-date-text"])
def test_go_decoder_reduces_the_type_table_like_python(
    mariadb: MariaDBServer, source_config: SourceConfig, fresh_db: str, binary: Path, zero_dates: bool
) -> None:
    """Also with the date columns flagged for a MySQL target (MySQL's text, zero dates kept)."""
    cfg = replace(source_config, tls_mode="disabled")
    table = f"`{fresh_db}`.`types`"
    create_without_geometry(mariadb, table)
    start = binlog_offset(mariadb)
    write_changes_without_geometry(mariadb, table)
    stop = binlog_offset(mariadb)
    schema = source_schema(cfg, TableId(fresh_db, "types"))
    if zero_dates:
        schema = keep_zero_dates(schema)
        assert any(c.zero_dates for c in schema.columns)
    assert native_eligible(cfg, {schema.table: schema})
    assert native_eligible(source_config, {schema.table: schema})  # TLS possible: the decoder too

    window = CatchupRange(0, start, stop)
    go = decode_range(binary, cfg, 4203, {schema.table: schema}, start, stop)
    assert go is not None
    python = _read(cfg, schema, window, native=False)
    through_task = _read(cfg, schema, window, native=True)
    assert go.events == python.events == through_task.events
    expected, got = python.changes[schema.table], go.changes[schema.table]
    assert got.deletes == expected.deletes and (10121,) in got.deletes and (130,) not in got.deletes
    assert got.upserts.keys() == expected.upserts.keys()
    for key, row in expected.upserts.items():
        diff = {c: (v, got.upserts[key][c]) for c, v in row.items() if got.upserts[key][c] != v}
        assert diff == {}, f"row {key}: python vs Go"
    assert through_task.changes == python.changes


def test_go_decoder_leaves_what_it_cannot_reproduce_to_python(
    mariadb: MariaDBServer, source_config: SourceConfig, fresh_db: str, binary: Path
) -> None:
    cfg = replace(source_config, tls_mode="disabled")
    table = f"`{fresh_db}`.`t`"
    mariadb.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY, v VARCHAR(10))")
    start = binlog_offset(mariadb)
    mariadb.execute(f"INSERT INTO {table} VALUES (1, 'a'), (2, 'b')")
    before_ddl = binlog_offset(mariadb)
    mariadb.execute(f"ALTER TABLE {table} ADD COLUMN w INT")
    mariadb.execute(f"INSERT INTO {table} VALUES (3, 'c', 3)")
    stop = binlog_offset(mariadb)
    schema = source_schema(cfg, TableId(fresh_db, "t"))  # three columns now; the first rows have two
    tables = {schema.table: schema}
    assert decode_range(binary, cfg, 4204, tables, start, before_ddl) is None
    assert decode_range(binary, cfg, 4204, tables, before_ddl, stop) is None  # the DDL inside
    result = _read(cfg, schema, CatchupRange(0, start, before_ddl), native=True)  # Python instead
    assert result.changes[schema.table].upserts == {(1,): {"id": 1, "v": "a"}, (2,): {"id": 2, "v": "b"}}


def test_python_decoder_can_be_forced() -> None:
    assert decoder_path("python", Path("/nowhere")) is None
