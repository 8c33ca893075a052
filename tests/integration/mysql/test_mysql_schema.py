from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from sparkcdc.core.tables import TableId
from sparkcdc.mysql.connection import SourceConfig, connect
from sparkcdc.mysql.errors import SourceError
from sparkcdc.mysql.schema import load_table_schema
from sparkcdc.testing.mariadb import MariaDBServer


@pytest.fixture
def conn(source_config: SourceConfig) -> Iterator[Any]:
    connection = connect(source_config)
    try:
        yield connection
    finally:
        connection.close()


def test_columns_keys_and_arrow_schema(mariadb: MariaDBServer, fresh_db: str, conn: Any) -> None:
    mariadb.execute(
        f"CREATE TABLE `{fresh_db}`.orders (tenant VARCHAR(20) COLLATE utf8mb4_unicode_ci NOT NULL, "
        "id BIGINT UNSIGNED NOT NULL, amount DECIMAL(12,3) NOT NULL, state ENUM('new','paid') NULL, "
        "created DATETIME(3), PRIMARY KEY (tenant, id))"
    )
    schema = load_table_schema(conn, TableId(fresh_db, "orders"))
    assert schema.column_names == ("tenant", "id", "amount", "state", "created")
    assert schema.primary_key == schema.chunk_key == schema.row_key == ("tenant", "id")
    tenant, ident, amount, state, created = schema.columns
    assert (tenant.data_type, tenant.charset, tenant.collation, tenant.nullable) == (
        "varchar",
        "utf8mb4",
        "utf8mb4_unicode_ci",
        False,
    )
    assert ident.unsigned and ident.column_type == "bigint(20) unsigned"
    assert (amount.precision, amount.scale) == (12, 3)
    assert state.members == ("new", "paid") and state.nullable
    assert created.datetime_precision == 3
    assert schema.key_collations() == ("utf8mb4_unicode_ci", None)
    assert not schema.is_numeric_single_key
    assert schema.arrow_schema().types == [
        pa.string(),
        pa.decimal128(20, 0),
        pa.decimal128(12, 3),
        pa.string(),
        pa.timestamp("us"),
    ]


def test_no_primary_key_and_no_unique_key_is_refused(mariadb: MariaDBServer, conn: Any) -> None:
    mariadb.execute("CREATE DATABASE IF NOT EXISTS shop")
    mariadb.execute("CREATE OR REPLACE TABLE shop.logs (line TEXT, at DATETIME, UNIQUE KEY (at))")  # nullable
    with pytest.raises(SourceError) as caught:
        load_table_schema(conn, TableId("shop", "logs"))
    assert str(caught.value) == (
        "table shop.logs has no primary key and no unique NOT NULL key, so it cannot be split into chunks; "
        'add a primary key or set spec.snapshot.chunkKeyColumns["shop.logs"] to a unique NOT NULL column'
    )


def test_missing_table_is_named(conn: Any, fresh_db: str) -> None:
    with pytest.raises(SourceError, match=rf"table {fresh_db}\.nope does not exist on the source"):
        load_table_schema(conn, TableId(fresh_db, "nope"))


def test_unique_not_null_key_stands_in_for_the_primary_key(
    mariadb: MariaDBServer, fresh_db: str, conn: Any
) -> None:
    mariadb.execute(
        f"CREATE TABLE `{fresh_db}`.u (a INT NULL, b INT NOT NULL, c INT NOT NULL, d INT NOT NULL, "
        "UNIQUE KEY wide (c, d), UNIQUE KEY nullable (a), UNIQUE KEY narrow (b))"
    )
    schema = load_table_schema(conn, TableId(fresh_db, "u"))
    assert schema.primary_key == ()
    assert schema.row_key == schema.chunk_key == ("b",)
    assert schema.is_numeric_single_key
    override = load_table_schema(conn, TableId(fresh_db, "u"), ["c", "d"])
    assert override.row_key == override.chunk_key == ("c", "d")


def test_chunk_key_override(mariadb: MariaDBServer, fresh_db: str, conn: Any) -> None:
    mariadb.execute(
        f"CREATE TABLE `{fresh_db}`.o (t INT, id INT, x INT, e ENUM('a') NOT NULL, "
        "PRIMARY KEY (t, id), UNIQUE (e))"
    )
    table = TableId(fresh_db, "o")
    prefix = load_table_schema(conn, table, ["t"])
    assert prefix.chunk_key == ("t",) and prefix.row_key == ("t", "id") and not prefix.chunk_key_is_unique
    with pytest.raises(SourceError, match=r"names column 'nope', which table .* does not have"):
        load_table_schema(conn, table, ["nope"])
    with pytest.raises(SourceError, match=r"is \['x'\], which is neither a unique NOT NULL key"):
        load_table_schema(conn, table, ["x"])
    with pytest.raises(SourceError, match=r"would be split on column 'e' of type enum\('a'\)"):
        load_table_schema(conn, table, ["e"])
