"""What differs between target databases: connecting, quoting, DDL, value adaptation."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import pyarrow as pa

from sparkcdc.core.events import Row
from sparkcdc.core.image_columns import columns_of
from sparkcdc.core.splits import Key
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks.base import SinkError
from sparkcdc.sinks.jdbc.arrow_sql import insert_statements
from sparkcdc.sinks.jdbc.bulk_load import refuse_local_files
from sparkcdc.sinks.jdbc.sql import range_predicate
from sparkcdc.sinks.jdbc.tls import pymysql_tls_options, tls_failure
from sparkcdc.sinks.targets import scoped

# Writes an Arrow table of upserts its own way, or calls the insert it is given (Dialect.upsert_rows).
Load = Callable[[pa.Table, Callable[[], None]], None]


class Target(Protocol):
    """Where a dialect connects: the JDBC sink's settings (config.py) as far as a dialect reads
    them, so that the dialects need not import the settings that choose them."""

    @property
    def host(self) -> str: ...
    @property
    def port(self) -> int: ...
    @property
    def database(self) -> str: ...
    @property
    def user(self) -> str: ...
    @property
    def password(self) -> str: ...
    def describe(self) -> str: ...


class Dialect(Protocol):
    # For the sink fence (sinks/jdbc/fence.py): the clause of a shared-lock read, and the head and tail
    # of an INSERT that leaves an existing row alone.
    share_lock: str
    insert_absent: tuple[str, str]

    def connect(self, config: Target) -> Any: ...
    def quote(self, name: str) -> str: ...
    def begin(self, cur: Any) -> None: ...
    def create_table_sql(self, schema: TableSchema) -> str: ...
    def table_exists(self, cur: Any, table: str) -> bool: ...
    def describe_error(self, err: Exception) -> str: ...
    def delete_range(self, cur: Any, schema: TableSchema, start: Key | None, end: Key | None) -> None:
        """Delete exactly the rows whose chunk key lies in ``[start, end)`` in the source's order."""

    def write_table(self, cur: Any, schema: TableSchema, data: pa.Table) -> None:
        """Insert canonical Arrow rows in the current transaction."""

    def write_rows(
        self, cur: Any, schema: TableSchema, names: Sequence[str], rows: Sequence[tuple[Any, ...]]
    ) -> None:
        """Insert canonical Python rows (columns ``names``) in the current transaction."""

    def can_upsert(self, cur: Any, schema: TableSchema) -> bool:
        """Whether ``upsert_rows`` on this target is exactly delete-by-row-key then insert."""

    def upsert_rows(
        self, cur: Any, schema: TableSchema, upserts: Mapping[Key, Row], load: Load | None = None
    ) -> None:
        """Insert canonical row images (key → column name → value; core/image_columns.py's
        columns as they are), replacing the rows with their row keys (only where ``can_upsert``).
        ``load(data, insert)``, where given, writes the images' Arrow table its own way with the
        same effect, or calls ``insert`` (sinks/jdbc/bulk_load.py: ``LOAD DATA … REPLACE``)."""


# Rows rendered at once by write_table, and the Arrow data they may hold.
_RENDER_ROWS = 65_536
_RENDER_BYTES = 32 * 1024 * 1024


def _naive_utc(value: Any) -> Any:
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return value


def _allow_zero_dates(cur: Any, sql_mode: str) -> None:
    # The replica stores the source's zero and partly-zero dates (mysql/zero_dates.py), which
    # these modes refuse (strict) or turn into 0000-00-00 with a warning.
    modes = [m for m in sql_mode.split(",") if m]
    kept = [m for m in modes if m.upper() not in ("NO_ZERO_DATE", "NO_ZERO_IN_DATE")]
    if kept != modes:
        cur.execute("SET SESSION sql_mode = %s", (",".join(kept),))


