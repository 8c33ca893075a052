"""Adjacent splits of one table are written to the JDBC sink at the same time by different
Spark tasks. Their ``DELETE range + INSERT`` transactions take next-key locks on each other's
boundary rows, so InnoDB reports deadlocks; a split write must survive that (retry the
transaction) instead of failing the task. Writers also write the same split at once (as a zombie
task attempt would): the one that finds the other's rows committed under its insert redoes its
transaction and deletes them first."""

from __future__ import annotations

import itertools
import threading
from typing import Any

import pytest
from snapshot_support import Scenario

from harness.mariadb import source_config
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.splits import SnapshotSplit
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.chunk_reader import read_chunk
from sparkcdc.mysql.connection import connect
from sparkcdc.mysql.schema import TableSchema, load_table_schema
from sparkcdc.sinks.jdbc import JdbcSinkConfig

pytestmark = pytest.mark.integration

ROUNDS = 40
BIG = 30_000  # rows per split: a transaction long enough for the other to meet its locks


def _read_splits(
    scenario: Scenario, rows: int, bounds: list[int]
) -> tuple[TableSchema, list[SnapshotSplit], list[Any]]:
    """Table ``t`` with ``rows`` rows, cut at ``bounds`` into splits, each read from the source."""
    db = scenario.db
    scenario.execute(f"CREATE TABLE {db}.t (id INT PRIMARY KEY, v VARCHAR(30))")
    scenario.execute(f"INSERT INTO {db}.t SELECT seq, CONCAT('v', seq) FROM {db}.seq_1_to_{rows}")
    table = TableId(db, "t")
    edges: list[int | None] = [None, *bounds, None]
    splits = [
        SnapshotSplit(table, i, None if lo is None else (lo,), None if hi is None else (hi,))
        for i, (lo, hi) in enumerate(itertools.pairwise(edges))
    ]
    cfg = source_config(scenario.server)
    conn = connect(cfg, streaming=True)
    try:
        schema = load_table_schema(connect(cfg), table)
        return schema, splits, [read_chunk(conn, schema, s) for s in splits]
    finally:
        conn.close()


def _prepared_sink(scenario: Scenario, schema: TableSchema) -> JdbcSinkConfig:
    assert scenario.server.cdc_password
    sink_cfg = JdbcSinkConfig(
        "mysql",
        scenario.server.host,
        scenario.server.port,
        scenario.sink_db,
        "cdc",
        scenario.server.cdc_password,
    )
    sink = sink_cfg.open()
    sink.prepare([schema])
    sink.close()
    return sink_cfg


def test_adjacent_split_writes_at_once_do_not_fail(scenario: Scenario) -> None:
    schema, splits, data = _read_splits(scenario, 800, [201, 401, 601])
    sink_cfg = _prepared_sink(scenario, schema)
    errors: list[BaseException] = []
    hw = BinlogOffset("binlog.000001", 4)

    def writer(indexes: list[int]) -> None:
        sink = sink_cfg.open()
        try:
            for _ in range(ROUNDS):
                for i in indexes:
                    sink.write_split(schema, splits[i], data[i], hw)
        except BaseException as err:
            errors.append(err)
        finally:
            sink.close()

    threads = [threading.Thread(target=writer, args=(ix,)) for ix in ([0, 2], [1, 3], [3, 0], [2, 1])]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors, f"{len(errors)} of {len(threads)} writers failed; first: {errors[0]!r}"
    scenario.assert_replica_equal("t")


def test_large_adjacent_splits_into_an_empty_table_started_in_step(scenario: Scenario) -> None:
    """Two tasks start their first splits at the same moment (the driver's threads do, spark/
    wave_runner.py) into an empty table, where both DELETEs lock the one gap: the retries must
    let the winner finish rather than collide at every attempt."""
    schema, splits, data = _read_splits(scenario, 2 * BIG, [BIG + 1])
    sink_cfg = _prepared_sink(scenario, schema)
    errors: list[BaseException] = []
    for _ in range(3):
        scenario.execute(f"TRUNCATE TABLE {scenario.sink_db}.t")
        in_step = threading.Barrier(2)

        def writer(i: int, in_step: threading.Barrier = in_step) -> None:
            sink = sink_cfg.open()
            try:
                in_step.wait(30)
                sink.write_split(schema, splits[i], data[i], BinlogOffset("binlog.000001", 4))
            except BaseException as err:
                errors.append(err)
            finally:
                sink.close()

        threads = [threading.Thread(target=writer, args=(i,)) for i in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(300)
        assert not errors, f"a writer failed: {errors[0]!r}"
    scenario.assert_replica_equal("t")
