"""PostgreSQL targets for the JDBC sink (psycopg 3).

Types. Every MySQL type maps to the PostgreSQL type that holds all of its values exactly
(``pg_type``): unsigned integers widen (``INT UNSIGNED`` → ``bigint``, ``BIGINT UNSIGNED`` →
``numeric(20,0)``), ``TIME`` becomes ``interval`` because MySQL's TIME is a duration (negative,
or beyond 24 h), ``TIMESTAMP`` becomes ``timestamptz``. ``JSON`` becomes ``text``, not
``jsonb``: ``jsonb`` re-orders keys, drops duplicates and re-prints numbers and whitespace, so
the replica would no longer hold the document MySQL prints, and the snapshot and the binlog
(architecture §3 rule 7) could not be checked against the source value by value. Strings are
``text``. ``NOT NULL`` is kept except on DATE/DATETIME/TIMESTAMP columns outside the key:
MySQL's zero dates arrive as NULL (sparkcdc.mysql.types). GEOMETRY is EWKB (its SRID kept), in a
PostGIS ``geometry`` column when the database has the extension, else in ``bytea`` (geometry.py).
PostgreSQL text cannot hold U+0000; such a value fails the write with PostgreSQL's message.

Rows are written with ``COPY … FROM STDIN (FORMAT csv)`` inside the split's (or the binlog
batch's) transaction, the CSV rendered by Arrow without a Python loop per row (``copy_csv``).
TIME values travel as ``<n> microseconds`` on every path, so they are stored the same way
whether they came from the snapshot or the binlog.

String keys and split ranges: see sparkcdc.sinks.jdbc.pg_rank.
"""

from __future__ import annotations

import datetime as dt
import io
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from sparkcdc.core.events import Row
from sparkcdc.core.keys import KeyOrder
from sparkcdc.core.splits import Key
from sparkcdc.mysql.columns import Column, Family
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks.arrow_json import join_text
from sparkcdc.sinks.base import SinkError
from sparkcdc.sinks.geometry import ewkb_array
from sparkcdc.sinks.jdbc.bulk_load import hex_text
from sparkcdc.sinks.jdbc.dialects import Load, Target
from sparkcdc.sinks.jdbc.evolution import pg_default
from sparkcdc.sinks.jdbc.pg_rank import StringRank, candidates_predicate, quote_ident, rank_index_sql
from sparkcdc.sinks.jdbc.sql import key_in_list_predicate, range_predicate
from sparkcdc.sinks.jdbc.tls import libpq_tls_options, tls_failure
from sparkcdc.sinks.targets import scoped

__all__ = ["PostgresDialect", "StringRank", "candidates_predicate", "copy_csv", "pg_type"]

_NULLABLE_TEMPORAL = {Family.DATE, Family.DATETIME, Family.TIMESTAMP}
_TEXT = {Family.STRING, Family.ENUM, Family.SET, Family.JSON}
_DELETE_BATCH = 1000
_COPY_BATCH_ROWS = 20_000
# libpq connection parameters a sink URL may carry (``?sslmode=require``); others are ignored.
_LIBPQ_PARAMS = frozenset(
    ["sslmode", "sslrootcert", "sslcert", "sslkey", "sslcrl", "target_session_attrs", "application_name"]
)


def pg_type(col: Column) -> str:
    """The PostgreSQL column type that holds every value of the MySQL column exactly."""
    family = col.family
    if family is Family.INTEGER:
        bits = col.integer_bits
        if col.unsigned:
            return {8: "smallint", 16: "integer", 24: "integer", 32: "bigint"}.get(bits, "numeric(20,0)")
        return {8: "smallint", 16: "smallint", 24: "integer", 32: "integer"}.get(bits, "bigint")
    if family is Family.DECIMAL:
        return f"numeric({int(col.precision or 10)},{int(col.scale or 0)})"
    if family is Family.DATETIME or family is Family.TIMESTAMP:
        zone = "with" if family is Family.TIMESTAMP else "without"
        return f"timestamp({min(int(col.datetime_precision or 0), 6)}) {zone} time zone"
    if family is Family.BIT:
        return "boolean" if col.bit_width == 1 else "bytea"
    if family in _TEXT:
        return "text"
    return {
        Family.FLOAT: "real",
        Family.DOUBLE: "double precision",
        Family.YEAR: "smallint",
        Family.DATE: "date",
        Family.TIME: "interval",
        Family.BINARY: "bytea",
        Family.GEOMETRY: "bytea",
    }[family]


def _micros(delta: dt.timedelta) -> str:
    return f"{(delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds} microseconds"


