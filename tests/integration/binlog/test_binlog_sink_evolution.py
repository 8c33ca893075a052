"""``JdbcSink.evolve_table`` and ``truncate_table`` on real targets (MariaDB and PostgreSQL): ADD
COLUMN with the source's default reaches the rows that were there, DROP COLUMN removes it,
RENAME COLUMN (the key's too) and widenings change the target, TRUNCATE empties it, and
repeating a change (a replay after a crash between the target's ALTER and the checkpoint) does
nothing more."""

from __future__ import annotations

import uuid

from sparkcdc.core.microbatch import TableChanges
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.columns import Column
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks.base import AddedColumn, ColumnChanges
from sparkcdc.sinks.jdbc import JdbcSink, JdbcSinkConfig
from sparkcdc.testing.mariadb import MariaDBServer
from sparkcdc.testing.postgres import PostgresServer, quote_ident

T = TableId("shop", "items")
ID = Column("id", 1, "int", "int(11)", nullable=False)
NAME = Column("name", 2, "varchar", "varchar(20)", charset="utf8mb4", collation="utf8mb4_general_ci")
OLD = Column("old", 3, "int", "int(11)")
QTY = Column("qty", 3, "int", "int(11)", nullable=False)


def _schema(*columns: Column) -> TableSchema:
    return TableSchema(T, columns, ("id",), ("id",), ("id",))


def _exercise(sink: JdbcSink, rows: object) -> None:
    before = _schema(ID, NAME, OLD)
    sink.prepare([before])
    sink.apply_changes(
        before, TableChanges(T, {(1,): {"id": 1, "name": "a", "old": 5}, (2,): {"id": 2, "name": "b"}}, [])
    )
    after = _schema(ID, NAME, QTY)
    change = ColumnChanges((AddedColumn(QTY, "7", "name"),), ("old",))
    assert len(sink.evolve_table(after, change)) == 2
    assert sink.evolve_table(after, change) == []  # replayed: nothing left to do
    sink.apply_changes(after, TableChanges(T, {(3,): {"id": 3, "name": "c", "qty": 1}}, []))


def _rename_widen_truncate(sink: JdbcSink) -> TableSchema:
    """The key renamed, a column renamed and widened, NOT NULL dropped; replayed, nothing but the
    harmless MODIFY is run again; a TRUNCATE empties the table in the sink's transaction."""
    key = Column("key", 1, "int", "int(11)", nullable=False)
    label = Column("label", 2, "varchar", "varchar(60)", charset="utf8mb4", collation="utf8mb4_general_ci")
    qty = Column("qty", 3, "bigint", "bigint(20)")
    renamed = TableSchema(T, (key, label, qty), ("key",), ("key",), ("key",))
    change = ColumnChanges(renamed=(("id", "key"), ("name", "label")), altered=(label, qty))
    done = sink.evolve_table(renamed, change)
    assert sum("RENAME COLUMN" in s for s in done) == 2, done
    assert not any("RENAME" in s for s in sink.evolve_table(renamed, change))
    sink.apply_changes(renamed, TableChanges(T, {(4,): {"key": 4, "label": "l" * 60, "qty": 2**40}}, []))
    assert sink.truncate_table(renamed, BinlogOffset("b.000002", 10), "TRUNCATE items")
    sink.apply_changes(renamed, TableChanges(T, {(5,): {"key": 5, "label": "after", "qty": None}}, []))
    return renamed


def test_mariadb_target(mariadb: MariaDBServer) -> None:
    database = f"evo_{uuid.uuid4().hex[:8]}_replica"
    assert mariadb.cdc_user and mariadb.cdc_password
    config = JdbcSinkConfig(
        "mysql", mariadb.host, mariadb.port, database, mariadb.cdc_user, mariadb.cdc_password
    )
    sink = config.open()
    try:
        _exercise(sink, None)
        columns = mariadb.execute(
            "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s"
            " ORDER BY ORDINAL_POSITION",
            (database, "items"),
        )
        assert [c[0] for c in columns] == ["id", "name", "qty"]
        rows = mariadb.execute(f"SELECT id, name, qty FROM `{database}`.items ORDER BY id")
        assert rows == [(1, "a", 7), (2, "b", 7), (3, "c", 1)]
        _rename_widen_truncate(sink)
        columns = mariadb.execute(
            "SELECT COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE FROM information_schema.COLUMNS "
            "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = 'items' ORDER BY ORDINAL_POSITION",
            (database,),
        )
        assert [tuple(c) for c in columns] == [
            ("key", "int(11)", "NO"),
            ("label", "varchar(60)", "YES"),
            ("qty", "bigint(20)", "YES"),
        ]
        assert mariadb.execute(f"SELECT * FROM `{database}`.items") == [(5, "after", None)]
    finally:
        sink.close()
        mariadb.execute(f"DROP DATABASE IF EXISTS `{database}`")


def test_postgres_target(postgres: PostgresServer) -> None:
    database = f"evo_{uuid.uuid4().hex[:8]}"
    owner = quote_ident(postgres.cdc_user or "cdc")
    postgres.execute(f"CREATE DATABASE {quote_ident(database)} OWNER {owner}", database="postgres")
    assert postgres.cdc_user and postgres.cdc_password
    config = JdbcSinkConfig(
        "postgresql", postgres.host, postgres.port, database, postgres.cdc_user, postgres.cdc_password
    )
    sink = config.open()
    try:
        _exercise(sink, None)
        columns = postgres.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'items'"
            " ORDER BY ordinal_position",
            database=database,
        )
        assert [c[0] for c in columns] == ["id", "name", "qty"]
        rows = postgres.execute("SELECT id, name, qty FROM items ORDER BY id", database=database)
        assert [tuple(r) for r in rows] == [(1, "a", 7), (2, "b", 7), (3, "c", 1)]
        _rename_widen_truncate(sink)
        columns = postgres.execute(
            "SELECT column_name, data_type, is_nullable FROM information_schema.columns "
            "WHERE table_name = 'items' ORDER BY ordinal_position",
            database=database,
        )
        assert [tuple(c) for c in columns] == [
            ("key", "integer", "NO"),
            ("label", "text", "YES"),
            ("qty", "bigint", "YES"),
        ]
        rows = postgres.execute("SELECT * FROM items", database=database)
        assert [tuple(r) for r in rows] == [(5, "after", None)]
    finally:
        sink.close()
        postgres.execute(f"DROP DATABASE IF EXISTS {quote_ident(database)} WITH (FORCE)", database="postgres")
