"""The epoch fence in the sink database, on real MariaDB and real PostgreSQL: a superseded driver's
split writes and binlog batches are refused inside their transaction, and the locks order a zombie's
transaction against the new driver's claim (it commits before the claim, or it is refused)."""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from harness.mariadb import unique_name
from harness.schemas import col, table_schema
from sparkcdc.core.fence import Fence, FencedError
from sparkcdc.core.microbatch import TableChanges
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.splits import SnapshotSplit
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks.base import start_fenced
from sparkcdc.sinks.jdbc import JdbcSink, JdbcSinkConfig
from sparkcdc.sinks.jdbc.dialects import dialect_for
from sparkcdc.sinks.jdbc.fence import FENCE_TABLE, SinkFencedError, claim_fence, fenced_message
from sparkcdc.state.file_store import FileCheckpointStore
from sparkcdc.testing.kube import wait_until
from sparkcdc.testing.mariadb import MariaDBServer
from sparkcdc.testing.postgres import PostgresServer

HW = BinlogOffset("binlog.000001", 4)
SCHEMA = table_schema("items", [col("id", "bigint(20)", nullable=False), col("v", "varchar(20)")], ["id"])
PIPELINE = "ns/items"


@dataclass
class Target:
    """A sink database: its unfenced settings and how to look at it (rows, lock waiters)."""

    config: JdbcSinkConfig
    rows: Callable[[], list[tuple[Any, ...]]]
    fence_rows: Callable[[], list[tuple[Any, ...]]]
    lock_waiters: Callable[[], int]


@pytest.fixture(params=["mariadb", "postgresql"])
def target(request: pytest.FixtureRequest) -> Iterator[Target]:
    if request.param == "mariadb":
        yield from _mariadb_target(request.getfixturevalue("mariadb"))
    else:
        postgres: PostgresServer = request.getfixturevalue("postgres")
        yield _postgres_target(postgres, request.getfixturevalue("pg_database"))


def _mariadb_target(mariadb: MariaDBServer) -> Iterator[Target]:
    assert mariadb.cdc_user and mariadb.cdc_password
    db = unique_name("fence") + "_replica"  # the cdc account may create and write *_replica
    config = JdbcSinkConfig("mysql", mariadb.host, mariadb.port, db, mariadb.cdc_user, mariadb.cdc_password)

    def waiters() -> int:
        rows = mariadb.execute(
            "SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT'"
            " AND trx_query LIKE %s",
            (f"%{FENCE_TABLE}%",),
        )
        return int(rows[0][0])

    try:
        yield Target(
            config,
            lambda: mariadb.execute(f"SELECT id, v FROM `{db}`.items ORDER BY id"),
            lambda: mariadb.execute(f"SELECT pipeline, owner, epoch FROM `{db}`.{FENCE_TABLE}"),
            waiters,
        )
    finally:
        mariadb.execute(f"DROP DATABASE IF EXISTS `{db}`")


def _postgres_target(postgres: PostgresServer, db: str) -> Target:
    assert postgres.cdc_user and postgres.cdc_password
    config = JdbcSinkConfig(
        "postgresql", postgres.host, postgres.port, db, postgres.cdc_user, postgres.cdc_password
    )

    def waiters() -> int:
        rows = postgres.execute(
            "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = %s AND wait_event_type = 'Lock'"
            " AND query LIKE %s",
            (db, f"%{FENCE_TABLE}%"),
            database=db,
        )
        return int(rows[0][0])

    return Target(
        config,
        lambda: postgres.execute("SELECT id, v FROM items ORDER BY id", database=db),
        lambda: postgres.execute(f"SELECT pipeline, owner, epoch FROM {FENCE_TABLE}", database=db),
        waiters,
    )


def rows(*pairs: tuple[int, str]) -> pa.Table:
    return pa.table({"id": pa.array([p[0] for p in pairs], pa.int64()), "v": [p[1] for p in pairs]})


def whole(schema: TableSchema) -> SnapshotSplit:
    return SnapshotSplit(schema.table, 0, None, None)


def started(target: Target, owner: str, epoch: int) -> JdbcSink:
    """The sink of a driver that started with ``(owner, epoch)``: fence claimed, sink opened."""
    config = start_fenced(target.config, Fence(PIPELINE, owner, epoch))
    assert isinstance(config, JdbcSinkConfig)
    return config.open()


def upsert(key: int, value: str) -> TableChanges:
    return TableChanges(TableId("shop", "items"), {(key,): {"id": key, "v": value}}, [])


def test_a_superseded_driver_cannot_write_splits_or_batches(target: Target) -> None:
    old = started(target, "uid-a", 1)
    old.prepare([SCHEMA])
    old.write_split(SCHEMA, whole(SCHEMA), rows((1, "old"), (2, "old")), HW)
    new = started(target, "uid-a", 2)
    new.apply_changes(SCHEMA, upsert(2, "new"))

    with pytest.raises(SinkFencedError, match="now driven by epoch 2; this driver \\(epoch 1\\)"):
        old.write_split(SCHEMA, whole(SCHEMA), rows((1, "stale")), HW)
    with pytest.raises(SinkFencedError):
        old.apply_changes(SCHEMA, upsert(2, "stale"))
    assert target.rows() == [(1, "old"), (2, "new")]  # nothing of the refused writes
    # A stale driver starting late (epoch 1 again) cannot lower the fence.
    with pytest.raises(FencedError, match="refused this driver"):
        started(target, "uid-a", 1)
    assert target.fence_rows() == [(PIPELINE, "uid-a", 2)]
    # In a Spark task the refusal reaches the driver as the text of the task's traceback.
    with pytest.raises(SinkFencedError) as refused:
        old.apply_changes(SCHEMA, upsert(3, "stale"))
    trace = "".join(traceback.format_exception(refused.value))
    message = fenced_message(RuntimeError(f"Job aborted due to stage failure: PythonException: {trace}"))
    assert message is not None and message.endswith("this driver (epoch 1) stops without writing")
    # Restarting at the same epoch (the same driver opening another sink) is allowed.
    started(target, "uid-a", 2).apply_changes(SCHEMA, upsert(4, "new"))
    for sink in (old, new):
        sink.close()


