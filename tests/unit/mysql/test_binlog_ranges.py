"""Commit and DDL boundaries from ``SHOW BINLOG EVENTS`` rows (mysql/binlog/ranges.py)."""

from __future__ import annotations

import pytest

from sparkcdc.core.catchup import Boundary
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.mysql.binlog.ranges import boundary_of

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("event_type", "info", "expected"),
    [
        ("Xid", "COMMIT /* xid=12 */", "commit"),
        ("Query", "COMMIT", "commit"),
        ("Query", "XA COMMIT X'01'", "commit"),
        ("Query", "BEGIN", None),
        ("Query", "ALTER TABLE t ADD c INT", "ddl"),
        ("Query", "  create table x (id int)", "ddl"),
        ("Table_map", "table_id: 5 (db.t)", None),
        ("Write_rows_v1", "table_id: 5 flags: STMT_END_F", None),
        ("Gtid", "BEGIN GTID 0-1-5", None),
    ],
)
def test_boundary_of_show_binlog_events_rows(event_type: str, info: str, expected: str | None) -> None:
    found = boundary_of("bin.000001", event_type, 400, info)
    if expected is None:
        assert found is None
    else:
        assert found == Boundary(BinlogOffset("bin.000001", 400), ddl=expected == "ddl")
