from __future__ import annotations

import threading
import time
from typing import Any

import pyarrow as pa
import pytest

from sparkcdc.core.tables import TableId
from sparkcdc.mysql.errors import SourceError
from sparkcdc.mysql.schema import load_table_schema
from sparkcdc.testing.mariadb import MariaDBServer


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
        'add a primary key, or set spec.snapshot.chunkKeyColumns["shop.logs"] to columns to split it on '
        '(and spec.snapshot.sinkKeyColumns["shop.logs"] to the columns that identify a row, else all '
        "columns do)"
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
    # A non-unique chunk key of a keyed table: rows stay identified by the primary key.
    other = load_table_schema(conn, table, ["x"])
    assert (other.chunk_key, other.row_key, other.row_key_unique) == (("x",), ("x", "t", "id"), True)
    with pytest.raises(SourceError, match=r"would be split on column 'e' of type enum\('a'\)"):
        load_table_schema(conn, table, ["e"])


def test_keyless_table_with_a_non_unique_chunk_key(mariadb: MariaDBServer, fresh_db: str, conn: Any) -> None:
    """Flink CDC's products_no_pk: no key at all, chunk key ``type``."""
    mariadb.execute(
        f"CREATE TABLE `{fresh_db}`.products_no_pk (id INT NOT NULL, type VARCHAR(20) NOT NULL, "
        "name VARCHAR(255) NOT NULL, weight DECIMAL(10,3) NOT NULL)"
    )
    table = TableId(fresh_db, "products_no_pk")
    full = load_table_schema(conn, table, ["type"])
    assert full.chunk_key == ("type",) and full.row_key == ("type", "id", "name", "weight")
    assert not full.row_key_unique and full.primary_key == ()
    chosen = load_table_schema(conn, table, ["type"], ["id"])
    assert chosen.row_key == ("type", "id") and not chosen.row_key_unique
    with pytest.raises(SourceError, match=r'sinkKeyColumns\["[^"]+"\] names column \'nope\''):
        load_table_schema(conn, table, ["type"], ["nope"])


def test_keyless_table_without_a_full_row_identity_names_sink_key_columns(
    mariadb: MariaDBServer, fresh_db: str, conn: Any
) -> None:
    mariadb.execute(f"CREATE TABLE `{fresh_db}`.notes (id INT NOT NULL, body TEXT NOT NULL, at DATETIME)")
    table = TableId(fresh_db, "notes")
    with pytest.raises(SourceError) as caught:
        load_table_schema(conn, table, ["id"])
    assert "column 'body' is text" in str(caught.value)
    assert f'set spec.snapshot.sinkKeyColumns["{table}"] to NOT NULL columns' in str(caught.value)
    assert load_table_schema(conn, table, ["id"], ["id"]).row_key == ("id",)


def test_a_key_column_renamed_while_the_schema_is_read(
    mariadb: MariaDBServer, fresh_db: str, conn: Any
) -> None:
    """information_schema is not transactional: a rename between the columns query and the keys
    query once paired the old columns with the renamed key (a KeyError that stopped a pipeline)."""
    mariadb.execute(f"CREATE TABLE `{fresh_db}`.t (id INT PRIMARY KEY, v INT)")
    stop = threading.Event()
    renames = [0]

    def rename_back_and_forth() -> None:
        alter = mariadb.root_connection()
        try:
            names = ("id", "tid")
            while not stop.is_set():
                old, new = names[renames[0] % 2], names[(renames[0] + 1) % 2]
                with alter.cursor() as cur:
                    cur.execute(f"ALTER TABLE `{fresh_db}`.t RENAME COLUMN {old} TO {new}")
                renames[0] += 1
                time.sleep(0.005)  # a busy schema, not one that never holds still
        finally:
            alter.close()

    renamer = threading.Thread(target=rename_back_and_forth, daemon=True)
    renamer.start()
    keys = set()
    try:
        for _ in range(400):
            schema = load_table_schema(conn, TableId(fresh_db, "t"))
            assert schema.column_names[1:] == ("v",) and schema.row_key == schema.column_names[:1], schema
            keys.add(schema.row_key)
    finally:
        stop.set()
        renamer.join(10)
    assert renames[0] > 20 and keys == {("id",), ("tid",)}, (renames[0], keys)
