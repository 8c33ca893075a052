"""Bounded binlog reads: exactly the changes in (start, stop], of the given tables only."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.row_event import WriteRowsEvent

from harness.mariadb import binlog_offset
from sparkcdc.core.events import Op
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.binlog.reader import BinlogChangeReader, read_changes
from sparkcdc.mysql.connection import SourceConfig, connect, connection_kwargs
from sparkcdc.mysql.errors import SourceError
from sparkcdc.mysql.schema import TableSchema, load_table_schema
from sparkcdc.testing.mariadb import MariaDBServer


def _schemas(cfg: SourceConfig, *tables: TableId) -> dict[TableId, TableSchema]:
    conn = connect(cfg)
    try:
        return {t: load_table_schema(conn, t) for t in tables}
    finally:
        conn.close()


def _server_seconds(server: MariaDBServer) -> int:
    """The server's clock, in whole seconds (as binlog events carry it)."""
    return int(server.execute("SELECT UNIX_TIMESTAMP()")[0][0])


def test_bounded_read(mariadb: MariaDBServer, source_config: SourceConfig, fresh_db: str) -> None:
    a, b = TableId(fresh_db, "a"), TableId(fresh_db, "b")
    mariadb.execute(f"CREATE TABLE `{fresh_db}`.a (id INT PRIMARY KEY, v VARCHAR(10))")
    mariadb.execute(f"CREATE TABLE `{fresh_db}`.b (id INT PRIMARY KEY, v VARCHAR(10))")
    schemas = _schemas(source_config, a, b)
    start = binlog_offset(mariadb)
    began = _server_seconds(mariadb)
    mariadb.execute(f"INSERT INTO `{fresh_db}`.a VALUES (1, 'one'), (2, 'two'), (3, 'three')")  # one event
    mariadb.execute(f"INSERT INTO `{fresh_db}`.b VALUES (1, 'other')")
    mariadb.execute(f"UPDATE `{fresh_db}`.a SET id = 10, v = 'ten' WHERE id = 1")
    mariadb.execute("FLUSH BINARY LOGS")  # the read crosses into the next file
    mariadb.execute(f"DELETE FROM `{fresh_db}`.a WHERE id = 2")
    stop = binlog_offset(mariadb)
    ended = _server_seconds(mariadb)
    mariadb.execute(f"INSERT INTO `{fresh_db}`.a VALUES (99, 'after')")  # after stop: not read

    events = list(read_changes(source_config, 4201, start, stop, {a: schemas[a]}))
    assert [(e.op, e.index) for e in events] == [
        (Op.INSERT, 0),
        (Op.INSERT, 1),
        (Op.INSERT, 2),
        (Op.UPDATE, 0),
        (Op.DELETE, 0),
    ]
    assert all(e.table == a for e in events)
    assert [e.after["id"] for e in events[:3] if e.after] == [1, 2, 3]
    assert len({e.offset for e in events[:3]}) == 1  # rows of one event share its offset
    offsets = [e.offset for e in events]
    assert offsets == sorted(offsets) and start < offsets[0] and offsets[-1] <= stop
    assert offsets[-1].file != start.file  # rotated
    update = events[3]
    assert update.before == {"id": 1, "v": "one"} and update.after == {"id": 10, "v": "ten"}
    assert events[4].before == {"id": 2, "v": "two"} and events[4].after is None
    # Each event's time is its statement's on the server's clock, in milliseconds.
    assert all(began * 1000 <= e.ts_ms <= ended * 1000 for e in events), [e.ts_ms for e in events]

    # Reading up to an event's offset includes it; starting at it excludes it.
    head = list(read_changes(source_config, 4201, start, offsets[3], {a: schemas[a]}))
    tail = list(read_changes(source_config, 4201, offsets[3], stop, {a: schemas[a]}))
    assert head == events[:4] and tail == events[4:]
    assert list(read_changes(source_config, 4201, stop, stop, {a: schemas[a]})) == []

    both = list(read_changes(source_config, 4201, start, stop, schemas))
    assert [str(e.table) for e in both].count(str(b)) == 1


def test_reader_is_reusable_and_tracks_position(
    mariadb: MariaDBServer, source_config: SourceConfig, fresh_db: str
) -> None:
    t = TableId(fresh_db, "r")
    mariadb.execute(f"CREATE TABLE `{fresh_db}`.r (id INT PRIMARY KEY)")
    schemas = _schemas(source_config, t)
    start = binlog_offset(mariadb)
    mariadb.execute(f"INSERT INTO `{fresh_db}`.r VALUES (1)")
    middle = binlog_offset(mariadb)
    mariadb.execute(f"INSERT INTO `{fresh_db}`.r VALUES (2)")
    end = binlog_offset(mariadb)
    with BinlogChangeReader(source_config, 4202, schemas) as reader:
        assert [e.after for e in reader.read(start, middle)] == [{"id": 1}]
        assert reader.position is not None and reader.position.same_position(middle)
        assert [e.after for e in reader.read(middle)] == [{"id": 2}]  # no stop: to the current end
        assert reader.position is not None and reader.position >= end


