"""``engine.online_schema_change.follow_swap`` against a real MariaDB: a tool's swap is followed
as the ALTER it amounts to, from the definitions before and after it, or stops the table.

The swaps are made by hand the way the tools make them (``CREATE TABLE _t_gho LIKE t``, the ALTER
on the copy, ``RENAME TABLE t TO _t_del, _t_gho TO t``); the tools themselves run in
tests/integration/binlog/test_online_schema_change.py."""

from __future__ import annotations

from typing import Any

import pytest

from sparkcdc.core.tables import TableId
from sparkcdc.engine.online_schema_change import follow_swap
from sparkcdc.mysql.errors import SourceError
from sparkcdc.mysql.schema import TableSchema, load_table_schema
from sparkcdc.testing.mariadb import MariaDBServer


def _swap(mariadb: MariaDBServer, db: str, conn: Any, alter: str) -> tuple[TableId, TableId, TableSchema]:
    """``t`` before the swap; the swap made with ``alter`` run on the copy."""
    mariadb.execute(
        f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY, v VARCHAR(20), n INT UNSIGNED, e ENUM('a','b'))"
    )
    table = TableId(db, "t")
    before = load_table_schema(conn, table)
    mariadb.execute(f"CREATE TABLE `{db}`._t_gho LIKE `{db}`.t")
    mariadb.execute(f"ALTER TABLE `{db}`._t_gho {alter}")
    mariadb.execute(f"RENAME TABLE `{db}`.t TO `{db}`._t_del, `{db}`._t_gho TO `{db}`.t")
    return table, TableId(db, "_t_del"), before


def test_added_and_widened_columns_are_followed(mariadb: MariaDBServer, fresh_db: str, conn: Any) -> None:
    alter = "ADD COLUMN c INT NOT NULL DEFAULT 7, MODIFY v VARCHAR(40), MODIFY n BIGINT"
    table, old, before = _swap(mariadb, fresh_db, conn, alter)
    evolution = follow_swap(conn, table, old, before, None, known=True)
    assert [(a.column.name, a.default_sql, a.after) for a in evolution.added] == [("c", "7", "e")]
    assert [(c.name, c.column_type) for c in evolution.altered] == [("v", "varchar(40)"), ("n", "bigint(20)")]
    assert evolution.dropped == () and evolution.renamed == ()
    assert [c.name for c in evolution.schema.columns] == ["id", "v", "n", "e", "c"]


def test_met_with_the_later_definition_the_old_table_tells_what_changed(
    mariadb: MariaDBServer, fresh_db: str, conn: Any
) -> None:
    table, old, _ = _swap(mariadb, fresh_db, conn, "ADD COLUMN c INT AFTER v, MODIFY v VARCHAR(40)")
    later = load_table_schema(conn, table)  # the stream resumed from before the swap, after it
    evolution = follow_swap(conn, table, old, later, None, known=False)
    assert [(a.column.name, a.after) for a in evolution.added] == [("c", "v")]
    assert [(c.name, c.column_type) for c in evolution.altered] == [("v", "varchar(40)")]


def test_a_dropped_column_is_followed(mariadb: MariaDBServer, fresh_db: str, conn: Any) -> None:
    table, old, before = _swap(mariadb, fresh_db, conn, "DROP COLUMN e")
    evolution = follow_swap(conn, table, old, before, None, known=True)
    assert evolution.dropped == ("e",) and evolution.added == ()
    assert [c.name for c in evolution.schema.columns] == ["id", "v", "n"]


def test_a_rebuild_changes_nothing(mariadb: MariaDBServer, fresh_db: str, conn: Any) -> None:
    table, old, before = _swap(mariadb, fresh_db, conn, "ENGINE=InnoDB, ADD INDEX (v)")
    evolution = follow_swap(conn, table, old, before, None, known=True)
    assert evolution.schema == before
    assert (evolution.added, evolution.dropped, evolution.altered) == ((), (), ())


@pytest.mark.parametrize(
    ("alter", "known", "drop_old", "why"),
    [
        ("CHANGE v w VARCHAR(20)", True, False, "a renamed column looks the same"),
        ("DROP COLUMN v, ADD COLUMN w INT", True, False, "a renamed column looks the same"),
        ("MODIFY v VARCHAR(5)", True, False, "from varchar.20. to varchar.5.: shorter"),
        ("MODIFY n BIGINT", False, False, "changed how 'n' is decoded"),
        ("MODIFY e ENUM('a','b','c')", False, False, "changed how 'e' is decoded"),
        ("ADD COLUMN c INT", False, True, "is gone"),
    ],
)
def test_swaps_that_stop_the_table(
    mariadb: MariaDBServer, fresh_db: str, conn: Any, alter: str, known: bool, drop_old: bool, why: str
) -> None:
    table, old, before = _swap(mariadb, fresh_db, conn, alter)
    if drop_old:
        mariadb.execute(f"DROP TABLE `{fresh_db}`._t_del")
    schema = before if known else load_table_schema(conn, table)
    with pytest.raises(SourceError, match=why):
        follow_swap(conn, table, old, schema, None, known=known)
