"""Which errors are one table's own: its rows the sink refuses, or its binlog rows undecodable.

Such an error stops only its table (``Phase.FAILED`` in the checkpoint); every other error stops
the run, whose checkpoint stays at the last committed batch or split, so a restart redoes the
failed write. The line is drawn by whitelist, on purpose: only error codes that say "this value
does not fit this target column or constraint" fail a table. A lost connection, a lock timeout or
deadlock (retried before it gets here), a full disk, missing privileges, a fence refusal or an
unknown error says nothing about one table's data, and failing a table for it would stop that
table for good over something a restart fixes.

Messages never carry row values: the database's text is kept with its quoted literals redacted,
except the column name it reports (a masked column's value could otherwise leak into a status).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["MYSQL_DATA_ERRORS", "DataError", "classify", "redact"]

# MySQL/MariaDB error codes that mean "this row's value does not fit the target" (strict mode).
MYSQL_DATA_ERRORS: dict[int, str] = {
    1048: "a NULL for a NOT NULL column",
    1062: "a duplicate value for a unique key of the target",
    1264: "a value out of the column's range",
    1265: "a value truncated to fit the column",
    1292: "an incorrect date, time or number value",
    1366: "an incorrect value for the column's type or character set",
    1367: "an illegal value",
    1406: "a value too long for the column",
    1416: "a value that is not a geometry the column stores",
    1451: "a row a foreign key of the target still references",
    1452: "a row a foreign key of the target refuses",
    1690: "a value out of range",
    3819: "a row a CHECK constraint of the target refuses",
    4025: "a row a CONSTRAINT of the target refuses",
}
# PostgreSQL SQLSTATE classes: 22 data exception, 23 integrity constraint violation.
POSTGRES_DATA_CLASSES: dict[str, str] = {
    "22": "a value the column's type refuses",
    "23": "a row a constraint of the target refuses",
}

_QUOTED = re.compile(r"'(?:[^'\\]|\\.|'')*'|\"(?:[^\"]|\"\")*\"")
# "for column 'v'", "Column 'v' cannot be null", "for column `db`.`t`.`v`", 'in column "v"'
_COLUMN = re.compile(r"""column\s+(?:[`'"][^`'"]*[`'"]\.)*([`'"])([^`'"]+)\1""", re.IGNORECASE)
_MAX_DETAIL = 300


@dataclass(frozen=True)
class DataError:
    """An error about one table's data: what the database said, without values."""

    code: str  # "MySQL error 1406", "SQLSTATE 22001"
    kind: str  # what the code means, in words
    column: str | None  # the column the database names, if it does
    detail: str  # the database's message, values redacted

    def describe(self) -> str:
        column = f" in column {self.column!r}" if self.column else ""
        return f"{self.code} ({self.kind}){column}: {self.detail}"


def redact(text: str) -> tuple[str, str | None]:
    """``text`` (first line only: PostgreSQL's DETAIL lines hold the row's values) with every
    quoted literal replaced by ``'…'`` except the column name the text reports, and that column
    name (or None)."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    found = _COLUMN.search(line)
    column = found.group(2) if found else None
    kept = found.span(2) if found else (-1, -1)

    def hide(match: re.Match[str]) -> str:
        quote = match.group(0)[0]
        return match.group(0) if (match.start() + 1, match.end() - 1) == kept else f"{quote}…{quote}"

    redacted = _QUOTED.sub(hide, line)
    if len(redacted) > _MAX_DETAIL:
        redacted = redacted[: _MAX_DETAIL - 3] + "..."
    return redacted, column


def classify(
    mysql_code: int | None, sqlstate: str | None, text: str, column: str | None = None
) -> DataError | None:
    """The data error an error stands for, or None when it is not clearly one table's data.

    ``mysql_code``: a MySQL/MariaDB error number (pymysql's ``args[0]``); ``sqlstate``: a
    PostgreSQL SQLSTATE; ``text``: the database's message; ``column``: a column the driver
    reported apart from the text (PostgreSQL's ``diag.column_name``).
    """
    if mysql_code is not None:
        kind = MYSQL_DATA_ERRORS.get(mysql_code)
        code = f"MySQL error {mysql_code}"
    elif sqlstate is not None and len(sqlstate) == 5:
        kind = POSTGRES_DATA_CLASSES.get(sqlstate[:2])
        code = f"SQLSTATE {sqlstate}"
    else:
        return None
    if kind is None:
        return None
    detail, named = redact(text)
    return DataError(code, kind, column or named, detail)
