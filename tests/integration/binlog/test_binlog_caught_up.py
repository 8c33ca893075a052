"""``--exit-when-caught-up`` on an idle source: the binlog phase returns as soon as the live
reader has read up to the target position and everything before it is committed, without
waiting for a heartbeat (30 s by default) when the last events before the target are not
transaction ends (a rotated binlog starts with format, GTID-list and checkpoint events).

The streamer runs against the real server with a recording sink, the binlog phase alone, not a
Spark start. No test measures how long it takes: heartbeats are set an hour apart (the most the
spec allows), so a phase that needed one to see it was caught up would not return at all, and
the tests' generous waits for it fail instead."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from binlog_support import Case, replay_changelog

from harness.mariadb import binlog_offset
from sparkcdc.api.spec import BinlogSpec
from sparkcdc.core.checkpoint import Checkpoint, Phase, TableState
from sparkcdc.core.microbatch import TableChanges
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.tables import TableId
from sparkcdc.engine.listener import PipelineListener
from sparkcdc.engine.streaming import BinlogStreamer, StreamSettings
from sparkcdc.mysql.connection import SourceConfig, connect
from sparkcdc.mysql.schema import TableSchema, load_table_schema
from sparkcdc.testing.mariadb import MariaDBServer

# Far beyond any wait of these tests: a phase that needs a heartbeat to finish never returns here.
_HEARTBEAT_SECONDS = 3600
# Only bounds the wait for a phase that would otherwise wait an hour for its heartbeat.
_WAIT_SECONDS = 120


class _Sink:
    def __init__(self) -> None:
        self.applied: list[tuple[str, list[Any]]] = []

    def prepare(self, schemas: Any) -> None: ...

    def write_split(self, *args: Any) -> None: ...

    def apply_changes(self, schema: TableSchema, changes: TableChanges) -> None:
        self.applied.append((str(changes.table), sorted(changes.upserts)))

    def close(self) -> None: ...


def _stream(
    cfg: SourceConfig, table: TableId, start: BinlogOffset, stop_at: BinlogOffset, server_id: int
) -> tuple[Checkpoint, list[Checkpoint], _Sink]:
    """The binlog phase from ``start`` up to ``stop_at``: what it returned, saved and applied."""
    conn = connect(cfg)
    try:
        schemas = {table: load_table_schema(conn, table)}
    finally:
        conn.close()
    sink = _Sink()
    saved: list[Checkpoint] = []
    spec = BinlogSpec(batch_interval_ms=200, heartbeat_interval_seconds=_HEARTBEAT_SECONDS)
    settings = StreamSettings(server_id, spec, stop_at, catchup=None)
    streamer = BinlogStreamer(cfg, sink, schemas, settings, PipelineListener(), saved.append)
    base = Checkpoint(tables={table: TableState(Phase.BINLOG)}, snapshot_done=True, binlog_offset=start)
    give_up = threading.Event()
    returned: list[Checkpoint] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            returned.append(streamer.run(base, start, give_up.is_set))
        except BaseException as err:
            failed.append(err)

    thread = threading.Thread(target=run, name="binlog-phase", daemon=True)
    thread.start()
    thread.join(_WAIT_SECONDS)
    if thread.is_alive():
        give_up.set()  # the phase returns at its next look, and closes its reader
        thread.join(30)
        raise AssertionError(
            f"the binlog phase did not see it had read up to {stop_at} (waited {_WAIT_SECONDS} s; "
            f"its next heartbeat was {_HEARTBEAT_SECONDS} s away); it saved {saved}"
        )
    if failed:
        raise failed[0]
    return returned[0], saved, sink


_SCENARIOS = {
    # The target is a transaction end, but of a table not captured.
    "other-table": ["INSERT INTO `{db}`.other VALUES (1)"],
    # The target is at the end of a rotated binlog's header events.
    "rotated-idle": ["INSERT INTO `{db}`.t VALUES (1, 1), (2, 2)", "FLUSH BINARY LOGS"],
    "rotated-then-written": [
        "INSERT INTO `{db}`.t VALUES (1, 1), (2, 2)",
        "FLUSH BINARY LOGS",
        "INSERT INTO `{db}`.t VALUES (3, 3)",
        "FLUSH BINARY LOGS",
    ],
}
_CAPTURED = {"other-table": [], "rotated-idle": [(1,), (2,)], "rotated-then-written": [(1,), (2,), (3,)]}


@pytest.mark.parametrize("scenario", list(_SCENARIOS))
def test_returns_promptly_once_the_target_is_read(
    mariadb: MariaDBServer, source_config: SourceConfig, fresh_db: str, scenario: str
) -> None:
    table = TableId(fresh_db, "t")
    mariadb.execute(f"CREATE TABLE `{fresh_db}`.t (id INT PRIMARY KEY, v INT)")
    mariadb.execute(f"CREATE TABLE `{fresh_db}`.other (id INT PRIMARY KEY)")
    start = binlog_offset(mariadb)
    for statement in _SCENARIOS[scenario]:
        mariadb.execute(statement.format(db=fresh_db))
    # The target of a run that starts now; nothing is written after it.
    stop_at = binlog_offset(mariadb)
    assert stop_at > start

    result, saved, sink = _stream(source_config, table, start, stop_at, 4301)

    assert result.binlog_offset == stop_at
    assert sorted(k for _, upserts in sink.applied for k in upserts) == _CAPTURED[scenario]
    # Offsets are checkpointed in order, after the sink committed, and the last one is the target.
    offsets = [c.binlog_offset for c in saved if c.binlog_offset is not None]
    assert offsets == sorted(offsets, key=BinlogOffset.sort_key)
    assert offsets[-1] == stop_at


def test_resumes_from_the_checkpoint_it_wrote(
    mariadb: MariaDBServer, source_config: SourceConfig, fresh_db: str
) -> None:
    """A checkpoint taken at a rotation's header events is a position the source can resume from."""
    table = TableId(fresh_db, "t")
    mariadb.execute(f"CREATE TABLE `{fresh_db}`.t (id INT PRIMARY KEY, v INT)")
    start = binlog_offset(mariadb)
    mariadb.execute("FLUSH BINARY LOGS")
    first, _, _ = _stream(source_config, table, start, binlog_offset(mariadb), 4302)
    assert first.binlog_offset is not None

    mariadb.execute(f"INSERT INTO `{fresh_db}`.t VALUES (7, 7)")
    second, _, sink = _stream(source_config, table, first.binlog_offset, binlog_offset(mariadb), 4302)
    assert [k for _, upserts in sink.applied for k in upserts] == [(7,)]
    assert second.binlog_offset == binlog_offset(mariadb)


