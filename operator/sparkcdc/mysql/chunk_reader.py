"""Reading a split's rows, finding chunk boundaries, and key-range checks the database decides."""

from __future__ import annotations

import functools
import importlib
import logging
import ssl
from collections.abc import Iterator, Sequence
from typing import Any
from urllib.parse import quote, urlencode

import pyarrow as pa
import pymysql

from sparkcdc.core.splits import Key, KeyValue, SnapshotSplit
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.arrow_columns import arrow_to_canonical, rows_to_arrow
from sparkcdc.mysql.columns import Column, Family
from sparkcdc.mysql.errors import SourceError
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.mysql.sql import (
    key_columns_sql,
    key_params,
    key_params_sql,
    order_by,
    range_predicate,
    select_expression,
    select_list,
    table_name,
    value_expression,
)
from sparkcdc.mysql.tls import TlsSettings
from sparkcdc.mysql.types import canonical_value


@functools.cache
def _connectorx() -> Any:
    """connectorx, the fast path (PyMySQL reads every split without it); imported on first use:
    it takes a quarter of a second, which every ``sparkcdc run`` paid though only splits use it."""
    try:
        return importlib.import_module("connectorx")
    except ImportError:  # pragma: no cover - connectorx is a dependency
        return None


log = logging.getLogger(__name__)

__all__ = [
    "chunk_query",
    "chunk_read_method",
    "iter_chunk_batches",
    "key_bounds",
    "keys_in_range",
    "next_boundary",
    "read_chunk",
]

# Below this many rows (by the statistics) COUNT(*) is cheap and exact; InnoDB's TABLE_ROWS is
# an estimate and reads 0 for a table that was just filled.
_EXACT_COUNT_BELOW = 100_000
# Key comparisons per round trip in keys_in_range.
_KEYS_PER_QUERY = 256


def chunk_query(schema: TableSchema, split: SnapshotSplit) -> tuple[str, list[Any]]:
    """``SELECT <columns> FROM t WHERE <key in [start, end)>`` and its parameters."""
    where, params = range_predicate(schema.chunk_key_columns, split.start, split.end)
    return f"SELECT {select_list(schema.columns)} FROM {table_name(schema.table)} WHERE {where}", params


# -- the ConnectorX path ---------------------------------------------------------------------------
#
# ConnectorX (Rust) reads a query result straight into Arrow, several times faster than PyMySQL
# decodes rows in Python (docs/performance.md). It opens its own connection with the settings of
# the PyMySQL connection it is handed, so it is used only where that reproduces the same session:
# a TCP connection with an ASCII password, plaintext or encrypted; an encrypted one gets the same
# TLS checks (mode and CA of the settings the connection was made with: tls.py), so TLS costs the
# snapshot no fallback to PyMySQL. Columns are selected so that the values are exactly what the text
# protocol would give: integers and dates/times natively (the binary protocol carries them
# exactly; the server also spends less time than on printing them), BIT/BINARY/GEOMETRY as their
# bytes, everything else as the server's text (``CAST(... AS CHAR)``); arrow_columns.arrow_to_canonical
# converts them with the same kernels as the PyMySQL path. The session runs in UTC like every
# source session.
#
# Being a second connection, its read view starts after anything the caller's connection
# started: a consistent snapshot opened there (split_reader) sees a subset of what this read
# sees, so its binlog position stays a valid low watermark; the backfill of (low, high]
# reconciles the rest exactly as on MySQL.


