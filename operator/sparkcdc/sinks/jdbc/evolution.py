"""Following ADD COLUMN / DROP COLUMN of a source table in a JDBC target.

The statements are idempotent against the target's current columns (a replay after a crash
between the target's ALTER and the checkpoint finds the column already there, or already gone),
and new columns get the source's default so rows that existed before the change read the same
value in source and target.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from sparkcdc.mysql.columns import Column, Family
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks.base import AddedColumn

__all__ = ["alter_statements", "existing_columns", "pg_default"]

_NUMBER = re.compile(r"^-?\d+(\.\d+)?([eE][-+]?\d+)?$")


def existing_columns(cur: Any, scheme: str, table: str) -> list[str]:
    """The target table's columns in order."""
    where = "DATABASE()" if scheme in ("mysql", "mariadb") else "current_schema()"
    cur.execute(
        "SELECT column_name FROM information_schema.columns "
        f"WHERE table_schema = {where} AND table_name = %s ORDER BY ordinal_position",
        (table,),
    )
    return [r[0].decode() if isinstance(r[0], bytes) else str(r[0]) for r in cur.fetchall()]


# Families whose MySQL literals PostgreSQL reads the same in the mapped type; temporal literals
# may be zero dates and BIT(1) maps to boolean, so their defaults are left out.
_PG_LITERAL_FAMILIES = {
    Family.INTEGER, Family.DECIMAL, Family.FLOAT, Family.DOUBLE, Family.YEAR,
    Family.STRING, Family.ENUM, Family.SET, Family.JSON,
}  # fmt: skip


def pg_default(column: Column, default_sql: str | None) -> str | None:
    """A PostgreSQL default for plain numeric and string literals; other expressions are left out."""
    if default_sql is None or column.family not in _PG_LITERAL_FAMILIES:
        return None
    text = default_sql.strip()
    if _NUMBER.match(text) or text.upper() == "NULL":
        return text
    if len(text) >= 2 and text[0] == text[-1] == "'" and "\\" not in text:
        return text
    return None


def alter_statements(
    scheme: str,
    quote: Callable[[str], str],
    schema: TableSchema,
    existing: Sequence[str],
    added: Sequence[AddedColumn],
    dropped: Sequence[str],
) -> list[str]:
    """ALTER TABLE statements that bring the target table from ``existing`` columns to the
    change; columns already added or already dropped are skipped."""
    have = {c.lower() for c in existing}
    table = quote(schema.sink_name)
    statements: list[str] = []
    mysql = scheme in ("mysql", "mariadb")
    for add in added:
        col = add.column
        if col.name.lower() in have:
            continue
        if mysql:
            collate = f" COLLATE {col.collation}" if col.collation else ""
            null = "" if col.nullable else " NOT NULL"
            default = f" DEFAULT {add.default_sql}" if add.default_sql is not None else ""
            if add.after is None:
                place = " FIRST"
            elif add.after.lower() in have:
                place = f" AFTER {quote(add.after)}"
            else:
                place = ""
            definition = f"{col.column_type}{collate}{null}{default}{place}"
            statements.append(f"ALTER TABLE {table} ADD COLUMN {quote(col.name)} {definition}")
        else:
            from sparkcdc.sinks.jdbc.postgres import pg_type

            pg_value = pg_default(col, add.default_sql)
            clause = f" DEFAULT {pg_value}" if pg_value is not None else ""
            statements.append(f"ALTER TABLE {table} ADD COLUMN {quote(col.name)} {pg_type(col)}{clause}")
        have.add(col.name.lower())
    for name in dropped:
        if name.lower() in have and name not in schema.row_key:
            statements.append(f"ALTER TABLE {table} DROP COLUMN {quote(name)}")
            have.discard(name.lower())
    return statements
