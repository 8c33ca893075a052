"""Snapshot splits into MySQL/MariaDB by ``LOAD DATA LOCAL INFILE``, fed from Arrow columns.

Why: into a database the snapshot is bound by the target server (docs/performance.md), and a
server parses a multi-row ``INSERT``'s every value as SQL, while ``LOAD DATA`` reads
tab-separated text straight into the rows — the way ``mariadb-dump | mariadb`` users compare us
with. The text is rendered column-wise by Arrow kernels and streamed through a pipe, so the
split is never written to a file.

Exactness (architecture §3 rule 3). The load runs inside the split's transaction, after its
range delete, exactly where the ``INSERT``s ran: a rerun still replaces the range. But ``LOCAL``
makes the server treat a value it refuses, and a duplicate key, as a warning (as ``IGNORE``), so
the load runs after a savepoint and any warning, or a row count other than the split's, rolls
back to it and the split's rows go the ``INSERT`` way (``MySqlDialect.write_table``), which
then succeeds or fails exactly as before: a zombie attempt's rows are the duplicate key the sink
redoes, a value the target refuses is that table's data error (rule 10).

Each family's text is what the server turns into the value an ``INSERT`` of the literal stores
(tests/integration/sinks/test_jdbc_bulk_load.py compares them for the whole type table):
strings with ``LOAD DATA``'s backslash escapes and ``\\N`` for NULL; YEAR with four digits (the
text ``0`` would be 2000); BIT(1) through ``CAST(… AS UNSIGNED)`` and binary families as hex
through ``UNHEX`` (a field into a BIT column is taken as its bytes, and hex keeps any byte
sequence clear of the file's character set). A type this module does not know, a session
without backslash escapes, or a target that refuses ``LOCAL INFILE`` keeps the ``INSERT`` path.

PyMySQL sends whatever file the server names in its ``LOAD DATA LOCAL`` request; the sink's
connection allows that only while this module's own statement runs (``_allow_local_files``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pymysql.constants import SERVER_STATUS

from sparkcdc.core.image_columns import LoadText
from sparkcdc.mysql.arrow_values import bool_array, int_scalar, null_scalar, text_scalar
from sparkcdc.mysql.columns import Family
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks.arrow_json import join_text, string_data, text_bytes, timestamp_text

__all__ = ["BulkLoader", "hex_text", "local_infile_allowed", "refuse_local_files", "tsv_chunks"]

log = logging.getLogger(__name__)

_NULL = text_scalar("\\N")
_SAVEPOINT = "sparkcdc_bulk_load"
# Rows rendered at once, and the Arrow data they may hold (as MySqlDialect.write_table).
_RENDER_ROWS = 65_536
_RENDER_BYTES = 32 * 1024 * 1024
# LOAD DATA's default escapes for the characters its default format gives a meaning (backslash
# first: the others add backslashes).
_ESCAPES = (("\\", "\\\\"), ("\t", "\\t"), ("\n", "\\n"), ("\0", "\\0"))
# The server or the client refuses LOCAL INFILE: ER_NOT_ALLOWED_COMMAND, MySQL 8's
# ER_CLIENT_LOCAL_FILES_DISABLED, CR_LOAD_DATA_LOCAL_INFILE_REJECTED, MariaDB's
# ER_LOAD_INFILE_CAPABILITY_DISABLED.
_REFUSED = frozenset({1148, 3948, 2068, 4166})
_HEX = np.frombuffer(b"0123456789ABCDEF", dtype=np.uint8)


class UnsupportedColumnError(Exception):
    """A column this module cannot render exactly: the split goes the INSERT way."""


# A column's rendering: the text of each value (nulls stay null) and the SET expression that
# turns the field (``{v}``, a user variable) into the value, or None to load the field as it is.
Rendering = tuple[pa.Array, str | None]


def _strings(array: pa.Array) -> Rendering:
    if not pa.types.is_string(array.type):
        array = array.cast(pa.string())
    data = string_data(array)
    for char, escaped in _ESCAPES:
        if data.size and bool((data == ord(char)).any()):
            array = pc.replace_substring(array, char, escaped)
    return array, None


def hex_text(array: pa.Array) -> pa.Array:
    """Bytes as upper-case hex text (nulls stay null): a lookup per byte, no Python per value."""
    if pa.types.is_fixed_size_binary(array.type) or pa.types.is_large_binary(array.type):
        array = array.cast(pa.binary())
    offsets = np.frombuffer(array.buffers()[1], dtype=np.int32, count=len(array) + 1, offset=array.offset * 4)
    base = int(offsets[0])
    data_buf = array.buffers()[2]
    raw = np.zeros(0, np.uint8)
    if data_buf is not None:
        raw = np.frombuffer(data_buf, dtype=np.uint8)[base : int(offsets[-1])]
    digits = np.empty(raw.size * 2, dtype=np.uint8)
    digits[0::2], digits[1::2] = _HEX[raw >> 4], _HEX[raw & 0x0F]
    if digits.size > np.iinfo(np.int32).max:
        raise pa.ArrowCapacityError("hex text longer than 32-bit offsets hold")
    doubled = ((offsets - base) * 2).astype(np.int32)
    validity = array.buffers()[0] if array.null_count else None
    if validity is not None and array.offset:  # a sliced bitmap: rebuild it at offset 0
        validity = pc.is_valid(array).buffers()[1]
    return pa.Array.from_buffers(
        pa.string(), len(array), [validity, pa.py_buffer(doubled), pa.py_buffer(digits)], array.null_count
    )


def _durations(array: pa.Array) -> Rendering:
    """TIME values as ``[-]hh:mm:ss[.ffffff]``, as PyMySQL writes a timedelta."""
    if array.type.unit != "us":
        raise UnsupportedColumnError(f"duration[{array.type.unit}]")
    filled = pc.fill_null(array.cast(pa.int64()), int_scalar(0))
    # From the buffer: to_numpy() would import pandas (mysql/arrow_values.py).
    micros = np.frombuffer(filled.buffers()[1], dtype=np.int64, count=len(filled), offset=filled.offset * 8)
    magnitude = np.abs(micros)
    seconds, fraction = np.divmod(magnitude, 1_000_000)
    minutes, second = np.divmod(seconds, 60)
    hours, minute = np.divmod(minutes, 60)
    sign = pc.if_else(bool_array(micros < 0), text_scalar("-"), text_scalar(""))
    dotted = join_text(".", _digits(fraction, 6))
    text = join_text(
        sign,
        _digits(hours, 2),
        ":",
        _digits(minute, 2),
        ":",
        _digits(second, 2),
        pc.if_else(bool_array(fraction == 0), text_scalar(""), dotted),
    )
    if array.null_count:
        text = pc.if_else(pc.is_valid(array), text, null_scalar(pa.string()))
    return text, None


def _digits(values: np.ndarray, width: int) -> pa.Array:
    """Non-negative integers as text, zero-padded to ``width`` digits."""
    ints = pa.Array.from_buffers(pa.int64(), len(values), [None, pa.py_buffer(values.astype(np.int64))])
    return pc.utf8_lpad(ints.cast(pa.string()), width=width, padding="0")


def _decimals(array: pa.Array) -> Rendering:
    text = array.cast(pa.string())
    # format(Decimal, "f") never uses an exponent (PyMySQL's literal); Arrow does below 1E-6.
    if array.type.scale > 6 and pc.any(pc.match_substring(text, "E")).as_py():
        text = pa.array([None if v is None else format(v, "f") for v in array.to_pylist()], pa.string())
    return text, None


def _render(array: pa.Array, family: Family | None) -> Rendering:
    typ = array.type
    if pa.types.is_boolean(typ):
        return array.cast(pa.int8()).cast(pa.string()), "CAST({v} AS UNSIGNED)"
    if pa.types.is_integer(typ):
        text = array.cast(pa.string())
        return (pc.utf8_lpad(text, width=4, padding="0") if family is Family.YEAR else text), None
    if pa.types.is_decimal(typ):
        return _decimals(array)
    if pa.types.is_floating(typ):
        # Arrow prints the shortest text that reads back as the same double; a FLOAT goes
        # through its exact double value, so the server's rounding to float gives it back.
        return array.cast(pa.float64()).cast(pa.string()), None
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        return _strings(array)
    if pa.types.is_date32(typ):
        return array.cast(pa.string()), None
    if pa.types.is_timestamp(typ) and typ.unit == "us" and typ.tz in (None, "UTC", "+00:00"):
        return timestamp_text(array), None  # the session runs in UTC
    if pa.types.is_duration(typ):
        return _durations(array)
    if pa.types.is_binary(typ) or pa.types.is_large_binary(typ) or pa.types.is_fixed_size_binary(typ):
        return hex_text(array), "UNHEX({v})"
    raise UnsupportedColumnError(str(typ))


def _column_plan(schema: TableSchema, data: pa.Table) -> list[str | None]:
    """Each column's SET expression (or None), from an empty slice: checks every type up front."""
    plan = []
    for name, column in zip(data.column_names, data.columns, strict=True):
        empty = column.slice(0, 0).combine_chunks()
        plan.append(_render(empty, _family(schema, name))[1])
    return plan


