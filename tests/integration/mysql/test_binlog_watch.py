"""A running live stream starts decoding a table it is told to watch (mysql/binlog/reader.py
``watch``, called by ``StreamingChangeReader.set_schema``).

python-mysql-replication filters row events by the ``only_tables``/``only_schemas`` lists given
at construction, and reads those very lists for every event; the reader extends them in place
so that a table joining a streaming pipeline is decoded without reopening the stream. This test
fails if a new release of the library copies the lists (the table's rows would never come).
"""

from __future__ import annotations

import threading
from typing import Any

from harness.mariadb import binlog_offset
from sparkcdc.core.events import ChangeEvent
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.binlog.stream import StreamingChangeReader
from sparkcdc.mysql.connection import SourceConfig
from sparkcdc.mysql.schema import load_table_schema
from sparkcdc.testing.mariadb import MariaDBServer


def test_a_table_watched_while_streaming_is_decoded_from_then_on(
    mariadb: MariaDBServer, source_config: SourceConfig, fresh_db: str, conn: Any
) -> None:
    a, other = TableId(fresh_db, "a"), TableId(f"{fresh_db}_w", "b")
    mariadb.execute(f"CREATE TABLE `{fresh_db}`.a (id INT PRIMARY KEY)")
    mariadb.execute(f"CREATE DATABASE `{other.database}`")
    try:
        mariadb.execute(f"CREATE TABLE `{other.database}`.b (id INT PRIMARY KEY)")
        reader = StreamingChangeReader(
            source_config, 4301, {a: load_table_schema(conn, a)}, heartbeat_seconds=1.0
        )
        seen: list[ChangeEvent] = []
        start = binlog_offset(mariadb)
        passed = threading.Event()

        def consume() -> None:
            for item in reader.stream(start):
                if isinstance(item, ChangeEvent):
                    seen.append(item)
                    if item.table == a:
                        passed.set()  # the reader is past b's first row, which came before
                    if item.table == other:
                        return

        thread = threading.Thread(target=consume, daemon=True)
        thread.start()
        mariadb.execute(f"INSERT INTO `{other.database}`.b VALUES (1)")  # not watched: skipped
        mariadb.execute(f"INSERT INTO `{fresh_db}`.a VALUES (1)")
        assert passed.wait(30), seen
        reader.set_schema(other, load_table_schema(conn, other))  # another database, too
        mariadb.execute(f"INSERT INTO `{other.database}`.b VALUES (7)")
        thread.join(30)
        reader.request_stop()
        assert not thread.is_alive(), "b's row never came: does mysql-replication copy only_tables now?"
        assert [(str(e.table), e.image["id"]) for e in seen] == [(str(a), 1), (str(other), 7)]
    finally:
        mariadb.execute(f"DROP DATABASE IF EXISTS `{other.database}`")
