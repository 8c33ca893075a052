"""The two chunk-read paths (ConnectorX and PyMySQL) give identical canonical tables for every
type family, bounded and unbounded splits, numeric and text chunk keys (architecture §4: the
benchmark picks the faster path; both must agree value for value)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.type_table import DDL, ROWS, insert_rows, random_rows
from sparkcdc.core.splits import SnapshotSplit
from sparkcdc.core.tables import TableId
from sparkcdc.mysql import chunk_reader
from sparkcdc.mysql.chunk_reader import chunk_read_method, read_chunk
from sparkcdc.mysql.connection import SourceConfig, connect
from sparkcdc.mysql.schema import TableSchema, load_table_schema
from sparkcdc.testing.mariadb import MariaDBServer


def _both(
    monkeypatch: pytest.MonkeyPatch, source_config: SourceConfig, schema: TableSchema, split: SnapshotSplit
) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    conn = connect(source_config, streaming=True)
    try:
        assert chunk_read_method(conn) == "connectorx"
        fast = read_chunk(conn, schema, split, fetch_size=7)
        assert chunk_read_method(conn, "pymysql") == "pymysql"
        slow = read_chunk(conn, schema, split, fetch_size=7, reader="pymysql")
    finally:
        conn.close()
    assert fast.schema == slow.schema == schema.arrow_schema()
    return fast.to_pylist(), slow.to_pylist()


@pytest.fixture
def types_schema(mariadb: MariaDBServer, source_config: SourceConfig, fresh_db: str) -> Iterator[TableSchema]:
    mariadb.execute(DDL.format(t=f"`{fresh_db}`.`types`"))
    insert_rows(mariadb, f"`{fresh_db}`.`types`", ROWS + random_rows(300))
    conn = connect(source_config)
    try:
        yield load_table_schema(conn, TableId(fresh_db, "types"))
    finally:
        conn.close()


@pytest.mark.parametrize("zero_dates", [False, True])
def test_every_type_family_reads_the_same(
    monkeypatch: pytest.MonkeyPatch,
    mariadb: MariaDBServer,
    source_config: SourceConfig,
    types_schema: TableSchema,
    zero_dates: bool,
) -> None:
    if not zero_dates:  # dates and times are then read natively
        mariadb.execute(f"DELETE FROM `{types_schema.table.database}`.`types` WHERE id = 3")
    for split in (
        SnapshotSplit(types_schema.table, 0, None, None),
        SnapshotSplit(types_schema.table, 1, (2,), (150,)),
        SnapshotSplit(types_schema.table, 2, (10_000,), None),  # empty
    ):
        fast, slow = _both(monkeypatch, source_config, types_schema, split)
        assert fast == slow, split
    assert len(fast) == 0
    # ConnectorX refuses zero dates natively; such a table is read with dates as text.
    assert (types_schema.table in chunk_reader._TEXT_TEMPORALS) is zero_dates


def test_text_keys_are_inlined_exactly(
    monkeypatch: pytest.MonkeyPatch, mariadb: MariaDBServer, source_config: SourceConfig, fresh_db: str
) -> None:
    table = f"`{fresh_db}`.`words`"
    mariadb.execute(
        f"CREATE TABLE {table} (k VARCHAR(40) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci, "
        "n INT, PRIMARY KEY (k, n))"
    )
    words = ["a", "B", "it's", 'say "hi"', "back\\slash", "ünï", "😀", "100%", "z"]
    for i, word in enumerate(words):
        mariadb.execute(f"INSERT INTO {table} VALUES (%s, %s), (%s, %s)", (word, i, word, i + 100))
    conn = connect(source_config)
    try:
        schema = load_table_schema(conn, TableId(fresh_db, "words"))
    finally:
        conn.close()
    split = SnapshotSplit(schema.table, 1, ("100%", 7), ("z", 0))
    fast, slow = _both(monkeypatch, source_config, schema, split)
    assert fast == slow
    assert {r["k"] for r in fast} >= {"it's", "100%", "back\\slash", 'say "hi"', "ünï"}
    assert "z" not in {r["k"] for r in fast}