def _family(schema: TableSchema, name: str) -> Family | None:
    try:
        return schema.column(name).family
    except KeyError:  # a column the sink adds (metadata, scope): typed by its Arrow type alone
        return None


def tsv_chunks(schema: TableSchema, data: pa.Table) -> Iterator[bytes]:
    """The rows of ``data`` in ``LOAD DATA``'s default format (tab between fields, newline after
    each row, backslash escapes, ``\\N`` for NULL), a buffer per batch of rows."""
    if data.num_rows == 0:
        return
    per_row = max(1, data.nbytes // data.num_rows)
    step = max(1, min(_RENDER_ROWS, _RENDER_BYTES // per_row))
    families = [_family(schema, name) for name in data.column_names]
    for offset in range(0, data.num_rows, step):
        batch = data.slice(offset, step)
        pieces: list[pa.Array | str] = []
        for i, family in enumerate(families):
            column = batch.column(i).combine_chunks()
            text, _ = _render(column, family)
            if text.null_count:
                text = pc.fill_null(text, _NULL)
            pieces += ["\t" if i else "", text]
        yield bytes(text_bytes(join_text(*pieces, "\n")))


def local_infile_allowed(conn: Any) -> bool:
    """Whether ``conn``'s server takes ``LOAD DATA LOCAL`` and its session reads this module's
    text as written (backslash escapes on)."""
    if not hasattr(conn, "_local_infile"):  # not a PyMySQL connection made for it
        return False
    if conn.server_status & SERVER_STATUS.SERVER_STATUS_NO_BACKSLASH_ESCAPES:
        return False
    with conn.cursor() as cur:
        cur.execute("SELECT @@GLOBAL.local_infile")
        row = cur.fetchone()
    return bool(row and int(row[0]))


def refuse_local_files(conn: Any) -> None:
    """Make a PyMySQL connection refuse the server's requests for local files (it may have the
    capability, for ``_allow_local_files``). PyMySQL answers such a request with whatever file
    the server names, so only this module's own statement may be answered."""
    conn._local_infile = False


@contextlib.contextmanager
def _allow_local_files(conn: Any) -> Iterator[None]:
    conn._local_infile = True
    try:
        yield
    finally:
        conn._local_infile = False


class _Feeder:
    """Writes ``chunks`` into a pipe from a thread; the statement names its read end."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._read, write = os.pipe()
        self.path = f"/dev/fd/{self._read}"
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(chunks, write), daemon=True)
        self._thread.start()

    def _run(self, chunks: Iterator[bytes], write: int) -> None:
        try:
            with os.fdopen(write, "wb") as pipe:
                for chunk in chunks:
                    pipe.write(chunk)
        except BaseException as err:  # handed to the statement's thread
            self.error = err

    def close(self) -> None:
        # Closing the read end first unblocks a writer whose statement never read (refused).
        os.close(self._read)
        self._thread.join()


@dataclass(frozen=True)
class _Text:
    """What one load reads: its columns, their SET expressions, its rows and its text's chunks."""

    names: Sequence[str]
    plan: Sequence[str | None]
    rows: int
    chunks: Iterable[bytes]


class BulkLoader:
    """Writes a split's rows with ``LOAD DATA LOCAL`` where that is exact, else with ``insert``
    (the dialect's ``write_table``); both in the caller's open transaction."""

    def __init__(self, quote: Callable[[str], str], describe: str) -> None:
        self._quote = quote
        self._describe = describe
        self._enabled: bool | None = None  # decided on the first split (the server's setting)
        self._fallbacks = 0

    @property
    def enabled(self) -> bool | None:
        return self._enabled

    def write(
        self,
        cur: Any,
        schema: TableSchema,
        data: pa.Table,
        insert: Callable[[], None],
        replace: bool = False,
    ) -> None:
        """``replace``: the rows replace those of the same unique keys (``LOAD DATA … REPLACE``),
        as the binlog's upserts do; else a duplicate key is a warning, which falls back."""
        if data.num_rows == 0:
            return
        if self._enabled is None:
            self._decide(cur)
        if not self._enabled:
            insert()
            return
        try:
            plan = _column_plan(schema, data)
        except (UnsupportedColumnError, pa.ArrowException, TypeError, ValueError):
            insert()
            return
        text = _Text(data.column_names, plan, data.num_rows, tsv_chunks(schema, data))
        self._load_or_insert(cur, schema, text, insert, replace)

    def write_text(
        self, cur: Any, schema: TableSchema, names: Sequence[str], load: LoadText, insert: Callable[[], None]
    ) -> None:
        """Binlog upserts given as load text already (core/image_columns.py, rendered by the Go
        decoder as ``tsv_chunks`` renders the same rows): loaded with ``REPLACE`` as ``write``
        loads them, else ``insert``. The text's columns are of the kinds it spells, which load as
        they are (no ``SET`` expression)."""
        if load.rows == 0:
            return
        if self._enabled is None:
            self._decide(cur)
        empty = schema.arrow_schema().empty_table().select(list(names))
        if not self._enabled or any(_column_plan(schema, empty)):
            insert()
            return
        text = _Text(names, [None] * len(names), load.rows, [load.text])
        self._load_or_insert(cur, schema, text, insert, replace=True)

    def _decide(self, cur: Any) -> None:
        self._enabled = local_infile_allowed(cur.connection)
        how = "LOAD DATA LOCAL INFILE" if self._enabled else "multi-row INSERTs"
        why = "" if self._enabled else " (the target does not take LOAD DATA LOCAL INFILE)"
        log.info("snapshot splits and binlog upserts go into %s with %s%s", self._describe, how, why)

    def _load_or_insert(
        self, cur: Any, schema: TableSchema, text: _Text, insert: Callable[[], None], replace: bool
    ) -> None:
        cur.execute(f"SAVEPOINT {_SAVEPOINT}")
        if self._load(cur, schema, text, replace):
            return
        cur.execute(f"ROLLBACK TO SAVEPOINT {_SAVEPOINT}")
        insert()

    def _load(self, cur: Any, schema: TableSchema, text: _Text, replace: bool) -> bool:
        """Whether the load stored exactly the text's rows (no warning, every row: a replaced row
        counts twice, its delete and its insert)."""
        import pymysql

        feeder = _Feeder(iter(text.chunks))
        try:
            with _allow_local_files(cur.connection):
                statement = self._statement(schema, text.names, text.plan, feeder.path, replace)
                loaded = cur.execute(statement)
        except pymysql.MySQLError as err:
            code = err.args[0] if err.args else None
            if code not in _REFUSED:
                raise
            self._enabled = False
            log.warning(
                "%s refused LOAD DATA LOCAL INFILE (%s); snapshot splits go in with INSERTs",
                self._describe,
                err.args[1] if len(err.args) > 1 else err,
            )
            return False
        finally:
            feeder.close()
        every_row = loaded >= text.rows if replace else loaded == text.rows
        if feeder.error is None and not cur.warning_count and every_row:
            return True
        self._fallbacks += 1
        if self._fallbacks == 1:
            log.info(
                "rows of %s did not load exactly by LOAD DATA (%s); they are written with INSERTs",
                schema.sink_name,
                feeder.error or f"{cur.warning_count} warnings, {loaded} of {text.rows} rows",
            )
        return False

    def _statement(
        self, schema: TableSchema, names: Sequence[str], plan: Sequence[str | None], path: str, replace: bool
    ) -> str:
        fields, sets = [], []
        for i, (name, expression) in enumerate(zip(names, plan, strict=True)):
            if expression is None:
                fields.append(self._quote(name))
            else:
                fields.append(f"@v{i}")
                sets.append(f"{self._quote(name)} = {expression.format(v=f'@v{i}')}")
        # The default format: fields terminated by tab, escaped by backslash, lines by newline.
        sql = (
            f"LOAD DATA LOCAL INFILE '{path}' {'REPLACE ' if replace else ''}INTO TABLE"
            f" {self._quote(schema.sink_name)}"
            f" CHARACTER SET utf8mb4 ({', '.join(fields)})"
        )
        return sql + (f" SET {', '.join(sets)}" if sets else "")
