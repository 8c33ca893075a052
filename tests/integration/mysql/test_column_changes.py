"""``engine.column_changes.evolve`` against a real MariaDB: which column changes are followed, and
which stop the table because the definition reloaded after the statement cannot vouch for it."""

from __future__ import annotations

from typing import Any

import pytest

from sparkcdc.core.tables import TableId
from sparkcdc.engine.column_changes import evolve
from sparkcdc.mysql.ddl import DdlKind, TableDdl, parse_ddl
from sparkcdc.mysql.errors import SourceError
from sparkcdc.mysql.schema import TableSchema, load_table_schema
from sparkcdc.testing.mariadb import MariaDBServer


def _setup(mariadb: MariaDBServer, db: str, conn: Any) -> tuple[TableId, TableSchema]:
    mariadb.execute(
        f"CREATE TABLE `{db}`.t "
        "(id INT PRIMARY KEY, v VARCHAR(20), n TINYINT UNSIGNED NOT NULL, d DECIMAL(6,2))"
    )
    table = TableId(db, "t")
    return table, load_table_schema(conn, table)


def _entry(sql: str, db: str) -> TableDdl:
    (entry,) = parse_ddl(sql, db)
    assert entry.kind is DdlKind.EVOLVE, entry
    return entry


def test_widenings_and_renames_are_followed(mariadb: MariaDBServer, fresh_db: str, conn: Any) -> None:
    table, old = _setup(mariadb, fresh_db, conn)
    sql = "ALTER TABLE t RENAME COLUMN id TO tid, MODIFY n SMALLINT NULL, CHANGE d dd DECIMAL(8,3), ADD c INT"
    mariadb.execute(sql.replace("ALTER TABLE t", f"ALTER TABLE `{fresh_db}`.t"))
    evolution = evolve(conn, _entry(sql, fresh_db), old, None, loaded_before=True)
    assert evolution.renamed == (("id", "tid"), ("d", "dd"))
    assert [(c.name, c.column_type, c.nullable) for c in evolution.altered] == [
        ("n", "smallint(6)", True),
        ("dd", "decimal(8,3)", True),
    ]
    assert [a.column.name for a in evolution.added] == ["c"]
    assert evolution.schema.row_key == ("tid",) and not evolution.decoded_late
    assert table == evolution.table


@pytest.mark.parametrize(
    ("sql", "why"),
    [
        ("ALTER TABLE t MODIFY v VARCHAR(10)", "shorter"),
        ("ALTER TABLE t MODIFY n TINYINT NOT NULL", "smaller range"),
        ("ALTER TABLE t MODIFY d DECIMAL(6,1)", "fewer digits"),
        ("ALTER TABLE t MODIFY v INT", "another type family"),
        ("ALTER TABLE t MODIFY d DECIMAL(6,2) NOT NULL", "became NOT NULL"),
    ],
)
def test_changes_that_may_rewrite_values_stop_the_table(
    mariadb: MariaDBServer, fresh_db: str, conn: Any, sql: str, why: str
) -> None:
    _table, old = _setup(mariadb, fresh_db, conn)
    mariadb.execute(sql.replace("ALTER TABLE t", f"ALTER TABLE `{fresh_db}`.t"))
    with pytest.raises(SourceError, match=why):
        evolve(conn, _entry(sql, fresh_db), old, None, loaded_before=True)


def test_a_definition_that_cannot_vouch_for_the_statement_stops_the_table(
    mariadb: MariaDBServer, fresh_db: str, conn: Any
) -> None:
    table, old = _setup(mariadb, fresh_db, conn)
    first = "ALTER TABLE t MODIFY v VARCHAR(10)"  # narrowing, then widened again before it is judged
    mariadb.execute(first.replace("ALTER TABLE t", f"ALTER TABLE `{fresh_db}`.t"))
    mariadb.execute(f"ALTER TABLE `{fresh_db}`.t MODIFY v VARCHAR(40)")
    with pytest.raises(SourceError, match="changed again since"):
        evolve(conn, _entry(first, fresh_db), old, None, loaded_before=True)

    # Resumed from before a widening with the definition loaded after it: the definition before
    # it is unknown, so it cannot be told whether values were kept.
    after = load_table_schema(conn, table)
    widen = "ALTER TABLE t MODIFY v VARCHAR(40)"
    with pytest.raises(SourceError, match="resumed from before this statement"):
        evolve(conn, _entry(widen, fresh_db), after, None, loaded_before=False)
    # Loaded before it and still the same: a change of comment or default, nothing to follow.
    assert evolve(conn, _entry(widen, fresh_db), after, None, loaded_before=True).altered == ()


