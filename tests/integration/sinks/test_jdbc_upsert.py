"""Binlog batches into MariaDB targets: the sink upserts (``INSERT … ON DUPLICATE KEY UPDATE``)
only where that is exactly delete + insert, and every target ends up as delete + insert leaves it.

A target with another unique key is the case that differs: swapping that key's values between two
rows in one batch is fine for delete + insert, while an upsert of the first row would find the
second by the other key and overwrite it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from harness.mariadb import unique_name
from harness.schemas import col, table_schema
from sparkcdc.core.microbatch import TableChanges
from sparkcdc.sinks.jdbc import JdbcSink, JdbcSinkConfig
from sparkcdc.testing.mariadb import MariaDBServer

SCHEMA = table_schema(
    "items",
    [col("id", "bigint(20)", nullable=False), col("code", "varchar(20)"), col("v", "varchar(20)")],
    ["id"],
)


@pytest.fixture
def replica(mariadb: MariaDBServer) -> Iterator[tuple[MariaDBServer, JdbcSinkConfig]]:
    assert mariadb.cdc_user and mariadb.cdc_password
    db = unique_name("upsert") + "_replica"  # the cdc account may create and write *_replica
    config = JdbcSinkConfig("mysql", mariadb.host, mariadb.port, db, mariadb.cdc_user, mariadb.cdc_password)
    try:
        yield mariadb, config
    finally:
        mariadb.execute(f"DROP DATABASE IF EXISTS `{db}`")


def _rows(mariadb: MariaDBServer, config: JdbcSinkConfig) -> list[tuple[object, ...]]:
    return [
        tuple(r) for r in mariadb.execute(f"SELECT id, code, v FROM `{config.database}`.items ORDER BY id")
    ]


def _changes(upserts: dict[int, tuple[str, str]], deletes: list[int]) -> TableChanges:
    return TableChanges(
        SCHEMA.table,
        {(k,): {"id": k, "code": c, "v": v} for k, (c, v) in upserts.items()},
        [(k,) for k in deletes],
    )


def _apply_batches(sink: JdbcSink) -> None:
    sink.apply_changes(SCHEMA, _changes({1: ("a", "x"), 2: ("b", "y"), 3: ("c", "z")}, []))
    # Row 2 changes, row 3 goes, row 4 comes, and rows 1 and 4 swap their codes with row 2's.
    sink.apply_changes(SCHEMA, _changes({4: ("a", "n"), 2: ("d", "y2"), 1: ("b", "x2")}, [3]))
    # A key change: row 4 becomes row 5 (delete old + upsert new), and the batch is replayed.
    batch = _changes({5: ("a", "n2")}, [4])
    sink.apply_changes(SCHEMA, batch)
    sink.apply_changes(SCHEMA, batch)


EXPECTED = [(1, "b", "x2"), (2, "d", "y2"), (5, "a", "n2")]


@pytest.mark.parametrize("bulk_load", [True, False], ids=["load-data-replace", "insert-on-duplicate"])
def test_sink_created_table_is_upserted(
    replica: tuple[MariaDBServer, JdbcSinkConfig], bulk_load: bool
) -> None:
    mariadb, config = replica
    sink = JdbcSink(replace(config, bulk_load=bulk_load))
    try:
        sink.prepare([SCHEMA])
        with sink._transaction() as cur:  # the path the batches below take
            assert sink._dialect.can_upsert(cur, SCHEMA)
        _apply_batches(sink)
        if bulk_load:  # every upsert by LOAD DATA … REPLACE, none fell back to the INSERTs
            assert sink._bulk is not None and sink._bulk.enabled and not sink._bulk._fallbacks
    finally:
        sink.close()
    assert _rows(mariadb, config) == EXPECTED


@pytest.mark.parametrize(
    "extra",
    [
        "UNIQUE KEY code_u (code)",  # another unique key
        "w int NOT NULL DEFAULT 7",  # a column the rows do not set
        "UNIQUE KEY id_code (id, code)",  # a second unique key containing the row key
    ],
)
def test_user_table_where_upsert_differs_is_deleted_and_inserted(
    replica: tuple[MariaDBServer, JdbcSinkConfig], extra: str
) -> None:
    mariadb, config = replica
    mariadb.execute(f"CREATE DATABASE `{config.database}`")
    mariadb.execute(
        f"CREATE TABLE `{config.database}`.items (id bigint NOT NULL, code varchar(20), v varchar(20),"
        f" {extra}, PRIMARY KEY (id))"
    )
    sink = JdbcSink(JdbcSinkConfig(**{**config.__dict__, "create_tables": False}))
    try:
        sink.prepare([SCHEMA])
        with sink._transaction() as cur:
            assert not sink._dialect.can_upsert(cur, SCHEMA)
        _apply_batches(sink)
    finally:
        sink.close()
    assert _rows(mariadb, config) == EXPECTED
