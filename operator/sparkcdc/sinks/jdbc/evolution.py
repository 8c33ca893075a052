"""Following a source table's column changes and truncations in a JDBC target.

Column changes (sinks/base.py ``ColumnChanges``) become ALTER TABLE statements in the order
drops, renames, adds, widenings. Each is skipped when the target already shows it: a replay
after a crash between the target's ALTER and the checkpoint finds a column already added, gone
or renamed (MariaDB commits each DDL statement on its own, so a crash can fall between two), and
a widening is re-run only on MariaDB, where MODIFY to the definition the column has is harmless.
New columns get the source's default so rows that existed before the change read the same value
in source and target. A rename's state is read from the names alone, which the tracker makes
unambiguous (no name freed and taken in one statement, mysql/ddl_alter.py); a target showing
neither or both names was changed by hand, and the table stops.

MariaDB/MySQL targets reuse the source's column definition (``MODIFY``, keeping the source's
column order); PostgreSQL targets change the mapped type only when it differs (``ALTER COLUMN
TYPE``, strings are ``text`` whatever their length) and ``DROP NOT NULL``.

TRUNCATE is a ``DELETE`` of the table's rows (confined to its own rows in a target merged by a
route; PostgreSQL's transactional ``TRUNCATE`` for a table alone in its target) inside the
sink's fenced transaction, after the batch before it committed and before any row after it.
Its replay is idempotent: a crash before the checkpoint past the statement resumes at or before
it, re-applies the rows between (they are in the binlog), empties the table again and then
applies every row after it, which the binlog also still holds: the target ends as the source.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from sparkcdc.mysql.columns import Column, Family
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks.base import ColumnChanges, TableSchemaError
from sparkcdc.sinks.targets import scoped

__all__ = ["alter_statements", "existing_columns", "pg_column_types", "pg_default", "truncate_statement"]

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


def pg_column_types(cur: Any, table: str) -> dict[str, str]:
    """The PostgreSQL target's column types as ``format_type`` spells them (``integer``,
    ``numeric(12,2)``), which is how ``pg_type`` spells them too."""
    cur.execute(
        "SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a "
        "WHERE a.attrelid = to_regclass(quote_ident(current_schema()) || '.' || quote_ident(%s)) "
        "AND a.attnum > 0 AND NOT a.attisdropped",
        (table,),
    )
    return {str(name): str(kind) for name, kind in cur.fetchall()}


def _renames(
    schema: TableSchema, have: list[str], renamed: Sequence[tuple[str, str]]
) -> list[tuple[str, str]]:
    """The renames still to do; a target with neither or both names cannot be followed."""
    todo = []
    for old, new in renamed:
        has_old, has_new = old in have, new in have
        if has_old and not has_new:
            todo.append((old, new))
            have[have.index(old)] = new
        elif has_old == has_new:
            raise TableSchemaError(
                f"cannot rename column {old!r} to {new!r} in the target {schema.sink_name} of "
                f"{schema.table}: "
                f"the target has {'both' if has_old else 'neither'} (changed outside sparkcdc?); resnapshot "
                f"{schema.table} (resnapshotTables) after fixing the target",
                schema.table,
            )
    return todo


def alter_statements(
    scheme: str,
    quote: Callable[[str], str],
    schema: TableSchema,
    existing: Sequence[str],
    changes: ColumnChanges,
    pg_types: dict[str, str] | None = None,
) -> list[str]:
    """ALTER TABLE statements that bring the target table from ``existing`` columns (and, on
    PostgreSQL, ``pg_types``) to ``changes``; steps the target already shows are skipped."""
    have = list(existing)
    lower = {c.lower() for c in have}
    table = quote(schema.sink_name)
    statements: list[str] = []
    mysql = scheme in ("mysql", "mariadb")
    for name in changes.dropped:
        if name.lower() in lower and name not in schema.row_key:
            statements.append(f"ALTER TABLE {table} DROP COLUMN {quote(name)}")
            lower.discard(name.lower())
            have = [c for c in have if c.lower() != name.lower()]
    for old, new in _renames(schema, have, changes.renamed):
        statements.append(f"ALTER TABLE {table} RENAME COLUMN {quote(old)} TO {quote(new)}")
        lower = {c.lower() for c in have}
    statements.extend(_adds(scheme, quote, table, lower, changes))
    current = dict(pg_types or {})
    for old, new in changes.renamed:  # the types under the names the columns have now
        if old in current and new not in current:
            current[new] = current.pop(old)
    for col in changes.altered:
        if mysql:
            statements.append(f"ALTER TABLE {table} MODIFY COLUMN {quote(col.name)} {_mysql_definition(col)}")
            continue
        from sparkcdc.sinks.jdbc.postgres import pg_type

        wanted = pg_type(col)
        if current.get(col.name) != wanted:
            using = f"{quote(col.name)}::{wanted}"
            statements.append(
                f"ALTER TABLE {table} ALTER COLUMN {quote(col.name)} TYPE {wanted} USING {using}"
            )
        if col.nullable and col.name not in schema.row_key:
            statements.append(f"ALTER TABLE {table} ALTER COLUMN {quote(col.name)} DROP NOT NULL")
    return statements


def _mysql_definition(col: Column) -> str:
    collate = f" COLLATE {col.collation}" if col.collation else ""
    null = "" if col.nullable else " NOT NULL"
    default = f" DEFAULT {col.default_sql}" if col.default_sql is not None else ""
    return f"{col.column_type}{collate}{null}{default}"


def _adds(
    scheme: str, quote: Callable[[str], str], table: str, have: set[str], changes: ColumnChanges
) -> list[str]:
    statements = []
    mysql = scheme in ("mysql", "mariadb")
    for add in changes.added:
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
    return statements


def truncate_statement(
    scheme: str, quote: Callable[[str], str], schema: TableSchema
) -> tuple[str, list[Any]]:
    """The statement that removes the table's rows in the sink's transaction (module docstring)."""
    table = quote(schema.sink_name)
    if not schema.scope and scheme not in ("mysql", "mariadb"):
        return f"TRUNCATE TABLE {table}", []
    where, params = scoped(schema, "1 = 1", [], quote)
    return f"DELETE FROM {table} WHERE {where}", params
