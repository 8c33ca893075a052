"""Per-chunk checksums computed by the databases: the source and each JDBC sink dialect.

A chunk's checksum is ``(rows, digest)``: ``COUNT(*)`` and the exact sum of a 60-bit hash of
every row's canonical text (``canonical.py``) — the first 15 hex digits of its MD5. A sum does
not depend on row order, is computed in one pass by the database, and changes when any row is
added, removed or altered (a random change goes unnoticed with probability 2**-60). Only plain
``SELECT``s run: InnoDB answers them from a consistent read view without locking anything.

The source checksum also returns the binlog position its read view corresponds to (exact on
MariaDB through ``START TRANSACTION WITH CONSISTENT SNAPSHOT`` and ``binlog_snapshot_*``; on
MySQL the position right after the read, which is no earlier than the view), so a re-check can
wait until the pipeline has applied the binlog that far (``recheck.py``).

Sinks: MySQL/MariaDB targets have the source's column types (``sinks.dialects``) and so the
source's order and range predicates; PostgreSQL targets compare numbers, temporal values and
bytes in MySQL's order too, but not strings, so a chunk key with a text column is filtered like
``PostgresDialect.delete_range`` does — candidates in SQL, the exact range with ``KeyOrder`` —
and those chunks' row hashes are summed in Python.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

import pymysql

from sparkcdc.core.keys import KeyOrder
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.splits import SnapshotSplit
from sparkcdc.mysql.columns import quote_name
from sparkcdc.mysql.flavor import ServerFlavor
from sparkcdc.mysql.queries import current_offset
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.mysql.sql import range_predicate, table_name
from sparkcdc.sinks.base import SinkConfig, SinkError, writes_in_driver
from sparkcdc.sinks.jdbc import sql as sink_sql
from sparkcdc.sinks.jdbc.config import JdbcSinkConfig
from sparkcdc.sinks.targets import visible
from sparkcdc.verify.canonical import HASH_HEX_DIGITS, mysql_row_text, postgres_row_text
from sparkcdc.verify.sums import ChunkChecksum, RowHashes

__all__ = [
    "ChunkChecksum",
    "RowHashes",
    "SinkChecker",
    "mysql_checksum_sql",
    "open_sink_checker",
    "source_checksum",
    "source_row_hashes",
]

_T = TypeVar("_T")


# Row key text (the canonical text of the row key columns) -> the row's 60-bit hash.
def _escape(sql: str) -> str:
    """A SQL fragment made safe for drivers that format ``%s`` parameters into the text."""
    return sql.replace("%", "%%")


def _mysql_hash(schema: TableSchema) -> str:
    row = _escape(mysql_row_text(schema.columns))
    return f"CAST(CONV(SUBSTRING(MD5({row}), 1, {HASH_HEX_DIGITS}), 16, 10) AS UNSIGNED)"


def mysql_checksum_sql(
    schema: TableSchema, split: SnapshotSplit, table: str, *, sink: bool = False
) -> tuple[str, list[Any]]:
    """``SELECT COUNT(*), SUM(hash)`` over ``split``'s key range of ``table`` (MariaDB/MySQL);
    in a ``sink`` target merged by a route, over this table's rows only."""
    where, params = range_predicate(schema.chunk_key_columns, split.start, split.end)
    if sink:
        where, params = visible(schema, where, params, quote_name)
    sql = f"SELECT COUNT(*), COALESCE(SUM({_mysql_hash(schema)}), 0) FROM {table} WHERE {where}"
    return sql, params


def mysql_row_hashes_sql(
    schema: TableSchema, split: SnapshotSplit, table: str, *, sink: bool = False
) -> tuple[str, list[Any]]:
    """``SELECT key text, hash`` of every row in ``split``'s key range of ``table``."""
    where, params = range_predicate(schema.chunk_key_columns, split.start, split.end)
    if sink:
        where, params = visible(schema, where, params, quote_name)
    key = _escape(mysql_row_text(schema.row_key_columns))
    return f"SELECT {key}, {_mysql_hash(schema)} FROM {table} WHERE {where}", params