def test_a_rename_met_with_the_later_definition(mariadb: MariaDBServer, fresh_db: str, conn: Any) -> None:
    table, _old = _setup(mariadb, fresh_db, conn)
    sql = "ALTER TABLE t RENAME COLUMN v TO w"
    mariadb.execute(sql.replace("ALTER TABLE t", f"ALTER TABLE `{fresh_db}`.t"))
    later = load_table_schema(conn, table)
    evolution = evolve(conn, _entry(sql, fresh_db), later, None, loaded_before=False)
    assert evolution.renamed == (("v", "w"),) and evolution.decoded_late


def test_statements_judged_behind_the_source(mariadb: MariaDBServer, fresh_db: str, conn: Any) -> None:
    """A stream that lags reloads definitions changed again since: the definition it goes on with
    is the one as of each statement, so the next statement is judged against what preceded it."""
    table, old = _setup(mariadb, fresh_db, conn)
    first, second = "ALTER TABLE t RENAME COLUMN id TO tid", "ALTER TABLE t MODIFY n SMALLINT NOT NULL"
    for sql in (first, second):
        mariadb.execute(sql.replace("ALTER TABLE t", f"ALTER TABLE `{fresh_db}`.t"))
    renamed = evolve(conn, _entry(first, fresh_db), old, None, loaded_before=True)
    assert renamed.altered == ()
    n = renamed.schema.column("n")  # rows before the MODIFY are decoded as they were written
    assert (n.column_type, n.unsigned) == ("tinyint(3) unsigned", True), n
    assert renamed.schema.column_names == ("tid", "v", "n", "d")
    widened = evolve(conn, _entry(second, fresh_db), renamed.schema, None, loaded_before=True)
    assert [c.column_type for c in widened.altered] == ["smallint(6)"]

    # An added column changed again before its ADD is judged: its rows cannot be decoded as written.
    add = "ALTER TABLE t ADD c TINYINT UNSIGNED"
    mariadb.execute(add.replace("ALTER TABLE t", f"ALTER TABLE `{fresh_db}`.t"))
    mariadb.execute(f"ALTER TABLE `{fresh_db}`.t MODIFY c SMALLINT")
    with pytest.raises(SourceError, match="added column 'c' is smallint"):
        evolve(conn, _entry(add, fresh_db), widened.schema, None, loaded_before=True)
    assert table == widened.table


def test_a_key_column_renamed_by_a_later_statement(mariadb: MariaDBServer, fresh_db: str, conn: Any) -> None:
    """A stream lagging behind a later rename of the key column meets the key under its later name
    in the reloaded definition: the statement before is followed with the key as of its time, and
    the rename judged where it comes (a key change here would have stopped the table)."""
    _table, old = _setup(mariadb, fresh_db, conn)
    first = "ALTER TABLE t RENAME COLUMN v TO w, ADD c INT DEFAULT 3"
    second = "ALTER TABLE t RENAME COLUMN id TO tid"
    for sql in (first, second):
        mariadb.execute(sql.replace("ALTER TABLE t", f"ALTER TABLE `{fresh_db}`.t"))
    evolution = evolve(conn, _entry(first, fresh_db), old, None, loaded_before=True)
    schema = evolution.schema
    assert (schema.row_key, schema.chunk_key, schema.primary_key) == (("id",), ("id",), ("id",))
    assert evolution.renamed == (("v", "w"),) and [a.column.name for a in evolution.added] == ["c"]
    assert set(schema.column_names) == {"id", "w", "n", "d", "c"}
    renamed = evolve(conn, _entry(second, fresh_db), schema, None, loaded_before=True)
    assert renamed.renamed == (("id", "tid"),)
    assert (renamed.schema.row_key, renamed.schema.primary_key) == (("tid",), ("tid",))

    # A key column dropped by a later statement is judged there too; the earlier ADD is followed.
    mariadb.execute(f"ALTER TABLE `{fresh_db}`.t ADD e INT")
    mariadb.execute(f"ALTER TABLE `{fresh_db}`.t DROP PRIMARY KEY, DROP COLUMN tid, ADD PRIMARY KEY (n)")
    add = _entry("ALTER TABLE t ADD e INT", fresh_db)
    added = evolve(conn, add, renamed.schema, None, loaded_before=True)
    assert added.schema.row_key == ("tid",) and "tid" in added.schema.column_names
