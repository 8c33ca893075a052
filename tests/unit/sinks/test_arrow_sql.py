"""The JDBC sink renders INSERT literals column-wise (arrow_sql); every literal must be the one
PyMySQL's ``Connection.escape`` writes for the same canonical value, and statements must pack
rows like ``executemany`` (row order, row and byte limits)."""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

import pyarrow as pa
import pymysql
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pymysql.constants import SERVER_STATUS

from harness.arrow_tables import canonical_table
from sparkcdc.sinks.jdbc.arrow_sql import insert_statements, sql_literals


class FakeConnection:
    """Just enough of a PyMySQL connection for ``escape``."""

    encoding = "utf8"
    encoders = pymysql.converters.encoders

    def __init__(self, no_backslash_escapes: bool = False) -> None:
        self.server_status = SERVER_STATUS.SERVER_STATUS_NO_BACKSLASH_ESCAPES if no_backslash_escapes else 0

    escape = pymysql.connections.Connection.escape
    _escape_string = pymysql.connections.Connection._escape_string


def _expected(conn: Any, values: list[Any]) -> list[str]:
    out = []
    for v in values:
        if isinstance(v, dt.datetime) and v.tzinfo is not None:
            v = v.astimezone(dt.timezone.utc).replace(tzinfo=None)
        out.append(conn.escape(v))
    return out


@pytest.mark.parametrize("no_backslash_escapes", [False, True])
def test_literals_equal_pymysql_escape(no_backslash_escapes: bool) -> None:
    conn = FakeConnection(no_backslash_escapes)
    data = canonical_table(300)
    for name in data.column_names:
        column = data.column(name)
        if pa.types.is_floating(column.type):
            # NaN and infinities cannot be written to MySQL at all; PyMySQL raises for them.
            column = pa.array(
                [v if v is None or abs(v) < 1e300 else 1.5 for v in column.to_pylist()], column.type
            )
        literals = sql_literals(conn, column).to_pylist()
        expected = _expected(conn, column.to_pylist())
        if pa.types.is_float64(column.type):
            # Doubles: Arrow's shortest text, the same double as escape's (and a double literal).
            assert all("e" in x for x in literals if x != "NULL"), name
            literals, expected = _doubles(literals), _doubles(expected)
        assert literals == expected, name


def _doubles(literals: list[str]) -> list[tuple[float, float] | None]:
    """Each double literal as its value and sign (-0e0 is not 0e0)."""
    return [None if x == "NULL" else (float(x), math.copysign(1.0, float(x))) for x in literals]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False)), min_size=1))
def test_any_double_reads_back_as_the_same_double(values: list[float | None]) -> None:
    literals = sql_literals(FakeConnection(), pa.array(values, pa.float64())).to_pylist()
    assert all(x == "NULL" or "e" in x for x in literals)
    assert _doubles(literals) == _doubles(_expected(FakeConnection(), values))


def test_infinite_doubles_are_refused_like_pymysql() -> None:
    with pytest.raises(pymysql.err.ProgrammingError):
        sql_literals(FakeConnection(), pa.array([1.0, float("inf")], pa.float64()))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.none(), st.text()), min_size=1, max_size=30), st.booleans())
def test_any_text_escapes_like_pymysql(values: list[str | None], no_backslash_escapes: bool) -> None:
    conn = FakeConnection(no_backslash_escapes)
    assert sql_literals(conn, pa.array(values, pa.string())).to_pylist() == _expected(conn, values)


@pytest.mark.parametrize("tail", ["", " ON DUPLICATE KEY UPDATE `id`=VALUES(`id`), `s`=VALUES(`s`)"])
def test_statements_pack_rows_in_order_within_limits(tail: str) -> None:
    conn = FakeConnection()
    data = pa.table(
        {"id": pa.array(range(1000), pa.int64()), "s": pa.array([f"v{i}" * (i % 7) for i in range(1000)])}
    )
    head = "INSERT INTO `t` (`id`, `s`) VALUES "
    rows = [f"({i},'{f'v{i}' * (i % 7)}')" for i in range(1000)]
    for max_rows, max_bytes in [(1000, 10**9), (7, 10**9), (1000, 200), (1000, 1)]:
        statements = [s.decode() for s in insert_statements(conn, head, data, max_rows, max_bytes, tail)]
        assert all(s.startswith(head) and s.endswith(tail) for s in statements)
        bodies = [s[len(head) : len(s) - len(tail)] for s in statements]
        values = [v for body in bodies for v in _split_rows(body)]
        assert values == rows
        for s, body in zip(statements, bodies, strict=True):
            count = len(_split_rows(body))
            assert count <= max_rows
            # The tail counts against max_bytes (max_allowed_packet) like the rows.
            assert len(s.encode()) <= max_bytes or count == 1
        if max_bytes == 10**9:
            assert len(statements) == -(-1000 // max_rows)


def _split_rows(values: str) -> list[str]:
    # The test values hold no parentheses or commas inside strings.
    return ["(" + part.strip("(),") + ")" for part in values.split("),(")]
