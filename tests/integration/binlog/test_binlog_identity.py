"""Source identity and liveness of the binlog phase, through ``sparkcdc run``.

* The checkpointed offset keeps moving while the captured table is idle and other tables are
  busy: commits of uncaptured tables (and heartbeats) are transaction boundaries, so a restart
  does not rescan unrelated binlog.
* The live reader registers with the last id of ``spec.source.serverId``; when another replica
  connects with that id, the pipeline stops with an error saying so (instead of silently losing
  its stream or fighting the other replica).
"""

from __future__ import annotations

import contextlib
import threading
import time

import pytest
from binlog_support import Case
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.row_event import WriteRowsEvent

from harness.mariadb import source_config
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.mysql.connection import connection_kwargs


def test_offset_advances_while_captured_tables_are_idle(case: Case) -> None:
    db = case.db
    case.execute(f"CREATE TABLE `{db}`.quiet (id INT PRIMARY KEY, v INT)")
    case.execute(f"CREATE TABLE `{db}`.busy (id INT PRIMARY KEY, v INT)")
    case.execute(f"CREATE DATABASE IF NOT EXISTS `{db}_other`")
    case.execute(f"CREATE TABLE `{db}_other`.busy (id INT PRIMARY KEY)")
    case.sink_dbs.append(f"{db}_other")
    manifest = case.manifest("idle.yaml", case.pipeline("idle", ["quiet"], startup={"mode": "latest"}))
    run = case.start(manifest)
    with run:
        case.wait_offset(run, "idle", case.position(), timeout=120)
        first = case.checkpoint("idle")
        assert first is not None and first.binlog_offset is not None
        for i in range(30):
            case.execute(f"INSERT INTO `{db}`.busy VALUES ({i}, {i})")
            case.execute(f"INSERT INTO `{db}_other`.busy VALUES ({i})")
        target = case.position()
        case.wait_offset(run, "idle", target, timeout=60)
        later = case.checkpoint("idle")
        assert later is not None and later.binlog_offset is not None
        assert later.binlog_offset >= target > first.binlog_offset
        run.kill()
    assert case.rows(case.sink_db("idle"), "quiet") == []


class _Replica:
    """Another replica with a given server id that reconnects whenever it is dropped."""

    def __init__(self, case: Case, server_id: int, start: BinlogOffset) -> None:
        self._settings = connection_kwargs(source_config(case.server))
        self._server_id, self._start = server_id, start
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            stream = BinLogStreamReader(
                connection_settings=self._settings,
                server_id=self._server_id,
                log_file=self._start.file,
                log_pos=self._start.pos,
                resume_stream=True,
                blocking=True,
                only_events=[WriteRowsEvent],
                enable_logging=False,
            )
            try:
                for _ in stream:
                    if self._stop.is_set():
                        break
            except Exception:
                time.sleep(0.05)
            finally:
                with contextlib.suppress(Exception):
                    stream.close()

    def stop(self, wake: str, case: Case) -> None:
        self._stop.set()
        case.execute(wake)  # an event wakes the blocked reader to see the flag
        self._thread.join(10)


@pytest.mark.filterwarnings("ignore:'db' is deprecated")
def test_server_id_clash_is_reported(case: Case) -> None:
    db = case.db
    case.execute(f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY)")
    pipeline = case.pipeline("clash", ["t"], startup={"mode": "latest"}, source={"serverId": "5400-5402"})
    run = case.start(case.manifest("clash.yaml", pipeline))
    replica: _Replica | None = None
    with run:
        case.wait_offset(run, "clash", case.position(), timeout=120)
        replica = _Replica(case, 5402, case.position())  # the live reader's id: the range's last
        try:
            for i in range(200):  # keep our reader busy too, whichever way the server drops it
                if run.poll() is not None:
                    break
                case.execute(f"INSERT INTO `{db}`.t VALUES ({i})")
                time.sleep(0.05)
            result = run.wait(60)
        finally:
            replica.stop(f"INSERT INTO `{db}`.t VALUES (-1)", case)
    assert result.returncode != 0, result.describe()
    assert "server id 5402 is already used by another replica" in result.stderr, result.describe()
    assert "set spec.source.serverId to a range no other replica uses" in result.stderr