def _csv_column(array: pa.ChunkedArray) -> pa.ChunkedArray | pa.Array:
    """A column as COPY's CSV input expects it: bytea as ``\\x…`` hex, durations in microseconds."""
    kind = array.type
    if pa.types.is_duration(kind):
        micros = pc.cast(pc.cast(array, pa.int64()), pa.string())
        return pc.binary_join_element_wise(micros, pa.scalar(" microseconds"), "")
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind) or pa.types.is_fixed_size_binary(kind):
        # bytea's hex input, column-wise (bulk_load.hex_text; PostgreSQL reads either case).
        return join_text("\\x", hex_text(array.combine_chunks()))
    return array


def copy_csv(data: pa.Table) -> bytes:
    """The rows of ``data`` as CSV for ``COPY … (FORMAT csv)``: NULL is an empty unquoted field,
    strings are always quoted (so ``""`` is the empty string)."""
    table = pa.table({name: _csv_column(data.column(name)) for name in data.column_names})
    out = io.BytesIO()
    pacsv.write_csv(table, out, pacsv.WriteOptions(include_header=False, quoting_style="needed"))
    return out.getvalue()


def _spatial_as_ewkb(schema: TableSchema, data: pa.Table, postgis: bool) -> pa.Table:
    """GEOMETRY columns as EWKB: bytes for ``bytea``, hex text (PostGIS's input) for ``geometry``."""
    for i, name in enumerate(data.column_names):
        if schema.column(name).family is Family.GEOMETRY:
            values = ewkb_array(data.column(i))
            if postgis:
                values = pa.array([None if v is None else v.hex() for v in values.to_pylist()], pa.string())
            data = data.set_column(i, name, values)
    return data


