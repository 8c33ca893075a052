"""Which errors are one table's own (core/table_errors.py): MySQL/MariaDB data and constraint
errors and PostgreSQL SQLSTATE classes 22 and 23 are; connection loss, lock conflicts, a full
disk, missing privileges, unknown errors are not. Messages keep the column the database names
and never a value."""

from __future__ import annotations

import pytest

from sparkcdc.core.table_errors import classify, redact
from sparkcdc.engine.table_failures import without_tables

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("code", "text", "column"),
    [
        (1406, "Data too long for column 'v' at row 1", "v"),
        (1264, "Out of range value for column 'n' at row 3", "n"),
        (1366, "Incorrect integer value: 'abc' for column `db`.`t`.`n` at row 1", "n"),
        (1048, "Column 'v' cannot be null", "v"),
        (1062, "Duplicate entry 'secret@example.com' for key 'email'", None),
        (1292, "Incorrect datetime value: '2020-13-45' for column `d` at row 1", "d"),
        (1416, "Cannot get geometry object from data you send to the GEOMETRY field", None),
        (4025, "CONSTRAINT `c` failed for `db`.`t`", None),
    ],
)
def test_mysql_data_errors_are_the_tables(code: int, text: str, column: str | None) -> None:
    error = classify(code, None, text)
    assert error is not None
    assert error.code == f"MySQL error {code}" and error.column == column
    for value in ("abc", "secret@example.com", "2020-13-45"):
        assert value not in error.describe()


@pytest.mark.parametrize(
    "code",
    [
        1205,  # lock wait timeout (retried before)
        1213,  # deadlock (retried before)
        2013,  # lost connection during query
        2006,  # server has gone away
        1114,  # the table is full
        1021,  # disk full
        1142,  # command denied (privileges)
        1044,  # access denied to the database
        1146,  # table does not exist
        1054,  # unknown column: the target's shape, not a value
        1105,  # unknown error
    ],
)
def test_other_mysql_errors_stop_the_run(code: int) -> None:
    assert classify(code, None, "whatever the server says") is None


@pytest.mark.parametrize(
    ("state", "text", "column", "data"),
    [
        ("22001", "value too long for type character varying(3)", None, True),
        ("22P02", 'invalid input syntax for type integer: "abc"', None, True),
        ("22003", "numeric field overflow", None, True),
        ("23502", 'null value in column "v" of relation "t" violates not-null constraint', "v", True),
        ("23505", 'duplicate key value violates unique constraint "t_v_key"', None, True),
        ("23514", 'new row for relation "t" violates check constraint "t_n_check"', None, True),
        ("40001", "could not serialize access due to concurrent update", None, False),
        ("40P01", "deadlock detected", None, False),
        ("53100", "could not extend file: No space left on device", None, False),
        ("42501", "permission denied for table t", None, False),
        ("08006", "server closed the connection unexpectedly", None, False),
        ("57014", "canceling statement due to statement timeout", None, False),
        ("42703", 'column "v" of relation "t" does not exist', None, False),
    ],
)
def test_postgres_classes_22_and_23_are_the_tables(
    state: str, text: str, column: str | None, data: bool
) -> None:
    error = classify(None, state, text)
    assert (error is not None) is data
    if error is not None:
        assert error.code == f"SQLSTATE {state}" and error.column == column
        assert "abc" not in error.describe()


def test_a_column_reported_apart_from_the_text_is_kept() -> None:
    error = classify(None, "23502", 'null value in column "v" violates not-null constraint', column="v")
    assert error is not None and error.column == "v"
    assert "in column 'v'" in error.describe()


def test_no_code_is_no_data_error() -> None:
    assert classify(None, None, "Data too long for column 'v'") is None
    assert classify(None, "", "x") is None


def test_redact_keeps_only_the_first_line_and_the_column() -> None:
    text = 'null value in column "v" of relation "t"\nDETAIL:  Failing row contains (1, secret).'
    redacted, column = redact(text)
    assert column == "v" and "secret" not in redacted and '"v"' in redacted and '"t"' not in redacted
    assert redact("Incorrect string value: '\\xF0\\x9F' for column 'v'") == (
        "Incorrect string value: '…' for column 'v'",
        "v",
    )
    assert redact("") == ("", None)
    assert len(redact("x" * 1000)[0]) == 300


def test_without_tables_moves_cascade_marks_to_the_events_kept() -> None:
    from sparkcdc.core.cascades import Cascade, Hop
    from sparkcdc.core.events import ChangeEvent, Op
    from sparkcdc.core.offsets import BinlogOffset
    from sparkcdc.core.tables import TableId

    a, b, c = TableId("d", "a"), TableId("d", "b"), TableId("d", "c")
    at = BinlogOffset("b.1", 4)

    def event(table: TableId, key: int) -> ChangeEvent:
        return ChangeEvent(table, Op.DELETE, {"id": key}, None, at, key)

    def cascade(*tables: TableId) -> Cascade:
        path = tuple(Hop(t, ("p",), tables[0], ("id",)) for t in tables)
        return Cascade("delete", path, (1,))

    events = [event(a, 1), event(b, 2), event(a, 3), event(c, 4)]
    keep, lose = cascade(a, c), cascade(a, b)
    kept, marks = without_tables(events, [(1, lose), (3, keep), (4, keep)], {b})
    assert [e.table for e in kept] == [a, a, c]
    assert marks == [(2, keep), (3, keep)]  # after a, b(gone), a → after two kept events