class MySqlDialect:
    """MySQL and MariaDB targets: the source's own column types are reused verbatim, so the
    target orders keys exactly as the source does and a split's range DELETE is exact."""

    # LOCK IN SHARE MODE rather than FOR SHARE: MariaDB and MySQL 5.7 know only this spelling.
    share_lock = "LOCK IN SHARE MODE"
    # ON DUPLICATE KEY with a no-op takes the row's exclusive lock at once (INSERT IGNORE would take
    # a shared one, and two claims upgrading theirs deadlock).
    insert_absent = ("INSERT INTO", " ON DUPLICATE KEY UPDATE pipeline = pipeline")

    def __init__(self, batch_rows: int = 1000) -> None:
        self.batch_rows = batch_rows
        self.max_stmt_length = 1024 * 1024
        # can_upsert per (table, columns written): looked up once per connection, and again after
        # a schema change alters the columns.
        self._upsertable: dict[tuple[str, tuple[str, ...]], bool] = {}

    def connect(self, config: Target) -> Any:
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
                # The capability LOAD DATA LOCAL needs; answered only during bulk_load's own statement.
                local_infile=bool(getattr(config, "bulk_load", False)),
                **pymysql_tls_options(config),
            )
            refuse_local_files(conn)
            with conn.cursor() as cur:
                self._use_database(cur, config.database)
                cur.execute("SELECT @@max_allowed_packet, @@SESSION.sql_mode")
                row = cur.fetchone()
                packet = int(row[0]) if row else 4 * 1024 * 1024
                _allow_zero_dates(cur, str(row[1] or "") if row else "")
            conn.commit()
        except pymysql.MySQLError as err:
            reason = self.describe_error(err)
            hint = tls_failure(reason, config) or (
                "check spec.sink.url, spec.sink.user and the secret named by spec.sink.passwordSecretRef"
            )
            raise SinkError(
                f"cannot open the sink {config.describe()} as user {config.user!r}: {reason}; {hint}"
            ) from None
        self.max_stmt_length = max(64 * 1024, int(packet) - 64 * 1024)
        return conn

    def _use_database(self, cur: Any, database: str) -> None:
        # CREATE DATABASE only when it is missing: even IF NOT EXISTS is written to the binlog, and
        # a replica on the source server would otherwise push every split's high watermark on.
        import pymysql

        try:
            cur.execute(f"USE {self.quote(database)}")
        except pymysql.err.OperationalError as err:
            if not err.args or err.args[0] != 1049:  # ER_BAD_DB_ERROR
                raise
            cur.execute(f"CREATE DATABASE IF NOT EXISTS {self.quote(database)}")
            cur.execute(f"USE {self.quote(database)}")

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
            default = f" DEFAULT {col.default_sql}" if col.default_sql is not None else ""
            cols.append(f"{self.quote(col.name)} {col.column_type}{collate}{null}{default}")
        pk = ", ".join(self.quote(c) for c in schema.row_key)
        cols.append(f"PRIMARY KEY ({pk})")
        return f"CREATE TABLE IF NOT EXISTS {self.quote(schema.sink_name)} (\n  " + ",\n  ".join(cols) + "\n)"

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

    def delete_range(self, cur: Any, schema: TableSchema, start: Key | None, end: Key | None) -> None:
        where, params = range_predicate(schema.chunk_key, start, end, self.quote)
        where, params = scoped(schema, where, params, self.quote)
        table = self.quote(schema.sink_name)
        # A DELETE locks the gaps of its range even when it finds no row, and on a table still
        # empty around the range two tasks' gaps are one: their inserts then deadlock. A split
        # written for the first time finds nothing, so look first (a plain consistent read, no
        # locks). Only attempts of this split write this range: one that committed before this
        # transaction's read is seen (its rows are deleted), one that rolled back left nothing,
        # and one still running (a zombie task) makes this insert fail on a duplicate key, and
        # the write is redone (jdbc.py ``_is_write_conflict``).
        cur.execute(f"SELECT 1 FROM {table} WHERE {where} LIMIT 1", params)
        if cur.fetchone() is None:
            return
        cur.execute(f"DELETE FROM {table} WHERE {where}", params)

    def write_table(self, cur: Any, schema: TableSchema, data: pa.Table, tail: str = "") -> None:
        # Literals are rendered column-wise by Arrow (arrow_sql), exactly as executemany would
        # escape the values, into statements of batch_rows rows within max_stmt_length.
        if data.num_rows == 0:
            return
        names = ", ".join(self.quote(c) for c in data.column_names)
        head = f"INSERT INTO {self.quote(schema.sink_name)} ({names}) VALUES "
        per_row = max(1, data.nbytes // data.num_rows)
        step = max(1, min(_RENDER_ROWS, _RENDER_BYTES // per_row))
        for offset in range(0, data.num_rows, step):
            batch = data.slice(offset, step)
            try:
                statements = list(
                    insert_statements(
                        cur.connection, head, batch, self.batch_rows, self.max_stmt_length, tail
                    )
                )
            except pa.ArrowCapacityError:  # more text than 32-bit offsets hold: value by value
                columns = [batch.column(i).to_pylist() for i in range(batch.num_columns)]
                rows = list(zip(*columns, strict=True))
                self._executemany(cur, schema, batch.column_names, rows, tail)
                continue
            for statement in statements:
                cur.execute(statement)

    def write_rows(
        self,
        cur: Any,
        schema: TableSchema,
        names: Sequence[str],
        rows: Sequence[tuple[Any, ...]],
        tail: str = "",
    ) -> None:
        if rows:
            self._write_columns(cur, schema, names, list(zip(*rows, strict=True)), tail)

    def _write_columns(
        self,
        cur: Any,
        schema: TableSchema,
        names: Sequence[str],
        columns: Sequence[Sequence[Any]],
        tail: str,
        load: Load | None = None,
    ) -> None:
        # Canonical values convert to the schema's Arrow types exactly (or refuse to), and the
        # rows then go the column-wise way of write_table (or ``load``'s, which falls back to it).
        try:
            target = schema.arrow_schema()
            fields = [target.field(n) for n in names]
            arrays = [pa.array(c, type=f.type) for c, f in zip(columns, fields, strict=True)]
            data = pa.Table.from_arrays(arrays, names=list(names))
        except (pa.ArrowException, KeyError, ValueError, TypeError, OverflowError):
            self._executemany(cur, schema, names, list(zip(*columns, strict=True)), tail)
            return
        if load is None:
            self.write_table(cur, schema, data, tail)
        else:
            load(data, lambda: self.write_table(cur, schema, data, tail))

    def can_upsert(self, cur: Any, schema: TableSchema) -> bool:
        names = tuple(c.name for c in schema.columns)
        known = self._upsertable.get((schema.sink_name, names))
        if known is None:
            known = upsert_equals_replace(cur, schema.sink_name, schema.row_key, names)
            self._upsertable[(schema.sink_name, names)] = known
        return known

    def upsert_rows(
        self, cur: Any, schema: TableSchema, upserts: Mapping[Key, Row], load: Load | None = None
    ) -> None:
        # Every column is set, the key columns too: a key equal under the target's collation but
        # spelt differently ('a' vs 'A') ends up as the new image's spelling, as after a re-insert.
        # VALUES(col) rather than MySQL 8.0.19's row alias: MariaDB has no row alias, and MySQL
        # still accepts VALUES() (deprecated since 8.0.20, with a warning).
        names = [c.name for c in schema.columns]
        sets = ", ".join(f"{self.quote(n)}=VALUES({self.quote(n)})" for n in names)
        if upserts:
            columns = columns_of(upserts, names)
            self._write_columns(cur, schema, names, columns, f" ON DUPLICATE KEY UPDATE {sets}", load)

    def _executemany(
        self,
        cur: Any,
        schema: TableSchema,
        names: Sequence[str],
        rows: Sequence[tuple[Any, ...]],
        tail: str = "",
    ) -> None:
        # executemany folds the rows into multi-row INSERTs up to max_stmt_length, keeping an
        # ON DUPLICATE KEY tail after the VALUES list.
        sql = self.insert_sql(schema.sink_name, names) + tail
        adapted = [tuple(_naive_utc(v) for v in row) for row in rows]
        for i in range(0, len(adapted), self.batch_rows):
            cur.executemany(sql, adapted[i : i + self.batch_rows])

    def describe_error(self, err: Exception) -> str:
        args: tuple[Any, ...] = tuple(getattr(err, "args", ()))
        if len(args) >= 2 and isinstance(args[0], int):
            return f"error {args[0]}: {args[1]}"
        return str(err) or type(err).__name__


def upsert_equals_replace(cur: Any, table: str, row_key: Sequence[str], columns: Sequence[str]) -> bool:
    """Whether ``INSERT … ON DUPLICATE KEY UPDATE`` of every column of ``columns`` leaves ``table``
    exactly as deleting the row key and inserting would. It does when the primary key is the row
    key and the only unique key (another one could match a different row, which a re-insert would
    fail on instead), the rows set every column (a re-insert resets the others to their defaults),
    no foreign key references the table (deletes cascade or are refused) and no trigger runs (a
    re-insert fires DELETE and INSERT triggers, an upsert UPDATE ones). Tables sparkcdc creates
    qualify; for others the sink keeps deleting and inserting."""
    cur.execute(
        "SELECT INDEX_NAME, COLUMN_NAME FROM information_schema.STATISTICS"
        " WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s AND NON_UNIQUE = 0",
        (table,),
    )
    unique = [(str(index), str(column).lower()) for index, column in cur.fetchall()]
    if {index for index, _ in unique} != {"PRIMARY"}:
        return False
    if sorted(column for _, column in unique) != sorted(c.lower() for c in row_key):
        return False
    cur.execute(
        "SELECT COLUMN_NAME FROM information_schema.COLUMNS"
        " WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s",
        (table,),
    )
    if sorted(str(c).lower() for (c,) in cur.fetchall()) != sorted(c.lower() for c in columns):
        return False
    cur.execute(
        "SELECT (SELECT COUNT(*) FROM information_schema.REFERENTIAL_CONSTRAINTS"
        "  WHERE UNIQUE_CONSTRAINT_SCHEMA = DATABASE() AND REFERENCED_TABLE_NAME = %s)"
        " + (SELECT COUNT(*) FROM information_schema.TRIGGERS"
        "  WHERE EVENT_OBJECT_SCHEMA = DATABASE() AND EVENT_OBJECT_TABLE = %s)",
        (table, table),
    )
    row = cur.fetchone()
    return row is not None and int(row[0]) == 0


def dialect_for(scheme: str, batch_rows: int = 1000) -> Dialect:
    if scheme in ("mysql", "mariadb"):
        return MySqlDialect(batch_rows)
    if scheme == "postgresql":
        from sparkcdc.sinks.jdbc.postgres import PostgresDialect

        return PostgresDialect()
    raise SinkError(
        f"spec.sink.url: the scheme {scheme!r} is not supported; use mysql://, mariadb:// or postgresql://"
    )
