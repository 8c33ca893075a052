"""Source settings and schemas travel to Spark tasks, and splits read there (real local Spark)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sparkcdc.core.splits import SnapshotSplit
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.connection import SourceConfig, connect
from sparkcdc.mysql.schema import load_table_schema
from sparkcdc.mysql.split_reader import read_split
from sparkcdc.testing.mariadb import MariaDBServer


def test_read_splits_in_spark_tasks(
    mariadb: MariaDBServer, source_config: SourceConfig, fresh_db: str, spark: Any
) -> None:
    mariadb.execute(
        f"CREATE TABLE `{fresh_db}`.o (id BIGINT UNSIGNED PRIMARY KEY, amount DECIMAL(20,4), at TIMESTAMP(3))"
    )
    mariadb.execute(
        f"INSERT INTO `{fresh_db}`.o SELECT seq, seq / 3, '2024-01-01 10:00:00' "
        f"FROM `{fresh_db}`.seq_1_to_1000"
    )
    conn = connect(source_config)
    try:
        schema = load_table_schema(conn, TableId(fresh_db, "o"))
    finally:
        conn.close()
    splits = [
        SnapshotSplit(schema.table, 0, None, (400,)),
        SnapshotSplit(schema.table, 1, (400,), None),
    ]

    def task(items: Iterator[tuple[int, SnapshotSplit]]) -> Iterator[tuple[int, int, str, str]]:
        for server_id, split in items:
            result = read_split(source_config, schema, split, server_id, fetch_size=128)
            ids = result.data.column("id").to_pylist()
            yield split.index, result.rows_read, str(min(ids)), str(result.data.column("at")[0].as_py())

    out = sorted(
        spark.sparkContext.parallelize(list(zip([6001, 6002], splits, strict=True)), 2)
        .mapPartitions(task)
        .collect()
    )
    assert out == [(0, 399, "1", "2024-01-01 04:30:00+00:00"), (1, 601, "400", "2024-01-01 04:30:00+00:00")]