def test_a_purged_start_is_explained(
    mariadb: MariaDBServer, source_config: SourceConfig, fresh_db: str
) -> None:
    t = TableId(fresh_db, "g")
    mariadb.execute(f"CREATE TABLE `{fresh_db}`.g (id INT PRIMARY KEY)")
    schemas = _schemas(source_config, t)
    with pytest.raises(SourceError, match=r"cannot send its binlog from binlog\.999990:4 .*onBinlogLost"):
        list(
            read_changes(
                source_config,
                4203,
                BinlogOffset("binlog.999990", 4),
                BinlogOffset("binlog.999991", 4),
                schemas,
            )
        )


class _Competitor:
    """Another "replica" with the same server id that reconnects whenever it is dropped, as
    replicas do."""

    def __init__(self, cfg: SourceConfig, server_id: int, start: BinlogOffset) -> None:
        self._cfg, self._server_id, self._start = cfg, server_id, start
        self._stop = threading.Event()
        self._stream: BinLogStreamReader | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._stream = BinLogStreamReader(
                connection_settings=connection_kwargs(self._cfg),
                server_id=self._server_id,
                log_file=self._start.file,
                log_pos=self._start.pos,
                resume_stream=True,
                blocking=True,
                only_events=[WriteRowsEvent],
                enable_logging=False,
            )
            try:
                for _ in self._stream:
                    if self._stop.is_set():
                        break
            except Exception:
                time.sleep(0.05)
            finally:
                with contextlib.suppress(Exception):
                    self._stream.close()

    def stop(self, wake: Callable[[], None]) -> None:
        # Closing the stream from this thread would deadlock with the blocked reader thread;
        # a new event wakes it up to see the flag.
        self._stop.set()
        wake()
        self._thread.join(10)


@pytest.fixture
def busy_table(mariadb: MariaDBServer, fresh_db: str) -> Iterator[tuple[TableId, BinlogOffset]]:
    mariadb.execute(f"CREATE TABLE `{fresh_db}`.busy (id INT PRIMARY KEY, pad VARCHAR(200))")
    start = binlog_offset(mariadb)
    conn = mariadb.root_connection()
    with conn.cursor() as cur:
        for i in range(400):
            cur.executemany(
                f"INSERT INTO `{fresh_db}`.busy VALUES (%s, REPEAT('x', 200))",
                [(i * 10 + j,) for j in range(10)],
            )
    conn.close()
    yield TableId(fresh_db, "busy"), start


@pytest.mark.timeout(120)
@pytest.mark.filterwarnings("ignore:'db' is deprecated")  # the competitor's own library connection
def test_server_id_clash_is_reported(
    mariadb: MariaDBServer, source_config: SourceConfig, busy_table: tuple[TableId, BinlogOffset]
) -> None:
    """Our reader is connected when another replica registers with the same id. (A bounded
    read that the server has already sent in full cannot be disturbed any more, so the reader
    blocks at the end of the binlog like the streaming reader does.)"""
    table, start = busy_table
    schemas = _schemas(source_config, table)
    competitor: _Competitor | None = None
    try:
        with (
            pytest.raises(SourceError) as caught,
            BinlogChangeReader(source_config, 4299, schemas, blocking=True) as reader,
        ):
            for n, _ in enumerate(reader.read(start)):
                if n == 10:  # our reader is connected and reading: now the other one registers
                    competitor = _Competitor(source_config, 4299, start)
    finally:
        if competitor is not None:
            competitor.stop(lambda: mariadb.execute(f"INSERT INTO {table} VALUES (-1, 'wake')"))
    assert str(caught.value).startswith("server id 4299 is already used by another replica")
    assert str(caught.value).endswith("set spec.source.serverId to a range no other replica uses")


@pytest.mark.timeout(60)
def test_request_stop_ends_a_blocking_read(
    mariadb: MariaDBServer, source_config: SourceConfig, fresh_db: str
) -> None:
    """A blocking read does not end at the end of the binlog (nor at a heartbeat): it returns once
    ``request_stop`` is called from another thread, with the events before it.

    Said by the order of events, not by timing: the read returns only after the stop was
    requested, a second after its row arrived (the test's timeout bounds a read that would not
    return at all)."""
    t = TableId(fresh_db, "idle")
    mariadb.execute(f"CREATE TABLE `{fresh_db}`.idle (id INT PRIMARY KEY)")
    schemas = _schemas(source_config, t)
    start = binlog_offset(mariadb)
    mariadb.execute(f"INSERT INTO `{fresh_db}`.idle VALUES (1)")
    stop_requested = threading.Event()
    with BinlogChangeReader(source_config, 4204, schemas, blocking=True, heartbeat_seconds=0.2) as reader:

        def stop() -> None:
            stop_requested.set()
            reader.request_stop()

        timer = threading.Timer(1.0, stop)
        seen = []
        for event in reader.read(start):  # would block forever at the end of the binlog
            seen.append(event.after)
            if len(seen) == 1:
                timer.start()  # once the row is read: the stop cannot drop it
        returned_after_stop = stop_requested.is_set()
        timer.cancel()  # a read that returned by itself is not stopped afterwards
        if timer.ident is not None:
            timer.join()
    assert seen == [{"id": 1}]
    assert returned_after_stop, "the read returned before request_stop: it did not block at the binlog's end"
