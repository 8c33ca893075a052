"""Listing a backlog's transaction boundaries (mysql/binlog/ranges.py) on a real server: in pages,
across a binlog rotation, and only up to the first DDL (where a catch-up stretch ends)."""

from __future__ import annotations

import pytest

from harness.mariadb import binlog_offset
from sparkcdc.mysql.binlog import ranges as binlog_ranges
from sparkcdc.mysql.binlog.ranges import list_boundaries
from sparkcdc.mysql.connection import SourceConfig, connect
from sparkcdc.testing.mariadb import MariaDBServer

pytestmark = pytest.mark.integration


def test_commits_in_pages_across_a_rotation_up_to_the_first_ddl(
    mariadb: MariaDBServer, source_config: SourceConfig, fresh_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    mariadb.execute(f"CREATE TABLE `{fresh_db}`.t (id INT PRIMARY KEY, v INT)")
    start = binlog_offset(mariadb)
    commits = []
    for i in range(12):
        mariadb.execute(f"INSERT INTO `{fresh_db}`.t VALUES ({i}, {i})")
        commits.append(binlog_offset(mariadb))
        if i == 5:
            mariadb.execute("FLUSH BINARY LOGS")
    mariadb.execute(f"ALTER TABLE `{fresh_db}`.t ADD COLUMN w INT")
    ddl = binlog_offset(mariadb)
    for i in range(12, 15):
        mariadb.execute(f"INSERT INTO `{fresh_db}`.t VALUES ({i}, {i}, {i})")
    end = binlog_offset(mariadb)
    # Pages of 7 events: several pages per file, one transaction split across two of them.
    monkeypatch.setattr(binlog_ranges, "_PAGE_EVENTS", 7)
    conn = connect(source_config)
    try:
        found = list_boundaries(conn, start, end)
        up_to_commit = list_boundaries(conn, start, commits[8])
    finally:
        conn.close()
    assert [b.offset for b in found if not b.ddl] == commits
    assert found[-1].ddl and found[-1].offset == ddl  # nothing listed past the first DDL
    assert [b.offset for b in up_to_commit] == commits[:9]