def _connectorx_url(conn: Any, reader: str = "auto") -> str | None:
    """The ConnectorX URL of ``conn``'s server and account, or None when PyMySQL must read
    (``reader`` is ``SourceConfig.chunk_reader``)."""
    if reader == "pymysql" or _connectorx() is None:
        return None
    if not isinstance(conn, pymysql.connections.Connection) or getattr(conn, "unix_socket", None):
        return None
    tls = _connectorx_tls(conn)
    if tls is None:
        return None
    raw_user, raw_password = conn.user, conn.password
    user = raw_user.decode(conn.encoding) if isinstance(raw_user, bytes) else str(raw_user)
    password = raw_password.decode("latin1") if isinstance(raw_password, bytes) else str(raw_password or "")
    if not (user.isascii() and password.isascii()):
        return None
    host = f"[{conn.host}]" if ":" in str(conn.host) else str(conn.host)
    account = f"{quote(user, safe='')}:{quote(password, safe='')}"
    query = urlencode({"prefer_socket": "false", **tls})
    return f"mysql://{account}@{host}:{int(conn.port)}?{query}"


def _connectorx_tls(conn: Any) -> dict[str, str] | None:
    """ConnectorX's TLS parameters for a session like ``conn``'s: none for a plaintext one; the
    settings ``conn`` was made with (connection.connect) for an encrypted one, so ConnectorX
    verifies exactly as PyMySQL did; None (PyMySQL reads) for an encrypted connection made
    elsewhere, whose checks are unknown."""
    sock = getattr(conn, "_sock", None)
    if sock is None:
        return None
    if not isinstance(sock, ssl.SSLSocket):
        return {}
    tls: TlsSettings | None = getattr(conn, "tls", None)
    if tls is None:
        return None
    try:
        params = tls.connectorx_params()
    except SourceError as exc:  # no CA file to give it: PyMySQL, which has its context, reads
        _log_once(
            logging.WARNING, f"ConnectorX cannot verify like PyMySQL ({exc}); PyMySQL reads every split"
        )
        return None
    _log_once(logging.INFO, f"ConnectorX reads snapshot splits over TLS ({tls.where}.mode {tls.mode})")
    return params


_LOGGED: set[str] = set()


def _log_once(level: int, message: str) -> None:
    """Which path reads, and why, once per process rather than per split."""
    if message not in _LOGGED:
        _LOGGED.add(message)
        log.log(level, "%s", message)


def chunk_read_method(conn: Any, reader: str = "auto") -> str:
    """``"connectorx"`` or ``"pymysql"``: how ``iter_chunk_batches`` reads on ``conn``."""
    url = _connectorx_url(conn, reader)
    return "pymysql" if url is None or url in _FAILED_URLS else "connectorx"


# Read natively (binary protocol) where ConnectorX's values are exact; ConnectorX refuses zero
# dates (0000-00-00, 2024-00-10) there, and a table that has them is read as text from then on.
_NATIVE_TEMPORALS = (Family.DATE, Family.DATETIME, Family.TIMESTAMP)
_TEXT_TEMPORALS: set[TableId] = set()
# Servers ConnectorX failed to read from (e.g. an authentication method it lacks): PyMySQL reads
# their splits for the rest of the process, after one warning.
_FAILED_URLS: set[str] = set()


def _connectorx_expression(column: Column, native_temporals: bool) -> str:
    name = column.quoted()
    native = native_temporals and column.family in _NATIVE_TEMPORALS and not column.zero_dates
    if column.family is Family.INTEGER or native:
        return name
    if column.family in (Family.BIT, Family.BINARY, Family.GEOMETRY):
        return f"CAST({name} AS BINARY) AS {name}"
    return f"CAST({value_expression(column)} AS CHAR) AS {name}"