def _fetch_hashes(cur: Any, sql: str, params: list[Any]) -> RowHashes:
    cur.execute(sql, params)
    return {_text(key): int(value) for key, value in cur.fetchall()}


def _fetch_checksum(cur: Any, sql: str, params: list[Any]) -> ChunkChecksum:
    cur.execute(sql, params)
    row = cur.fetchone()
    return ChunkChecksum(int(row[0]), int(row[1]))


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, (bytes, bytearray)) else str(value)


def _consistent_read(conn: Any, flavor: ServerFlavor, read: Callable[[Any], _T]) -> tuple[_T, BinlogOffset]:
    """``read(cursor)`` in one read view, and the binlog position of that view."""
    with conn.cursor(pymysql.cursors.Cursor) as cur:
        if not flavor.is_mariadb:
            result = read(cur)
            return result, current_offset(conn, flavor)
        cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        try:
            cur.execute("SHOW STATUS LIKE 'binlog_snapshot_%'")
            status = {_text(k).lower(): _text(v) for k, v in cur.fetchall()}
            result = read(cur)
        finally:
            cur.execute("COMMIT")
    file, pos = status.get("binlog_snapshot_file", ""), status.get("binlog_snapshot_position", "")
    if not file or not pos.isdigit():
        return result, current_offset(conn, flavor)
    return result, BinlogOffset(file, int(pos))


def source_checksum(
    conn: Any, flavor: ServerFlavor, schema: TableSchema, split: SnapshotSplit
) -> tuple[ChunkChecksum, BinlogOffset]:
    """The chunk's checksum on the source and the binlog position of the read (module docstring)."""
    sql, params = mysql_checksum_sql(schema, split, table_name(schema.table))
    return _consistent_read(conn, flavor, lambda cur: _fetch_checksum(cur, sql, params))


def source_row_hashes(
    conn: Any, flavor: ServerFlavor, schema: TableSchema, split: SnapshotSplit
) -> tuple[RowHashes, BinlogOffset]:
    """Every row's hash in the chunk, by row key, and the binlog position of the read."""
    sql, params = mysql_row_hashes_sql(schema, split, table_name(schema.table))
    return _consistent_read(conn, flavor, lambda cur: _fetch_hashes(cur, sql, params))


class SinkChecker(Protocol):
    def checksum(self, schema: TableSchema, split: SnapshotSplit) -> ChunkChecksum: ...

    def row_hashes(self, schema: TableSchema, split: SnapshotSplit) -> RowHashes:
        """Every row's hash in the chunk, by the canonical text of its row key."""

    def close(self) -> None: ...


class MySqlSinkChecker:
    """A MySQL/MariaDB sink: the same column types, collations and SQL as the source."""

    def __init__(self, config: JdbcSinkConfig) -> None:
        try:
            self._conn = pymysql.connect(
                host=config.host,
                port=config.port,
                user=config.user,
                password=config.password,
                database=config.database,
                charset="utf8mb4",
                autocommit=True,
                init_command="SET time_zone = '+00:00'",
                connect_timeout=10,
            )
        except pymysql.MySQLError as err:
            raise SinkError(f"cannot open the sink {config.describe()} to verify it: {err}") from None
        self._describe = config.describe()

    def checksum(self, schema: TableSchema, split: SnapshotSplit) -> ChunkChecksum:
        sql, params = mysql_checksum_sql(schema, split, self._table(schema), sink=True)
        return self._run(schema, lambda cur: _fetch_checksum(cur, sql, params))

    def row_hashes(self, schema: TableSchema, split: SnapshotSplit) -> RowHashes:
        sql, params = mysql_row_hashes_sql(schema, split, self._table(schema), sink=True)
        return self._run(schema, lambda cur: _fetch_hashes(cur, sql, params))

    @staticmethod
    def _table(schema: TableSchema) -> str:
        return "`" + schema.sink_name.replace("`", "``") + "`"

    def _run(self, schema: TableSchema, read: Callable[[Any], _T]) -> _T:
        try:
            with self._conn.cursor() as cur:
                return read(cur)
        except pymysql.MySQLError as err:
            raise SinkError(
                f"checksumming {schema.table} in the sink {self._describe} failed: {err}"
            ) from None

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._conn.close()


