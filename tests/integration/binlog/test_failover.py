"""Source failover on real MariaDB GTID replication, through ``sparkcdc run``.

* A pipeline streaming from a primary under a writer follows the promoted replica by GTID,
  whether the manifest is edited to the replica's port or the replica takes over the primary's
  address: the sink ends equal to the new primary (nothing lost, nothing doubled).
* A replica that lagged behind the checkpoint is refused with both servers named, and nothing is
  written after the refusal; ``onSourceChange: resnapshot`` starts over on it instead.
* A source restored from an older backup behind the same address is refused, also once it has
  written past the checkpoint's GTID sequence numbers.
* A failover in the middle of a snapshot resumes the snapshot on the new primary.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from failover_support import FailoverCase, Writer, create_source

from harness.mariadb import start_server
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.testing.mariadb import MariaDBServer
from sparkcdc.testing.replication import ReplicationPair, caught_up, promote, stop_replication


@pytest.fixture
def pair(mariadb: MariaDBServer, tmp_path: Path) -> Iterator[ReplicationPair]:
    assert mariadb.cdc_password
    created = ReplicationPair(tmp_path / "servers", mariadb.cdc_password, time_zone=mariadb.time_zone)
    try:
        yield created
    finally:
        created.cleanup()


def _case(mariadb: MariaDBServer, db: str, tmp_path: Path) -> FailoverCase:
    return FailoverCase(mariadb, db, tmp_path / "work")


def _position(server: MariaDBServer) -> BinlogOffset:
    file, pos = server.binlog_position()
    return BinlogOffset(file, pos)


def _fail_over(pair: ReplicationPair, writer: Writer, *, same_address: bool) -> MariaDBServer:
    """Stop the writer, let the replica catch up, kill the primary, promote the replica (on the
    primary's port when ``same_address``) and point the writer at it."""
    primary, replica = pair.primary, pair.second
    writer.stop()
    caught_up(replica, primary)
    old_port = primary.port
    primary.kill()
    if same_address:
        replica.restart(port=old_port)
    promote(replica)
    writer.switch_to(replica)
    return replica


@pytest.mark.parametrize("same_address", [False, True], ids=["manifest-edit", "same-address"])
def test_follows_the_promoted_replica_by_gtid(
    mariadb: MariaDBServer, pair: ReplicationPair, tmp_path: Path, same_address: bool
) -> None:
    db = create_source(pair.primary, 300)
    case = _case(mariadb, db, tmp_path)
    writer = Writer(pair.primary, db)
    try:
        run = case.start(case.manifest(pair.primary))
        with run:
            writer.start()
            assert run.wait_for(lambda: (cp := case.checkpoint()) is not None and cp.snapshot_done, 180)
            target = _position(pair.primary)
            assert run.wait_for(
                lambda: (
                    (cp := case.checkpoint()) is not None
                    and cp.binlog_offset is not None
                    and cp.binlog_offset >= target
                ),
                120,
            ), run.result().describe()
            new_primary = _fail_over(pair, writer, same_address=same_address)
            run.kill()  # the driver is replaced, as the operator does on a spec change
        before = case.checkpoint()
        assert before is not None and before.source is not None and before.source.server_id == 1
        writer.start()
        writer.write(50)
        writer.stop()
        result = case.run_ok(case.manifest(new_primary, "promoted.yaml"))
        assert "resuming by GTID position" in result.stdout + result.stderr, result.describe()
        case.assert_sink_equals(new_primary)
        after = case.checkpoint()
        assert after is not None and after.source is not None and after.source.server_id == 2
        assert after.binlog_offset is not None and after.binlog_offset.gtid_set
        writer.write(40)  # and it goes on streaming from the new primary as its own source
        case.run_ok(case.manifest(new_primary, "promoted.yaml"))
        case.assert_sink_equals(new_primary)
    finally:
        writer.stop()
        case.cleanup()


def test_a_lagging_replica_is_refused(mariadb: MariaDBServer, pair: ReplicationPair, tmp_path: Path) -> None:
    primary, replica = pair.primary, pair.second
    db = create_source(primary, 200)
    case = _case(mariadb, db, tmp_path)
    writer = Writer(primary, db)
    try:
        caught_up(replica, primary)
        stop_replication(replica)
        writer.write(60)  # the pipeline reads these; the replica never gets them
        case.run_ok(case.manifest(primary))
        primary.kill()
        promote(replica)
        writer.switch_to(replica)
        writer.write(30)
        sink_before = sorted(case.sink_rows())
        refused = case.run(case.manifest(replica, "lagging.yaml"))
        assert refused.returncode != 0, refused.describe()
        text = refused.stdout + refused.stderr
        assert "server_id 1" in text and "server_id 2" in text, refused.describe()
        assert "lacks transactions" in text and "onSourceChange: resnapshot" in text, refused.describe()
        assert sorted(case.sink_rows()) == sink_before  # nothing written after the refusal
        case.run_ok(case.manifest(replica, "resnapshot.yaml", onSourceChange="resnapshot"))
        case.assert_sink_equals(replica)
    finally:
        case.cleanup()


def test_a_source_restored_from_an_older_backup_is_refused(mariadb: MariaDBServer, tmp_path: Path) -> None:
    assert mariadb.cdc_password
    server = start_server(tmp_path / "source", time_zone=mariadb.time_zone)
    server.create_cdc_user(password=mariadb.cdc_password)
    db = create_source(server, 200)
    case = _case(mariadb, db, tmp_path)
    backup = tmp_path / "backup"
    try:
        server.stop()
        shutil.copytree(server.data_dir, backup)
        server.start()
        writer = Writer(server, db)
        writer.write(40)
        case.run_ok(case.manifest(server))
        server.stop()
        shutil.rmtree(server.data_dir)
        shutil.copytree(backup, server.data_dir)  # restored behind the same address
        server.start()
        sink_before = sorted(case.sink_rows())
        refused = case.run(case.manifest(server))
        assert refused.returncode != 0, refused.describe()
        assert "older backup" in refused.stdout + refused.stderr, refused.describe()
        for i in range(80):  # other transactions under the same GTIDs, past the checkpoint's
            server.execute(f"INSERT INTO `{db}`.items VALUES ({30_000 + i}, {i}, 'after restore')")
        refused = case.run(case.manifest(server))
        assert refused.returncode != 0 and "older backup" in refused.stdout + refused.stderr, (
            refused.describe()
        )
        assert sorted(case.sink_rows()) == sink_before
    finally:
        case.cleanup()
        server.cleanup()


def test_failover_in_the_middle_of_a_snapshot(
    mariadb: MariaDBServer, pair: ReplicationPair, tmp_path: Path
) -> None:
    db = create_source(pair.primary, 3000)
    case = _case(mariadb, db, tmp_path)
    writer = Writer(pair.primary, db, first_id=5000)
    try:
        run = case.start(case.manifest(pair.primary))
        with run:
            writer.start()

            def some_splits_done() -> bool:
                cp = case.checkpoint()
                return cp is not None and len(cp.all_finished_infos()) >= 3 and not cp.snapshot_done

            assert run.wait_for(some_splits_done, 180), run.result().describe()
            run.kill()
        mid = case.checkpoint()
        assert mid is not None and not mid.snapshot_done
        new_primary = _fail_over(pair, writer, same_address=False)
        writer.write(60)
        result = case.run_ok(case.manifest(new_primary, "promoted.yaml"))
        assert "resuming by GTID position" in result.stdout + result.stderr, result.describe()
        case.assert_sink_equals(new_primary)
    finally:
        writer.stop()
        case.cleanup()