def _read_connectorx(url: str, conn: Any, schema: TableSchema, split: SnapshotSplit) -> pa.Table | None:
    """The split as one canonical table, or None when ConnectorX failed (PyMySQL reads instead)."""
    connectorx = _connectorx()
    assert connectorx is not None
    where, params = range_predicate(schema.chunk_key_columns, split.start, split.end)
    has_temporals = any(c.family in _NATIVE_TEMPORALS for c in schema.columns)
    for native in (True, False):
        if native and (not has_temporals or schema.table in _TEXT_TEMPORALS):
            continue
        select = ", ".join(_connectorx_expression(c, native) for c in schema.columns)
        with conn.cursor(pymysql.cursors.Cursor) as cur:
            sql = cur.mogrify(f"SELECT {select} FROM {table_name(schema.table)} WHERE {where}", params)
        try:
            raw = connectorx.read_sql(
                url, sql, return_type="arrow", pre_execution_query=["SET time_zone = '+00:00'"]
            )
        except BaseException as exc:  # a Rust panic arrives as pyo3's PanicException (a BaseException)
            if not isinstance(exc, Exception) and type(exc).__name__ != "PanicException":
                raise
            message = str(exc).replace(url, "mysql://…")[:300]
            if native:
                log.info("ConnectorX read %s natively failed (%s); reading its dates as text", split, message)
                _TEXT_TEMPORALS.add(schema.table)
                continue
            log.warning(
                "ConnectorX could not read split %s (%s); PyMySQL reads from this server from now on",
                split,
                message,
            )
            _FAILED_URLS.add(url)
            return None
        arrays = [arrow_to_canonical(c, raw.column(i)) for i, c in enumerate(schema.columns)]
        return pa.Table.from_arrays(arrays, schema=schema.arrow_schema())
    return None


def iter_chunk_batches(
    conn: Any, schema: TableSchema, split: SnapshotSplit, fetch_size: int, reader: str = "auto"
) -> Iterator[pa.Table]:
    """The split's rows as Arrow tables of at most ``fetch_size`` rows.

    Read with ConnectorX where ``chunk_read_method(conn)`` says so (the whole split at once,
    then sliced), else streamed from the server over ``conn``. Works on any PyMySQL connection;
    one from ``connect(streaming=True)`` hands over raw values, which convert column-wise
    instead of value by value.
    """
    url = _connectorx_url(conn, reader)
    if url is not None and url not in _FAILED_URLS:
        table = _read_connectorx(url, conn, schema, split)
        if table is not None:
            size = max(1, fetch_size)
            for offset in range(0, table.num_rows, size):
                yield table.slice(offset, size)
            return
    sql, params = chunk_query(schema, split)
    with conn.cursor(pymysql.cursors.SSCursor) as cur:
        cur.execute(sql, params)
        while True:
            rows = cur.fetchmany(max(1, fetch_size))
            if not rows:
                return
            yield rows_to_arrow(schema, rows)


def read_chunk(
    conn: Any, schema: TableSchema, split: SnapshotSplit, fetch_size: int = 10_000, reader: str = "auto"
) -> pa.Table:
    """All rows of ``split`` as one table of ``schema.arrow_schema()``."""
    batches = list(iter_chunk_batches(conn, schema, split, fetch_size, reader))
    if not batches:
        return schema.arrow_schema().empty_table()
    return pa.concat_tables(batches)


def _key_from_row(columns: Sequence[Column], row: Sequence[Any]) -> Key:
    return tuple(canonical_value(c, v) for c, v in zip(columns, row, strict=True))


def _fetch_one(conn: Any, sql: str, params: Sequence[Any]) -> tuple[Any, ...] | None:
    with conn.cursor(pymysql.cursors.Cursor) as cur:
        cur.execute(sql, params)
        row = cur.fetchone()
        cur.fetchall()
        return None if row is None else tuple(row)