def test_a_resumed_run_exits_without_waiting_for_a_heartbeat(case: Case) -> None:
    """Through ``sparkcdc run``: a run resumed after the source rotated its binlog (and wrote
    nothing else) ends, with the rows of the first run, although its heartbeats are an hour apart
    (a run that needed one would outlast ``run_ok``'s wait and fail there)."""
    case.execute(f"CREATE TABLE `{case.db}`.t (id INT PRIMARY KEY, v INT)")
    case.execute(f"INSERT INTO `{case.db}`.t VALUES (1, 1), (2, 2)")
    binlog = {"heartbeatIntervalSeconds": _HEARTBEAT_SECONDS}
    pipeline = case.pipeline("idle", ["t"], sink="changelog", binlog=binlog)
    manifest = case.manifest("idle.yaml", pipeline)
    case.run_ok(manifest)
    case.execute("FLUSH BINARY LOGS")
    target = case.position()

    case.run_ok(manifest, timeout=240)

    checkpoint = case.checkpoint("idle")
    assert checkpoint is not None and checkpoint.binlog_offset is not None
    # The rotated binlog's head, read to its end: MariaDB may add its binlog checkpoint event there
    # after FLUSH returned (asynchronously), so the end is the source's position now, not target.
    assert checkpoint.binlog_offset >= target
    assert checkpoint.binlog_offset.same_position(case.position())  # it carries the GTID position too
    rows = replay_changelog(case.changelog_dir("idle") / f"{case.db}.t", key=lambda d: d["id"])
    assert sorted(rows) == [1, 2]
