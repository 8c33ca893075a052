"""What differs between target databases: connecting, quoting, DDL, value adaptation."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks.base import SinkError

if TYPE_CHECKING:
    from sparkcdc.sinks.jdbc import JdbcSinkConfig


class Dialect(Protocol):
    def connect(self, config: JdbcSinkConfig) -> Any: ...
    def quote(self, name: str) -> str: ...
    def begin(self, cur: Any) -> None: ...
    def create_table_sql(self, schema: TableSchema) -> str: ...
    def table_exists(self, cur: Any, table: str) -> bool: ...
    def insert_sql(self, table: str, columns: Sequence[str]) -> str: ...
    def adapt_row(self, row: tuple[Any, ...]) -> tuple[Any, ...]: ...
    def describe_error(self, err: Exception) -> str: ...


def _naive_utc(value: Any) -> Any:
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return value


class MySqlDialect:
    """MySQL and MariaDB targets: the source's own column types are reused verbatim."""

    def connect(self, config: JdbcSinkConfig) -> Any:
        import pymysql

        try:
            conn = pymysql.connect(
                host=config.host,
                port=config.port,
                user=config.user,
                password=config.password,
                charset="utf8mb4",
                autocommit=False,
                init_command="SET time_zone = '+00:00'",
                connect_timeout=10,
            )
            with conn.cursor() as cur:
                cur.execute(f"CREATE DATABASE IF NOT EXISTS {self.quote(config.database)}")
                cur.execute(f"USE {self.quote(config.database)}")
                cur.execute("SELECT @@max_allowed_packet")
                (packet,) = cur.fetchone()
            conn.commit()
        except pymysql.MySQLError as err:
            raise SinkError(
                f"cannot open the sink {config.describe()} as user {config.user!r}: "
                f"{self.describe_error(err)}; "
                "check spec.sink.url, spec.sink.user and the secret named by spec.sink.passwordSecretRef"
            ) from None
        self.max_stmt_length = max(64 * 1024, int(packet) - 64 * 1024)
        return conn

    def quote(self, name: str) -> str:
        return "`" + name.replace("`", "``") + "`"

    def begin(self, cur: Any) -> None:
        cur.max_stmt_length = self.max_stmt_length
        cur.execute("START TRANSACTION")

    def create_table_sql(self, schema: TableSchema) -> str:
        cols = []
        for col in schema.columns:
            collate = f" COLLATE {col.collation}" if col.collation else ""
            null = "" if col.nullable else " NOT NULL"
            cols.append(f"{self.quote(col.name)} {col.column_type}{collate}{null}")
        pk = ", ".join(self.quote(c) for c in schema.row_key)
        cols.append(f"PRIMARY KEY ({pk})")
        return (
            f"CREATE TABLE IF NOT EXISTS {self.quote(schema.table.table)} (\n  " + ",\n  ".join(cols) + "\n)"
        )

    def table_exists(self, cur: Any, table: str) -> bool:
        cur.execute(
            "SELECT COUNT(*) FROM information_schema.TABLES"
            " WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s",
            (table,),
        )
        return bool(cur.fetchone()[0])

    def insert_sql(self, table: str, columns: Sequence[str]) -> str:
        names = ", ".join(self.quote(c) for c in columns)
        marks = ", ".join(["%s"] * len(columns))
        return f"INSERT INTO {self.quote(table)} ({names}) VALUES ({marks})"

    def adapt_row(self, row: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(_naive_utc(v) for v in row)

    def describe_error(self, err: Exception) -> str:
        args = getattr(err, "args", ())
        if len(args) >= 2 and isinstance(args[0], int):
            return f"error {args[0]}: {args[1]}"
        return str(err) or type(err).__name__


def dialect_for(scheme: str) -> Dialect:
    if scheme in ("mysql", "mariadb"):
        return MySqlDialect()
    raise SinkError(f"spec.sink.url: the scheme {scheme!r} is not supported yet; use mysql:// or mariadb://")
