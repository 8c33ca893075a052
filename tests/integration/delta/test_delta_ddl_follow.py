"""RENAME COLUMN, widening MODIFY/CHANGE and TRUNCATE followed mid-stream into Delta, under a
concurrent writer; a narrowing MODIFY stops only its table (the DDL script of
``harness.ddl_writer``, as tests/integration/binlog/test_binlog_ddl_follow.py runs it into JDBC
targets and the changelog).

Delta renames under column mapping by name (the table is switched to it), widens by its type
widening (TINYINT → INT, DECIMAL(6,2) → DECIMAL(9,3), TINYINT UNSIGNED → SMALLINT: byte, decimal,
short to integer, decimal, short; VARCHAR lengths and NOT NULL → NULL keep the stored type) and
empties a truncated table by one DELETE commit marked with the statement's offset. Each Delta
table then equals its source table, columns and rows.
"""

from __future__ import annotations

import functools
import time
from pathlib import Path

import pyarrow as pa
import pytest
from delta_support import assert_delta_equals_source, delta_sink, inspect_delta, source_schema

from harness.ddl_writer import DDL_SCRIPT, NARROWING, DdlWriter, create_ddl_tables
from harness.runner import (
    SparkcdcProcess,
    checkpointed_past,
    load_checkpoint,
    pipeline_manifest,
    run_sparkcdc,
)
from harness.waiting import wait_until
from sparkcdc.core.checkpoint import Phase
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.mysql.connection import SourceConfig
from sparkcdc.testing.mariadb import MariaDBServer

PIPELINE = "delta-ddl"
# Two runs of minutes each on a Delta-enabled Spark, beside the other lanes of `make test`.
pytestmark = pytest.mark.timeout(1500)


def test_ddl_followed_into_delta(
    mariadb: MariaDBServer, source_config: SourceConfig, fresh_db: str, tmp_path: Path
) -> None:
    db = fresh_db
    create_ddl_tables(mariadb, db)
    lake, state, logs = tmp_path / "lake", tmp_path / "state", tmp_path / "logs"
    assert mariadb.cdc_password
    manifest = pipeline_manifest(
        tmp_path / "pipeline.yaml",
        name=PIPELINE,
        host=mariadb.host,
        port=mariadb.port,
        password=mariadb.cdc_password,
        tables=[f"{db}.{t}" for t in ("t", "k", "x", "y")],
        sink=delta_sink(lake),
        mode="initial",
    )

    reached = functools.partial(checkpointed_past, state, PIPELINE)

    with SparkcdcProcess(manifest, state, logs, exit_when_caught_up=False) as run:
        now = BinlogOffset(*mariadb.binlog_position())
        assert run.wait_for(lambda: reached(now), timeout=1200, interval=0.2), run.result().describe()
        # Fewer rows than into JDBC: every MERGE costs the Delta sink seconds.
        with DdlWriter(mariadb, db, seed=1919, pause=0.1) as writer:
            for done, (statement, changes) in enumerate(DDL_SCRIPT, start=1):
                time.sleep(0.6)
                writer.next_ddl(statement, dict(changes))
                wait_until(lambda done=done: writer.ddl_done >= done, timeout=30, message=statement)
            time.sleep(0.6)
        target = BinlogOffset(*mariadb.binlog_position())
        assert run.wait_for(lambda: reached(target), timeout=1200, interval=0.2), run.result().describe()
        run.kill()
    mariadb.execute(
        f"INSERT INTO `{db}`.t (tid, b, n, dd, z, u) VALUES (500, 'x', 100000, 123456.789, NULL, 3)"
    )
    result = run_sparkcdc(manifest, state, logs, timeout=600)  # resumes past every statement
    assert result.returncode == 4 and f"table {db}.x stopped" in result.stderr, result.describe()

    paths = {t: lake / db / t for t in ("t", "k", "y")}
    dumps = inspect_delta(tmp_path, paths)
    for table in paths:
        schema = source_schema(source_config, db, table)
        latest = dumps[table].latest
        assert latest.column_names == list(schema.column_names), (table, latest.column_names)
        assert_delta_equals_source(source_config, schema, latest, f"{table} in Delta")
    widened = dumps["t"].latest.schema
    assert widened.field("n").type == pa.int32() and widened.field("u").type == pa.int16()
    assert widened.field("dd").type == pa.decimal128(9, 3), widened
    operations = [entry["operation"] for entry in dumps["k"].history]
    assert operations.count("DELETE") == 2, operations

    checkpoint = load_checkpoint(state, PIPELINE)
    assert checkpoint is not None
    states = {str(t): s for t, s in checkpoint.tables.items()}
    assert states[f"{db}.x"].phase is Phase.FAILED and NARROWING in states[f"{db}.x"].error
    assert all(states[f"{db}.{t}"].phase is Phase.BINLOG for t in ("t", "k", "y")), states