def next_boundary(conn: Any, schema: TableSchema, previous: Key | None, chunk_size: int) -> Key | None:
    """The end of the chunk starting at ``previous`` (``None``: the table's start), or ``None``
    when at most ``chunk_size`` rows remain.

    The boundary is the key of the row ``chunk_size`` places after ``previous`` in key order,
    so ``[previous, boundary)`` holds ``chunk_size`` rows and the boundary is strictly greater
    than ``previous``. Ordering and comparisons happen in the database (collations).
    """
    columns = schema.chunk_key_columns
    table = table_name(schema.table)
    select = ", ".join(select_expression(c) for c in columns)
    where, params = ("", []) if previous is None else range_predicate(columns, previous, None)
    where_sql = f"WHERE {where} " if where else ""
    order = order_by(columns)
    sql = f"SELECT {select} FROM {table} {where_sql}ORDER BY {order} LIMIT 1 OFFSET {int(chunk_size)}"
    row = _fetch_one(conn, sql, params)
    if row is None:
        return None
    boundary = _key_from_row(columns, row)
    unique = schema.chunk_key_is_unique
    if previous is not None and not unique and not _db_greater(conn, columns, boundary, previous):
        # A non-unique chunk key (a primary-key prefix) with more than chunk_size rows on one
        # value: the chunk ends at the next larger value instead.
        sql = (
            f"SELECT {select} FROM {table} WHERE {key_columns_sql(columns)} > {key_params_sql(columns)} "
            f"ORDER BY {order} LIMIT 1"
        )
        row = _fetch_one(conn, sql, key_params(columns, previous))
        return None if row is None else _key_from_row(columns, row)
    return boundary


def _db_greater(conn: Any, columns: Sequence[Column], a: Key, b: Key) -> bool:
    marks = key_params_sql(columns, collate=True)
    row = _fetch_one(conn, f"SELECT {marks} > {marks}", [*key_params(columns, a), *key_params(columns, b)])
    return row is not None and row[0] is not None and int(row[0]) == 1  # "0"/"1" on a raw connection


def key_bounds(conn: Any, schema: TableSchema) -> tuple[KeyValue | None, KeyValue | None, int]:
    """``(min, max, approximate rows)`` of the first chunk-key column (both None when empty)."""
    lead = schema.chunk_key_columns[0]
    table = table_name(schema.table)
    expr = value_expression(lead)
    row = _fetch_one(conn, f"SELECT MIN({expr}), MAX({expr}) FROM {table}", [])
    low, high = (None, None) if row is None else row
    stats = _fetch_one(
        conn,
        "SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s",
        [schema.table.database, schema.table.table],
    )
    approx = int(stats[0]) if stats and stats[0] is not None else 0
    if approx < _EXACT_COUNT_BELOW:
        counted = _fetch_one(conn, f"SELECT COUNT(*) FROM {table}", [])
        approx = int(counted[0]) if counted else 0
    return canonical_value(lead, low), canonical_value(lead, high), approx


def _in_range_python(key: Key, start: Key | None, end: Key | None) -> bool:
    return (start is None or tuple(start) <= key) and (end is None or key < tuple(end))


def keys_in_range(
    conn: Any, columns: Sequence[Column], keys: Sequence[Key], start: Key | None, end: Key | None
) -> list[bool]:
    """For each key, whether ``start <= key < end`` in the database's order.

    Keys without text columns compare exactly in Python (ints, Decimals, temporal values,
    bytes); keys with text columns are compared by the server under each column's collation,
    ``_KEYS_PER_QUERY`` keys per round trip.
    """
    if start is None and end is None:
        return [True] * len(keys)
    if not any(c.is_text for c in columns):
        return [_in_range_python(tuple(k), start, end) for k in keys]
    marks = key_params_sql(columns, collate=True)
    result: list[bool] = []
    for offset in range(0, len(keys), _KEYS_PER_QUERY):
        batch = keys[offset : offset + _KEYS_PER_QUERY]
        exprs: list[str] = []
        params: list[Any] = []
        for key in batch:
            conditions: list[str] = []
            if start is not None:
                conditions.append(f"{marks} >= {marks}")
                params += [*key_params(columns, key), *key_params(columns, start)]
            if end is not None:
                conditions.append(f"{marks} < {marks}")
                params += [*key_params(columns, key), *key_params(columns, end)]
            exprs.append("(" + " AND ".join(conditions) + ")")
        row = _fetch_one(conn, "SELECT " + ", ".join(exprs), params)
        assert row is not None
        result.extend(v is not None and int(v) == 1 for v in row)
    return result