def test_another_owner_takes_the_fence_over(target: Target) -> None:
    """A pipeline created again under the same name (a new uid), or a local run of it, starts its
    epochs anew: it takes the fence over, and the previous object's drivers are refused."""
    old = started(target, "uid-a", 7)
    old.prepare([SCHEMA])
    new = started(target, "uid-b", 1)
    new.write_split(SCHEMA, whole(SCHEMA), rows((1, "b")), HW)
    with pytest.raises(SinkFencedError, match="another run or object of the same name"):
        old.apply_changes(SCHEMA, upsert(1, "a"))
    assert target.rows() == [(1, "b")]
    assert target.fence_rows() == [(PIPELINE, "uid-b", 1)]


def test_an_unfenced_sink_writes_as_before(target: Target) -> None:
    sink = target.config.open()
    sink.prepare([SCHEMA])
    sink.write_split(SCHEMA, whole(SCHEMA), rows((1, "x")), HW)
    assert target.rows() == [(1, "x")]
    sink.close()


def test_a_transaction_open_before_the_claim_commits_first(target: Target) -> None:
    """The zombie's transaction read the fence (shared lock) before the claim: the claim waits
    for it, so the zombie's write lands before the new epoch, never after."""
    old = started(target, "uid-a", 1)
    old.prepare([SCHEMA])
    claimed = threading.Event()
    with old._transaction(SCHEMA, fenced=True) as cur:  # the zombie, mid-transaction
        claimer = threading.Thread(target=lambda: (started(target, "uid-a", 2).close(), claimed.set()))
        claimer.start()
        wait_until(lambda: target.lock_waiters() == 1, timeout=30, what="the claim waiting for the zombie")
        assert not claimed.is_set()
        cur.execute(_insert(target), (1, "zombie"))
    claimer.join(timeout=60)
    assert claimed.is_set()
    assert target.rows() == [(1, "zombie")]
    with pytest.raises(SinkFencedError):
        old.apply_changes(SCHEMA, upsert(1, "later"))
    old.close()


def test_a_transaction_started_during_the_claim_is_refused(target: Target) -> None:
    """The zombie's transaction starts while the new driver's claim holds the row: it waits, then
    reads the new epoch and is refused before writing anything."""
    old = started(target, "uid-a", 1)
    old.prepare([SCHEMA])
    old.write_split(SCHEMA, whole(SCHEMA), rows((1, "old")), HW)
    dialect = dialect_for(target.config.scheme)
    conn = dialect.connect(replace(target.config))
    errors: list[BaseException] = []

    def zombie_write() -> None:
        try:
            old.apply_changes(SCHEMA, upsert(1, "zombie"))
        except BaseException as err:
            errors.append(err)

    try:
        with conn.cursor() as cur:  # the new driver's claim, held open
            dialect.begin(cur)
            claim_fence(cur, dialect, Fence(PIPELINE, "uid-a", 2), "test")
            writer = threading.Thread(target=zombie_write)
            writer.start()
            wait_until(
                lambda: target.lock_waiters() == 1, timeout=30, what="the zombie waiting for the claim"
            )
        conn.commit()
    finally:
        conn.close()
    writer.join(timeout=60)
    assert len(errors) == 1 and isinstance(errors[0], SinkFencedError), errors
    assert target.rows() == [(1, "old")]
    old.close()


def _insert(target: Target) -> str:
    quote = dialect_for(target.config.scheme).quote
    return f"INSERT INTO {quote('items')} (id, v) VALUES (%s, %s)"


def test_two_local_runs_on_one_state_directory_fence_each_other(target: Target, tmp_path: Path) -> None:
    """``sparkcdc run`` takes each run's epoch from the state directory (``FileCheckpointStore``)."""
    store = FileCheckpointStore(tmp_path, "items")
    first = start_fenced(target.config, store.next_fence(PIPELINE))
    assert isinstance(first, JdbcSinkConfig)
    earlier = first.open()
    earlier.prepare([SCHEMA])
    earlier.write_split(SCHEMA, whole(SCHEMA), rows((1, "first run")), HW)
    second = start_fenced(target.config, FileCheckpointStore(tmp_path, "items").next_fence(PIPELINE))
    assert isinstance(second, JdbcSinkConfig) and second.fence is not None
    assert second.fence.epoch == 2
    with pytest.raises(SinkFencedError, match="now driven by epoch 2; this driver \\(epoch 1\\)"):
        earlier.apply_changes(SCHEMA, upsert(1, "first run again"))
    later = second.open()
    later.apply_changes(SCHEMA, upsert(1, "second run"))
    assert target.rows() == [(1, "second run")]
    for sink in (earlier, later):
        sink.close()
