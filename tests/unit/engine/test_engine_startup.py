"""Start positions: GTID sets and timestamps turned into binlog positions, per server flavour."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from sparkcdc.api.source import StartupSpec
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.engine import startup
from sparkcdc.engine.startup import SearchContext, check_specific_file, gtid_flavor_problem, startup_offset
from sparkcdc.mysql.errors import SourceError
from sparkcdc.mysql.flavor import ServerFlavor, parse_version
from sparkcdc.mysql.gtid import (
    EventRow,
    GtidScan,
    MariaGtid,
    is_mysql_gtid_set,
    last_file_before,
    parse_gtid_list_info,
    parse_mariadb_gtid_set,
    pick_start_file,
)

pytestmark = pytest.mark.unit

MARIA = parse_version("10.11.6-MariaDB-0+deb12u1-log")
MYSQL = parse_version("8.0.36")
UUID = "3E11FA47-71CA-11E1-9E33-C80AA9429562"


def test_parse_mariadb_gtid_set() -> None:
    assert parse_mariadb_gtid_set("0-1-42") == {0: MariaGtid(0, 1, 42)}
    assert parse_mariadb_gtid_set(" 0-1-42, 1-2-7 ") == {0: MariaGtid(0, 1, 42), 1: MariaGtid(1, 2, 7)}
    for bad in ("", "0-1", "a-b-c", f"{UUID}:1-5"):
        with pytest.raises(SourceError):
            parse_mariadb_gtid_set(bad)
    with pytest.raises(SourceError, match="domain 0 twice"):
        parse_mariadb_gtid_set("0-1-4,0-2-5")


def test_mysql_gtid_sets() -> None:
    assert is_mysql_gtid_set(f"{UUID}:1-5")
    assert is_mysql_gtid_set(f"{UUID}:1-5:7:9-12,\n{UUID.lower()}:3")
    assert is_mysql_gtid_set(f"{UUID}:tag_1:1-5")  # MySQL 8.3 tagged GTIDs
    assert not is_mysql_gtid_set("0-1-42")
    assert not is_mysql_gtid_set(UUID)


@pytest.mark.parametrize(
    ("flavor", "gtid", "problem"),
    [
        (MARIA, "0-1-42", None),
        (MARIA, f"{UUID}:1-5", "is a MySQL GTID set"),
        (MARIA, "zzz", "not a MariaDB GTID position"),
        (MYSQL, f"{UUID}:1-5", None),
        (MYSQL, "0-1-42", "not a MySQL GTID set"),
        (parse_version("5.6.4"), f"{UUID}:1-5", "has no GTIDs"),
        (parse_version("5.7.44-log"), f"{UUID}:1-5", None),
        (parse_version("10.4.34-MariaDB"), "0-1-1", None),
    ],
)
def test_gtid_flavor_problem(flavor: ServerFlavor, gtid: str, problem: str | None) -> None:
    found = gtid_flavor_problem(gtid, flavor)
    assert (found is None) if problem is None else (found is not None and problem in found)


def test_gtid_list_and_start_file() -> None:
    assert parse_gtid_list_info("[]") == {}
    assert parse_gtid_list_info("[0-1-8,1-2-3]") == {0: 8, 1: 3}
    states = [{}, {0: 8}, {0: 20}, {0: 20, 1: 4}]
    wanted = parse_mariadb_gtid_set
    assert pick_start_file(states, wanted("0-1-5")) == 0
    assert pick_start_file(states, wanted("0-1-8")) == 1  # the file starts right after it
    assert pick_start_file(states, wanted("0-1-19")) == 1
    assert pick_start_file(states, wanted("0-1-25")) == 2  # domain 1 started later, not in the set
    assert pick_start_file(states, wanted("0-1-25,1-1-4")) == 3
    assert pick_start_file(states[1:], wanted("0-1-5")) is None  # purged


def _gtid(file: str, pos: int, gtid: str, end: int) -> EventRow:
    return EventRow(file, pos, "Gtid", end, f"BEGIN GTID {gtid}")


ROWS = [
    EventRow("b.000002", 4, "Format_desc", 256, "Server ver: 10.11"),
    EventRow("b.000002", 256, "Gtid_list", 299, "[0-1-8]"),
    _gtid("b.000002", 299, "0-1-9", 341),
    EventRow("b.000002", 341, "Write_rows_v1", 400, "table_id: 1"),
    EventRow("b.000002", 400, "Xid", 431, "COMMIT /* xid=1 */"),
    EventRow("b.000002", 431, "Gtid", 473, "GTID 0-1-10 cid=7"),
    EventRow("b.000002", 473, "Query", 560, "ALTER TABLE t ADD c INT"),
    _gtid("b.000002", 560, "0-1-11", 602),
    EventRow("b.000002", 602, "Xid", 633, "COMMIT"),
]


def test_gtid_scan_finds_the_first_transaction_outside_the_set() -> None:
    for gtid, expected in [("0-1-8", 299), ("0-1-9", 431), ("0-1-10", 560)]:
        scan = GtidScan(parse_mariadb_gtid_set(gtid), {0: 8})
        assert scan.feed(ROWS)
        assert scan.start == BinlogOffset("b.000002", expected)
    end = BinlogOffset("b.000002", 633)
    scan = GtidScan(parse_mariadb_gtid_set("0-1-11"), {0: 8})
    assert not scan.feed(ROWS)
    assert scan.finish(end, {0: 11}) == end  # everything is in the set: start at the end
    scan = GtidScan(parse_mariadb_gtid_set("0-1-30"), {0: 8})
    scan.feed(ROWS)
    with pytest.raises(SourceError, match="has not written yet"):
        scan.finish(end, {0: 11})


def test_gtid_scan_refuses_sets_that_are_not_a_binlog_prefix() -> None:
    rows = [_gtid("b.1", 4, "1-1-1", 50), _gtid("b.1", 50, "0-1-9", 90), _gtid("b.1", 90, "0-1-10", 130)]
    scan = GtidScan(parse_mariadb_gtid_set("0-1-10"), {0: 8})  # 1-1-1 comes before 0-1-9, not in the set
    with pytest.raises(SourceError, match="no single binlog position"):
        scan.feed(rows)
    scan = GtidScan(parse_mariadb_gtid_set("0-1-10,1-1-1"), {0: 8})
    assert not scan.feed(rows)
    assert scan.finish(BinlogOffset("b.1", 130), {0: 10, 1: 1}) == BinlogOffset("b.1", 130)


def test_timestamp_binary_search() -> None:
    starts = {"b.1": 100, "b.2": 200, "b.3": 300, "b.4": 300, "b.5": 400}
    files = list(starts)
    calls: list[str] = []

    def first(file: str) -> int | None:
        calls.append(file)
        return starts[file]

    assert last_file_before(files, first, 250) == 1
    assert len(calls) <= 3  # a binary search
    # A file begun in the very second searched for may follow events of that second.
    assert last_file_before(files, first, 300) == 1
    assert last_file_before(files, first, 301) == 3
    assert last_file_before(files, first, 50) == 0
    assert last_file_before(files, first, 10_000) == 4
    assert last_file_before(files, lambda f: None, 10_000) == 0


class _FakeConn:
    """Answers ``SHOW BINARY LOGS`` only."""

    def __init__(self, files: list[tuple[str, int]]) -> None:
        self.files = files

    def cursor(self, *_args: Any) -> Any:
        conn = self

        class _Cursor:
            description = (("Log_name",), ("File_size",))

            def __enter__(self) -> Any:
                return self

            def __exit__(self, *exc: object) -> None:
                return None

            def execute(self, sql: str, params: Any = None) -> None:
                assert sql == "SHOW BINARY LOGS"

            def fetchall(self) -> list[tuple[str, int]]:
                return conn.files

        return _Cursor()


NOW = BinlogOffset("b.000007", 900)
FILES = [("b.000005", 1000), ("b.000006", 2000), ("b.000007", 900)]


def test_file_based_modes() -> None:
    conn = _FakeConn(FILES)
    assert startup_offset(conn, StartupSpec(mode="latest"), NOW) == NOW
    assert startup_offset(conn, StartupSpec(mode="earliest"), NOW) == BinlogOffset("b.000005", 4)
    spec = StartupSpec(mode="specific-offset", file="b.000006", position=1500)
    assert startup_offset(conn, spec, NOW) == BinlogOffset("b.000006", 1500)
    with pytest.raises(SourceError, match="past the end"):
        startup_offset(conn, StartupSpec(mode="specific-offset", file="b.000006", position=2001), NOW)
    with pytest.raises(SourceError, match=r"was purged .* oldest binlog file is b\.000005"):
        startup_offset(conn, StartupSpec(mode="specific-offset", file="b.000002", position=4), NOW)
    with pytest.raises(SourceError, match="no binary logs"):
        startup_offset(_FakeConn([]), StartupSpec(mode="earliest"), NOW)
    check_specific_file(["b.000005"], "b.000005")
    with pytest.raises(SourceError, match="not on the source"):
        check_specific_file(["b.000005"], "b.000009")


def test_gtid_and_timestamp_modes_dispatch_by_flavor(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, Any]] = []
    monkeypatch.setattr(startup, "mariadb_gtid_offset", lambda c, g, n: calls.append(("maria", g)) or NOW)
    monkeypatch.setattr(
        startup, "mysql_gtid_offset", lambda s, i, g, n: calls.append(("mysql", (i, g))) or NOW
    )
    monkeypatch.setattr(
        startup, "timestamp_offset", lambda c, s, i, t, n: calls.append(("ts", (i, t))) or NOW
    )
    conn = _FakeConn(FILES)
    source: Any = object()
    maria, mysql = SearchContext(source, 7, MARIA), SearchContext(source, 8, MYSQL)
    startup_offset(conn, StartupSpec(mode="specific-offset", gtid_set="0-1-5"), NOW, maria)
    startup_offset(conn, StartupSpec(mode="specific-offset", gtid_set=f"{UUID}:1-9"), NOW, mysql)
    when = dt.datetime(2024, 5, 1, 12, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    startup_offset(conn, StartupSpec(mode="timestamp", timestamp=when), NOW, maria)
    assert calls == [("maria", "0-1-5"), ("mysql", (8, f"{UUID}:1-9")), ("ts", (7, when.timestamp()))]
    with pytest.raises(SourceError, match="MySQL GTID set"):
        startup_offset(conn, StartupSpec(mode="specific-offset", gtid_set=f"{UUID}:1-9"), NOW, maria)
    with pytest.raises(SourceError, match="needs a binlog search context"):
        startup_offset(conn, StartupSpec(mode="timestamp", timestamp=when), NOW)
