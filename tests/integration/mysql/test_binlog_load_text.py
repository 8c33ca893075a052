"""The upserts' ``LOAD DATA`` text the Go decoder renders in follow mode (binlogdec/loadtext.go)
for a JDBC sink into MySQL/MariaDB: for the type table's columns it spells, byte for byte the text
the sink renders from the same rows in Python (sinks/jdbc/bulk_load.py ``tsv_chunks``), whose
values the bulk-load tests hold to what INSERTs store."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pytest

from harness.decoder import SMALL, follow_items, source_schema, spelled_type_table_stretch
from sparkcdc.core.image_columns import ImageColumns
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.binlog.follow import NativeBatch
from sparkcdc.mysql.binlog.rendered import render_spec
from sparkcdc.mysql.connection import SourceConfig
from sparkcdc.mysql.zero_dates import keep_zero_dates
from sparkcdc.sinks.jdbc.bulk_load import tsv_chunks
from sparkcdc.testing.mariadb import MariaDBServer


@pytest.mark.parametrize("zero_dates", [False, True], ids=["dates", "mysql-dates"])
def test_load_text_is_the_sinks_own_text_of_the_same_rows(
    mariadb: MariaDBServer, source_config: SourceConfig, fresh_db: str, binary: Path, zero_dates: bool
) -> None:
    """``mysql-dates``: dates as a MySQL target keeps them, zero dates included (zero_dates.py)."""
    cfg = replace(source_config, tls_mode="disabled")
    table = f"`{fresh_db}`.`types`"
    # What LOAD DATA's text gives a meaning: tab, newline, backslash, NUL, the text \N; in latin1
    # too (the last two bytes: a backslash, a tab).
    tricky = "t\tn\nr\r\nb\\z\x00 \\N NULL 'q' \"qq\" \u2028"
    start, stop = spelled_type_table_stretch(mariadb, table, tricky, "41808A9FA0FF09818D8F909D5C09")
    schema = source_schema(cfg, TableId(fresh_db, "types"))
    if zero_dates:
        schema = keep_zero_dates(schema)
        assert any(c.zero_dates for c in schema.columns) and render_spec(schema) is None
    assert render_spec(schema, load=True) is not None, schema.columns

    items = follow_items(binary, cfg, schema, start, stop, replace(SMALL, load=True))
    batches = [i for i in items if isinstance(i, NativeBatch)]
    assert len(batches) == len(items) > 1, items
    target = schema.arrow_schema()
    loaded = 0
    for batch in batches:
        upserts = batch.changes[schema.table].upserts if schema.table in batch.changes else {}
        if not upserts:
            continue
        assert isinstance(upserts, ImageColumns), upserts
        load = upserts.load_text
        assert load is not None and load.rows == len(upserts), batch.end
        columns = upserts.columns
        assert columns is not None
        # The rows as the sink's Python path converts them (dialects.MySqlDialect._write_columns).
        arrays = [pa.array(c, type=target.field(n).type) for n, c in zip(upserts.names, columns, strict=True)]
        data = pa.Table.from_arrays(arrays, names=list(upserts.names))
        assert load.text == b"".join(tsv_chunks(schema, data)), batch.end
        loaded += load.rows
    assert loaded >= 150