class PostgresSinkChecker:
    """A PostgreSQL sink, its columns typed by ``sinks.postgres.pg_type``."""

    def __init__(self, config: JdbcSinkConfig) -> None:
        from sparkcdc.sinks.jdbc.postgres import PostgresDialect

        self._dialect = PostgresDialect()
        self._conn = self._dialect.connect(config)
        self._conn.autocommit = True
        self._describe = config.describe()

    def _hash(self, schema: TableSchema) -> str:
        row = _escape(postgres_row_text(schema.columns, self._dialect.quote))
        return f"('x' || substr(md5(convert_to({row}, 'UTF8')), 1, {HASH_HEX_DIGITS}))::bit(60)::bigint"

    def checksum(self, schema: TableSchema, split: SnapshotSplit) -> ChunkChecksum:
        if any(c.is_text for c in schema.chunk_key_columns):
            return ChunkChecksum.of(self.row_hashes(schema, split))
        where, params = sink_sql.range_predicate(
            schema.chunk_key, split.start, split.end, self._dialect.quote
        )
        where, params = visible(schema, where, params, self._dialect.quote)
        table = self._dialect.quote(schema.sink_name)
        sql = f"SELECT count(*), coalesce(sum({self._hash(schema)}), 0) FROM {table} WHERE {where}"
        return self._run(schema, lambda cur: _fetch_checksum(cur, sql, params))

    def row_hashes(self, schema: TableSchema, split: SnapshotSplit) -> RowHashes:
        """Rows of the range; for a text chunk key the candidates are filtered with ``KeyOrder``."""
        from sparkcdc.sinks.jdbc.postgres import candidates_predicate

        text_key = any(c.is_text for c in schema.chunk_key_columns)
        if text_key:
            where, params = candidates_predicate(schema, split.start, split.end)
        else:
            where, params = sink_sql.range_predicate(
                schema.chunk_key, split.start, split.end, self._dialect.quote
            )
        where, params = visible(schema, where, params, self._dialect.quote)
        keys = ", ".join(self._dialect.quote(c) for c in schema.chunk_key)
        key_text = _escape(postgres_row_text(schema.row_key_columns, self._dialect.quote))
        table = self._dialect.quote(schema.sink_name)
        sql = f"SELECT {key_text}, {self._hash(schema)}, {keys} FROM {table} WHERE {where}"
        order = KeyOrder.for_columns(schema.key_collations())

        def read(cur: Any) -> RowHashes:
            cur.execute(sql, params)
            return {
                str(record[0]): int(record[1])
                for record in cur
                if not text_key or order.in_range(tuple(record[2:]), split.start, split.end)
            }

        return self._run(schema, read)

    def _run(self, schema: TableSchema, read: Callable[[Any], _T]) -> _T:
        try:
            with self._conn.cursor() as cur:
                return read(cur)
        except Exception as err:
            reason = self._dialect.describe_error(err)
            raise SinkError(
                f"checksumming {schema.table} in the sink {self._describe} failed: {reason}"
            ) from None

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._conn.close()


def open_sink_checker(config: SinkConfig) -> SinkChecker:
    """A checker for the pipeline's sink: JDBC (MySQL/MariaDB, PostgreSQL) or Delta."""
    if isinstance(config, JdbcSinkConfig):
        if config.scheme in ("mysql", "mariadb"):
            return MySqlSinkChecker(config)
        if config.scheme == "postgresql":
            return PostgresSinkChecker(config)
    if writes_in_driver(config):  # Delta: read with Spark in the driver (verify/delta_checker.py)
        from sparkcdc.verify.delta_checker import DeltaSinkChecker

        return DeltaSinkChecker(config)
    raise SinkError(
        "sparkcdc verify supports the jdbc (MySQL, MariaDB, PostgreSQL) and delta sinks; "
        f"{config.describe()} cannot be verified"
    )
