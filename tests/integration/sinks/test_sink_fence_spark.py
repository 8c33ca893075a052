"""A superseded driver's snapshot split, written by a real Spark task into real MariaDB, is refused
by the sink's fence; the driver recognises the job failure as fenced (``fenced_message``), which is
how ``sparkcdc driver`` exits with the fenced code instead of a plain failure."""

from __future__ import annotations

from typing import Any

import pytest

from sparkcdc.core.fence import Fence
from sparkcdc.core.splits import SnapshotSplit
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.connection import SourceConfig, connect
from sparkcdc.mysql.schema import load_table_schema
from sparkcdc.sinks.base import start_fenced
from sparkcdc.sinks.jdbc import JdbcSinkConfig
from sparkcdc.sinks.jdbc.fence import fenced_message
from sparkcdc.spark.snapshot import WaveContext, plan_tasks, run_wave
from sparkcdc.testing.mariadb import MariaDBServer

SERVER_ID = 4_242_001


def test_a_superseded_drivers_spark_task_is_refused(
    spark: Any, mariadb: MariaDBServer, source_config: SourceConfig, fresh_db: str
) -> None:
    mariadb.execute(f"CREATE TABLE `{fresh_db}`.items (id BIGINT PRIMARY KEY, v VARCHAR(20))")
    mariadb.execute(f"INSERT INTO `{fresh_db}`.items VALUES (1, 'a'), (2, 'b')")
    conn = connect(source_config)
    try:
        schema = load_table_schema(conn, TableId(fresh_db, "items"))
    finally:
        conn.close()
    replica = f"{fresh_db}_replica"
    plain = JdbcSinkConfig(
        "mysql", mariadb.host, mariadb.port, replica, source_config.user, source_config.password
    )
    try:
        old = start_fenced(plain, Fence("ns/items", "uid-a", 1))
        sink = old.open()
        sink.prepare([schema])
        sink.close()
        start_fenced(plain, Fence("ns/items", "uid-a", 2))  # the next driver starts

        context = WaveContext(source_config, old, {schema.table: schema}, 1000)
        tasks = plan_tasks([SnapshotSplit(schema.table, 0, None, None)], [SERVER_ID], 1)
        with pytest.raises(Exception) as failed:  # a Spark job failure, whatever its class
            run_wave(spark, context, tasks)
        message = fenced_message(failed.value)
        assert message is not None, str(failed.value)[-2000:]
        assert "ns/items is now driven by epoch 2; this driver (epoch 1) stops without writing" in message
        assert mariadb.execute(f"SELECT COUNT(*) FROM `{replica}`.items") == [(0,)]
    finally:
        mariadb.execute(f"DROP DATABASE IF EXISTS `{replica}`")