class PostgresDialect:
    """PostgreSQL targets: MySQL types mapped by ``pg_type``; rows loaded with COPY."""

    # The sink fence (sinks/jdbc/fence.py): shared row locks, and an insert that keeps an existing row.
    share_lock = "FOR SHARE"
    insert_absent = ("INSERT INTO", " ON CONFLICT (pipeline) DO NOTHING")

    def __init__(self) -> None:
        self.schema = "public"
        # GEOMETRY columns become PostGIS ``geometry`` when the target has the extension (geometry.py).
        self.postgis = False

    def connect(self, config: Target) -> Any:
        import psycopg

        params: dict[str, str] = dict(getattr(config, "params", None) or {})
        self.schema = (params.get("currentSchema") or "public").split(",")[0].strip() or "public"
        options: dict[str, Any] = {"application_name": "sparkcdc", "connect_timeout": 10, "autocommit": False}
        options.update((k, v) for k, v in params.items() if k in _LIBPQ_PARAMS)
        options.update(libpq_tls_options(config))
        where = f"the sink {config.describe()} as user {config.user!r}"
        hint = "check spec.sink.url, spec.sink.user and the secret named by spec.sink.passwordSecretRef"
        try:
            conn = psycopg.connect(
                host=config.host,
                port=config.port,
                dbname=config.database,
                user=config.user,
                password=config.password,
                **options,
            )
        except psycopg.Error as err:
            reason = self._scrub(self.describe_error(err), config.password)
            hint = tls_failure(reason, config) or hint
            if "does not exist" in reason and "database" in reason:
                hint = f"create the database {config.database!r} first (the sink does not create databases)"
            raise SinkError(f"cannot open {where}: {reason}; {hint}") from None
        try:
            with conn.cursor() as cur:
                cur.execute("SET TIME ZONE 'UTC'")
                cur.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (self.schema,))
                if cur.fetchone() is None:
                    cur.execute(f"CREATE SCHEMA IF NOT EXISTS {self.quote(self.schema)}")
                cur.execute(f"SET search_path TO {self.quote(self.schema)}")
                cur.execute("SELECT 1 FROM pg_extension WHERE extname = 'postgis'")
                self.postgis = cur.fetchone() is not None
            conn.commit()
        except psycopg.Error as err:
            conn.close()
            reason = self._scrub(self.describe_error(err), config.password)
            raise SinkError(
                f"cannot use schema {self.schema!r} of {where}: {reason}; create the schema or grant the "
                "user CREATE on the database, or name another schema with ?currentSchema= in spec.sink.url"
            ) from None
        return conn

    @staticmethod
    def _scrub(message: str, password: str) -> str:
        return message.replace(password, "***") if password else message

    def quote(self, name: str) -> str:
        return quote_ident(name)

    def begin(self, cur: Any) -> None:
        """psycopg opens the transaction with the first statement (the connection is not autocommit)."""

    def create_table_sql(self, schema: TableSchema) -> str:
        cols = []
        for col in schema.columns:
            relax = col.family in _NULLABLE_TEMPORAL and col.name not in schema.row_key
            null = "" if col.nullable or relax else " NOT NULL"
            default = pg_default(col, col.default_sql)
            clause = f" DEFAULT {default}" if default is not None else ""
            spatial = self.postgis and col.family is Family.GEOMETRY
            cols.append(f"{self.quote(col.name)} {'geometry' if spatial else pg_type(col)}{null}{clause}")
        cols.append(f"PRIMARY KEY ({', '.join(self.quote(c) for c in schema.row_key)})")
        table = self.quote(schema.sink_name)
        sql = f"CREATE TABLE IF NOT EXISTS {table} (\n  " + ",\n  ".join(cols) + "\n)"
        index = rank_index_sql(schema)
        return sql if index is None else f"{sql};\n{index}"

    def table_exists(self, cur: Any, table: str) -> bool:
        cur.execute(
            "SELECT COUNT(*) FROM information_schema.tables"
            " WHERE table_schema = current_schema() AND table_name = %s",
            (table,),
        )
        return bool(cur.fetchone()[0])

    def insert_sql(self, table: str, columns: Sequence[str]) -> str:
        names = ", ".join(self.quote(c) for c in columns)
        marks = ", ".join(["%s"] * len(columns))
        return f"INSERT INTO {self.quote(table)} ({names}) VALUES ({marks})"

    def adapt_row(self, row: tuple[Any, ...]) -> tuple[Any, ...]:
        # TIME as a plain microsecond count, as COPY writes it (psycopg would split off days).
        return tuple(_micros(v) if isinstance(v, dt.timedelta) else v for v in row)

    def describe_error(self, err: Exception) -> str:
        diag = getattr(err, "diag", None)
        primary = getattr(diag, "message_primary", None)
        state = getattr(err, "sqlstate", None)
        if primary:
            return f"{state}: {primary}" if state else str(primary)
        return (str(err) or type(err).__name__).strip()

    # -- hooks the JDBC sink calls when a dialect has them --------------------------------------

    def delete_range(self, cur: Any, schema: TableSchema, start: Key | None, end: Key | None) -> None:
        """Delete exactly the rows whose chunk key lies in ``[start, end)`` in MySQL's order."""
        table = self.quote(schema.sink_name)
        if not any(c.is_text for c in schema.chunk_key_columns):
            where, params = range_predicate(schema.chunk_key, start, end, self.quote)
            where, params = scoped(schema, where, params, self.quote)
            cur.execute(f"DELETE FROM {table} WHERE {where}", params)
            return
        if start is None and end is None:
            where, params = scoped(schema, "TRUE", [], self.quote)
            cur.execute(f"DELETE FROM {table} WHERE {where}", params)
            return
        where, params = scoped(schema, *candidates_predicate(schema, start, end), self.quote)
        names = ", ".join(self.quote(c) for c in schema.chunk_key)
        cur.execute(f"SELECT DISTINCT {names} FROM {table} WHERE {where}", params)
        order = KeyOrder.for_columns(schema.key_collations())
        doomed = [tuple(k) for k in cur.fetchall() if order.in_range(tuple(k), start, end)]
        for i in range(0, len(doomed), _DELETE_BATCH):
            chunk = doomed[i : i + _DELETE_BATCH]
            pred = key_in_list_predicate(schema.chunk_key, len(chunk), self.quote)
            pred, params = scoped(schema, pred, [v for k in chunk for v in k], self.quote)
            cur.execute(f"DELETE FROM {table} WHERE {pred}", params)

    def write_table(self, cur: Any, schema: TableSchema, data: pa.Table) -> None:
        """Append ``data`` (canonical Arrow rows) with COPY in the current transaction."""
        if data.num_rows == 0:
            return
        names = ", ".join(self.quote(c) for c in data.column_names)
        sql = f"COPY {self.quote(schema.sink_name)} ({names}) FROM STDIN (FORMAT csv)"
        data = _spatial_as_ewkb(schema, data, self.postgis)
        with cur.copy(sql) as copy:
            for batch in data.to_batches(max_chunksize=_COPY_BATCH_ROWS):
                copy.write(copy_csv(pa.Table.from_batches([batch])))

    def write_rows(
        self, cur: Any, schema: TableSchema, names: Sequence[str], rows: Sequence[tuple[Any, ...]]
    ) -> None:
        """Append Python rows (canonical values, columns ``names``) with COPY."""
        arrow = schema.arrow_schema()
        columns = list(zip(*rows, strict=True)) if rows else [() for _ in names]
        data = pa.table(
            {n: pa.array(list(v), arrow.field(n).type) for n, v in zip(names, columns, strict=True)}
        )
        self.write_table(cur, schema, data)

    def can_upsert(self, cur: Any, schema: TableSchema) -> bool:
        # Rows arrive by COPY, which has no ON CONFLICT: the sink deletes the keys and appends.
        return False

    def upsert_rows(
        self, cur: Any, schema: TableSchema, upserts: Mapping[Key, Row], load: Load | None = None
    ) -> None:
        raise SinkError("PostgreSQL targets are written by delete and COPY, not by upsert")
