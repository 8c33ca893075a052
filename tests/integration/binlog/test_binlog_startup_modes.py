"""Every startup mode on MariaDB, end to end through ``sparkcdc run --exit-when-caught-up``.

One manifest holds a pipeline per mode over the same table, each into its own replica. The
source is written in three phases: A (before the chosen start point), B (after it, before the
first run) and C (between the first and the second run). The start point is given as a file
and position, as a MariaDB GTID position and as a timestamp (with binlog files rotated around
it, so the binary search over ``SHOW BINARY LOGS`` has files on both sides). After each run
every replica must hold exactly the rows its mode implies:

* initial / earliest: the whole table; snapshot-only: the table as of the first run;
* specific-offset (file, GTID) and timestamp: the rows changed after the start point (updates
  and inserts arrive as full images, deletes of rows never seen are no-ops);
* latest: only rows changed after the first run started.

The position searches are also called directly for their edge cases (before the oldest file,
in the future, unknown GTIDs, purged or missing files).
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from binlog_support import Case, assert_same_rows, new_case

from harness.mariadb import source_config
from sparkcdc.api.source import StartupSpec
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.engine.startup import SearchContext, startup_offset
from sparkcdc.mysql.connection import connect
from sparkcdc.mysql.errors import SourceError
from sparkcdc.mysql.flavor import detect_flavor
from sparkcdc.mysql.queries import current_offset
from sparkcdc.testing.mariadb import MariaDBServer

MODES = ["initial", "snapshot_only", "latest", "earliest", "offset_file", "offset_gtid", "timestamp"]


@pytest.fixture(scope="module")
def module_case(own_server: MariaDBServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Case]:
    created = new_case(own_server, tmp_path_factory.mktemp("startup"))
    try:
        yield created
    finally:
        created.cleanup()


def _ids(case: Case, where: str = "") -> set[int]:
    return {int(r[0]) for r in case.execute(f"SELECT id FROM `{case.db}`.t {where}")}


def _wait_past(second: int) -> None:
    while time.time() < second + 0.05:
        time.sleep(0.05)


def test_every_startup_mode(module_case: Case) -> None:
    case = module_case
    db = case.db
    case.execute(f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY, v VARCHAR(20), n INT)")
    case.execute(f"CREATE TABLE `{db}`.other (id INT PRIMARY KEY)")
    case.execute(f"INSERT INTO `{db}`.t VALUES (1,'a1',1),(2,'a2',2),(3,'a3',3),(4,'a4',4),(5,'a5',5)")
    start_pos = case.position()
    start_gtid = str(case.execute("SELECT @@GLOBAL.gtid_binlog_pos")[0][0])
    # Rotations around the start time: files starting before it and one starting after it.
    case.execute("FLUSH BINARY LOGS")
    _wait_past(int(time.time()))
    case.execute("FLUSH BINARY LOGS")
    case.execute(f"INSERT INTO `{db}`.other VALUES (1)")  # an event before the time, in the same file
    start_time = int(time.time()) + 1
    _wait_past(start_time)
    # B: after the start point.
    case.execute(f"INSERT INTO `{db}`.t VALUES (6,'b6',6),(7,'b7',7),(8,'b8',8),(9,'b9',9),(10,'b10',10)")
    case.execute(f"UPDATE `{db}`.t SET v = 'b2' WHERE id = 2")
    case.execute(f"DELETE FROM `{db}`.t WHERE id = 3")
    case.execute("FLUSH BINARY LOGS")
    touched_after_start = {2, 3, 6, 7, 8, 9, 10}

    stamp = dt.datetime.fromtimestamp(start_time, dt.timezone(dt.timedelta(hours=2))).isoformat()
    startups = {
        "initial": {"mode": "initial"},
        "snapshot_only": {"mode": "snapshot-only"},
        "latest": {"mode": "latest"},
        "earliest": {"mode": "earliest"},
        "offset_file": {"mode": "specific-offset", "file": start_pos.file, "position": start_pos.pos},
        "offset_gtid": {"mode": "specific-offset", "gtidSet": start_gtid},
        "timestamp": {"mode": "timestamp", "timestamp": stamp},
    }
    pipelines = [case.pipeline(name.replace("_", "-"), ["t"], startup=startups[name]) for name in MODES]
    manifest = case.manifest("modes.yaml", *pipelines)

    first = case.run_ok(manifest)
    snapshot_rows = case.rows(db, "t")
    expected_first = {
        "initial": _ids(case),
        "snapshot_only": _ids(case),
        "latest": set(),
        "earliest": _ids(case),
        "offset_file": touched_after_start,
        "offset_gtid": touched_after_start,
        "timestamp": touched_after_start,
    }
    _check(case, expected_first, first.stderr)

    # C: between the runs.
    case.execute(f"INSERT INTO `{db}`.t VALUES (11,'c11',11),(12,'c12',12),(13,'c13',13)")
    case.execute(f"UPDATE `{db}`.t SET id = 70, v = 'c70' WHERE id = 7")
    case.execute(f"DELETE FROM `{db}`.t WHERE id = 8")
    case.execute(f"UPDATE `{db}`.t SET n = 44 WHERE id = 4")
    touched_later = {4, 7, 8, 11, 12, 13, 70}
    second = case.run_ok(manifest)
    expected_second = {
        "initial": _ids(case),
        "snapshot_only": None,
        "latest": touched_later,
        "earliest": _ids(case),
        "offset_file": touched_after_start | touched_later,
        "offset_gtid": touched_after_start | touched_later,
        "timestamp": touched_after_start | touched_later,
    }
    _check(case, expected_second, second.stderr)
    assert_same_rows(snapshot_rows, case.rows(case.sink_db("snapshot_only"), "t"), "snapshot-only")


def _check(case: Case, expected: dict[str, set[int] | None], log: str) -> None:
    for mode, ids in expected.items():
        if ids is None:
            continue
        where = f"WHERE id IN ({', '.join(map(str, sorted(ids)))})" if ids else "WHERE FALSE"
        try:
            case.assert_replica(mode, "t", where)
        except AssertionError as err:
            raise AssertionError(f"mode {mode}: {err}\n{log[-3000:]}") from None


def _search(server: MariaDBServer, startup: StartupSpec) -> BinlogOffset:
    conn = connect(source_config(server))
    try:
        flavor = detect_flavor(conn)
        now = current_offset(conn, flavor)
        return startup_offset(conn, startup, now, SearchContext(source_config(server), 4299, flavor))
    finally:
        conn.close()


def test_position_search_edges(own_server: MariaDBServer, tmp_path: Path) -> None:
    case = new_case(own_server, tmp_path)
    try:
        case.execute(f"CREATE TABLE `{case.db}`.e (id INT PRIMARY KEY)")
        case.execute(f"INSERT INTO `{case.db}`.e VALUES (1)")
        files = [str(r[0]) for r in case.execute("SHOW BINARY LOGS")]
        now = case.position()
        long_ago = StartupSpec(mode="timestamp", timestamp=dt.datetime(2001, 1, 1, tzinfo=dt.timezone.utc))
        assert _search(own_server, long_ago) == BinlogOffset(files[0], 4)
        future = dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=1)
        assert _search(own_server, StartupSpec(mode="timestamp", timestamp=future)).same_position(now)
        assert _search(own_server, StartupSpec(mode="earliest")) == BinlogOffset(files[0], 4)

        gtid = str(case.execute("SELECT @@GLOBAL.gtid_binlog_pos")[0][0])
        assert _search(own_server, StartupSpec(mode="specific-offset", gtid_set=gtid)).same_position(now)
        domain, server_id, seq = gtid.split(",")[0].split("-")
        ahead = f"{domain}-{server_id}-{int(seq) + 100}"
        with pytest.raises(SourceError, match="has not written yet"):
            _search(own_server, StartupSpec(mode="specific-offset", gtid_set=ahead))
        with pytest.raises(SourceError, match="MySQL GTID set"):
            mysql_set = "3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5"
            _search(own_server, StartupSpec(mode="specific-offset", gtid_set=mysql_set))
        with pytest.raises(SourceError, match="not on the source"):
            _search(own_server, StartupSpec(mode="specific-offset", file="binlog.999999", position=4))
        with pytest.raises(SourceError, match="past the end"):
            _search(own_server, StartupSpec(mode="specific-offset", file=files[-1], position=10**9))

        # Purge: a file before the oldest is reported as purged, naming the oldest.
        case.execute("FLUSH BINARY LOGS")
        newest = str(case.execute("SHOW BINARY LOGS")[-1][0])
        case.execute(f"PURGE BINARY LOGS TO '{newest}'")
        oldest = str(case.execute("SHOW BINARY LOGS")[0][0])
        assert oldest != files[0]
        purged = StartupSpec(mode="specific-offset", file=files[0], position=4)
        with pytest.raises(SourceError, match=f"{files[0]} was purged .* oldest binlog file is {oldest}"):
            _search(own_server, purged)
        old_gtid = StartupSpec(mode="specific-offset", gtid_set=f"{domain}-{server_id}-1")
        with pytest.raises(SourceError, match="purged"):
            _search(own_server, old_gtid)
    finally:
        case.cleanup()
