"""The MySQL dialect writes rows column-wise (arrow_sql) from Arrow tables and from Python rows;
both must store exactly what PyMySQL's executemany stores, which is the source's own values,
for every type family the JDBC sink can write."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from harness.type_table import DDL, ROWS, insert_rows, random_rows
from sparkcdc.core.image_columns import ImageColumns
from sparkcdc.core.splits import SnapshotSplit
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.chunk_reader import read_chunk
from sparkcdc.mysql.connection import SourceConfig, connect
from sparkcdc.mysql.schema import load_table_schema
from sparkcdc.sinks.jdbc import JdbcSinkConfig
from sparkcdc.sinks.jdbc.bulk_load import BulkLoader
from sparkcdc.sinks.jdbc.dialects import MySqlDialect
from sparkcdc.testing.mariadb import MariaDBServer


def test_column_wise_inserts_store_what_executemany_stores(
    mariadb: MariaDBServer, source_config: SourceConfig, fresh_db: str
) -> None:
    source = f"`{fresh_db}`.`types`"
    mariadb.execute(DDL.format(t=source))
    # GEOMETRY included: canonical values are MySQL's format (SRID then WKB), which the column stores.
    insert_rows(mariadb, source, ROWS + random_rows(300))
    conn = connect(source_config, streaming=True)
    try:
        schema = load_table_schema(conn, TableId(fresh_db, "types"))
        data = read_chunk(conn, schema, SnapshotSplit(schema.table, 0, None, None))
    finally:
        conn.close()
    rows = list(zip(*[c.to_pylist() for c in data.columns], strict=True))
    names = data.column_names

    replica = f"{fresh_db}_replica"
    dialect = MySqlDialect(batch_rows=37)
    sink = dialect.connect(
        JdbcSinkConfig(
            "mysql", mariadb.host, mariadb.port, replica, source_config.user, source_config.password
        )
    )
    # LOAD DATA (bulk_load.py) must store every family as the INSERTs do without falling back
    # to them; the ENUM '' of row 3 (the error value) is a warning there, which sends the whole
    # split to the INSERTs: both ways are compared, the first with that one value NULL.
    loader = BulkLoader(dialect.quote, "the test replica")
    inserted: list[str] = []
    enum = names.index("e")
    row_3 = pc.equal(data.column("id"), 3)
    clean = data.set_column(enum, "e", pc.if_else(row_3, pa.scalar(None, pa.string()), data.column(enum)))

    def bulk(table: pa.Table, suffix: str) -> Any:
        def write(cur: Any, sch: Any) -> None:
            def insert() -> None:
                inserted.append(suffix)
                dialect.write_table(cur, sch, table)

            loader.write(cur, sch, table, insert)

        return write

    columns = [c.to_pylist() for c in data.columns]
    image_columns = ImageColumns(names, columns, [names.index(k) for k in schema.row_key])
    writes = {
        "executemany": lambda cur, sch: dialect._executemany(cur, sch, names, rows),
        "rows": lambda cur, sch: dialect.write_rows(cur, sch, names, rows),
        "table": lambda cur, sch: dialect.write_table(cur, sch, data),
        # The Go decoder's batches: images kept column by column (core/image_columns.py).
        "upsert_columns": lambda cur, sch: dialect.upsert_rows(cur, sch, image_columns),
        "bulk": bulk(clean, "bulk"),
        "bulk_fallback": bulk(data, "bulk_fallback"),
    }
    with sink.cursor() as cur:
        # The source row with ENUM '' (the error value) only inserts without strict mode.
        cur.execute("SET SESSION sql_mode = ''")
    try:
        for suffix, write in writes.items():
            target = replace(schema, table=TableId(replica, f"types_{suffix}"))
            with sink.cursor() as cur:
                cur.execute(dialect.create_table_sql(target))
                dialect.begin(cur)
                write(cur, target)
            sink.commit()
    finally:
        sink.close()

    source_rows = mariadb.execute(f"SELECT * FROM {source} ORDER BY id")
    stored = {s: mariadb.execute(f"SELECT * FROM `{replica}`.`types_{s}` ORDER BY id") for s in writes}
    assert len(stored["executemany"]) == len(ROWS) + 300
    assert stored["rows"] == stored["executemany"]
    assert stored["table"] == stored["executemany"]
    assert stored["upsert_columns"] == stored["executemany"]
    assert image_columns.columns is columns  # written as columns, never as rows
    assert inserted == ["bulk_fallback"]  # the clean table loaded by LOAD DATA alone
    assert stored["bulk_fallback"] == stored["executemany"]
    expected = [(*r[:enum], None, *r[enum + 1 :]) if r[0] == 3 else r for r in stored["executemany"]]
    assert stored["bulk"] == expected
    # And that is the source, but for the zero dates that are canonically NULL (row 3).
    assert [r for r in stored["executemany"] if r[0] != 3] == [r for r in source_rows if r[0] != 3]
    mariadb.execute(f"DROP DATABASE `{replica}`")
