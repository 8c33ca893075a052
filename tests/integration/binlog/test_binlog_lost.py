"""Binlog lost, on a server of its own whose binlog expires after a second.

1. The first run warns that its snapshot will outlast the binlog's expiry (``ExpiryWatch``).
2. The binlog file the checkpoint points at is purged, and a table that a pattern captures
   appears meanwhile. With ``onBinlogLost: fail`` (the default) the next run stops before reading
   anything, naming the missing file and the oldest one there is.
3. With ``onBinlogLost: resnapshot`` the table whose position was lost is snapshotted again, the
   new one for the first time; streaming resumes and both replicas equal the source.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest
from binlog_support import Case, new_case

from harness.mariadb import source_config
from harness.waiting import wait_until
from sparkcdc.api.status import BinlogRetention
from sparkcdc.core.binlog_retention import judge, report_of
from sparkcdc.core.checkpoint import Checkpoint
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.driver.retention import RetentionTracker, RetentionWatch, look_at_source
from sparkcdc.testing.mariadb import MariaDBServer


@pytest.fixture
def lost_case(own_server: MariaDBServer, tmp_path: Path) -> Iterator[Case]:
    created = new_case(own_server, tmp_path)
    try:
        yield created
    finally:
        own_server.execute("SET GLOBAL binlog_expire_logs_seconds = 0")
        created.cleanup()


def _purge_through(case: Case, file: str) -> str:
    """Rotate and purge until ``file`` is gone (the server keeps a file until its binlog
    checkpoint moved past it); returns the oldest file left."""

    def binlogs() -> list[str]:
        return [str(r[0]) for r in case.execute("SHOW BINARY LOGS")]

    def purged() -> str | None:
        case.execute("FLUSH BINARY LOGS")  # expired files go now, too
        case.execute(f"PURGE BINARY LOGS TO '{binlogs()[-1]}'")
        files = binlogs()
        return files[0] if file not in files else None

    return wait_until(
        purged, timeout=30, interval=0.3, message=lambda: f"{file} to be purged (still there: {binlogs()})"
    )


def _purge_before(case: Case, file: str) -> None:
    """Purge every file older than ``file``, waiting as :func:`_purge_through` does for the
    server's binlog checkpoint to leave them."""

    def oldest_is_file() -> bool:
        case.execute(f"PURGE BINARY LOGS TO '{file}'")
        return str(case.execute("SHOW BINARY LOGS")[0][0]) == file

    wait_until(oldest_is_file, timeout=30, interval=0.3, message=f"the files before {file} to be purged")


@pytest.mark.usefixtures("waves_on_spark")  # the snapshot must last for the expiry warning
def test_binlog_lost(lost_case: Case) -> None:
    case = lost_case
    db = case.db
    case.execute(f"CREATE TABLE `{db}`.t1 (id INT PRIMARY KEY, v VARCHAR(20))")
    case.execute(f"INSERT INTO `{db}`.t1 SELECT seq, CONCAT('v', seq) FROM `{db}`.seq_1_to_300")
    case.execute("SET GLOBAL binlog_expire_logs_seconds = 1")
    tables = [f"re:{db}\\.t[0-9]+"]
    snapshot = {"chunkSize": 100, "parallelism": 1}

    def manifest(policy: str) -> Path:
        startup = {"mode": "initial", "onBinlogLost": policy}
        return case.manifest(
            f"lost-{policy}.yaml", case.pipeline("lost", tables, startup=startup, snapshot=snapshot)
        )

    first = case.run_ok(manifest("fail"))
    assert "longer than the source keeps its binlog (1 s)" in first.stderr, first.describe()
    checkpoint = case.checkpoint("lost")
    assert checkpoint is not None and checkpoint.binlog_offset is not None
    lost_file = checkpoint.binlog_offset.file

    case.execute(f"UPDATE `{db}`.t1 SET v = 'changed' WHERE id <= 10")
    case.execute(f"DELETE FROM `{db}`.t1 WHERE id > 290")
    case.execute(f"CREATE TABLE `{db}`.t2 (id INT PRIMARY KEY, v VARCHAR(20))")
    case.execute(f"INSERT INTO `{db}`.t2 SELECT seq, 'w' FROM `{db}`.seq_1_to_50")
    oldest = _purge_through(case, lost_file)

    failed = case.run(manifest("fail"))
    assert failed.returncode != 0
    message = " ".join(failed.stderr.split())
    assert f"binlog file {lost_file} was purged from the source" in message, failed.describe()
    assert f"the oldest binlog file available is {oldest}" in message
    assert "onBinlogLost: resnapshot" in message

    case.execute(f"INSERT INTO `{db}`.t2 VALUES (51, 'after')")
    refused = case.checkpoint("lost")
    assert refused is not None and all(t.table != "t2" for t in refused.tables), "read before the refusal"
    resumed = case.run_ok(manifest("resnapshot"))
    text = " ".join(resumed.stderr.split())
    # t2 has no position yet: it is snapshotted with t1.
    assert f"snapshotting {db}.t1, {db}.t2 again (onBinlogLost: resnapshot)" in text, resumed.describe()
    after = case.checkpoint("lost")
    assert after is not None and {t.table for t in after.tables} == {"t1", "t2"}
    case.assert_replica("lost", "t1")
    case.assert_replica("lost", "t2")


def test_the_retention_report_warns_before_the_needed_file_is_purged(lost_case: Case) -> None:
    """The driver's look at the source (driver/retention.py) and the operator's verdict on it
    (core/binlog_retention.py): first by age, then as the oldest file once the source rotated."""
    case = lost_case
    case.execute("SET GLOBAL binlog_expire_logs_seconds = 7200")
    case.execute("FLUSH BINARY LOGS")
    source = source_config(case.server)
    first = look_at_source(source)
    assert first.expire_seconds == 7200 and first.current_file == first.files[-1]

    needed = Checkpoint(binlog_offset=BinlogOffset(first.current_file, 4))
    published: list[BinlogRetention] = []
    watch = RetentionWatch(
        lambda: look_at_source(source), lambda: needed, published.append, RetentionTracker()
    )
    report = watch.check()
    assert report is not None and published == [report]
    assert report.needed_file == first.current_file and report.files_before == len(first.files) - 1
    now = datetime.now(timezone.utc)
    by_age = judge(report_of(report), now, margin_seconds=3 * 3600, margin_files=0)
    assert by_age.condition[:2] == ("True", "ExpiresSoon")  # two hours left, a three-hour margin
    assert by_age.seconds_left is not None and 7000 < by_age.seconds_left <= 7200

    _purge_before(case, first.current_file)  # the needed file is now the oldest
    case.execute("FLUSH BINARY LOGS")  # ... and no longer written
    rotated = watch.check()
    assert rotated is not None and rotated.files_before == 0 and rotated.current_file != first.current_file
    assert rotated.purge_not_before == report.purge_not_before  # the bound never moves back
    oldest = judge(report_of(rotated), now, margin_seconds=60, margin_files=1)
    assert oldest.condition[:2] == ("True", "OldestRetainedFile")
