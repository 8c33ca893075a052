"""The captured tables' foreign keys, read from the source.

InnoDB runs referential actions without logging them (core/cascades.py), so the stream needs the
constraints themselves to follow them. ``KEY_COLUMN_USAGE`` gives the column pairs in constraint
order; the actions come from ``SHOW CREATE TABLE``, because MariaDB lists
``REFERENTIAL_CONSTRAINTS`` rows only to users with more than SELECT on the table, and a CDC
account has SELECT alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import pymysql

from sparkcdc.core.cascades import ForeignKey
from sparkcdc.core.tables import TableId

__all__ = ["load_foreign_keys", "referential_rules"]

_COLUMNS_SQL = """
SELECT TABLE_SCHEMA, TABLE_NAME, CONSTRAINT_NAME, COLUMN_NAME,
       REFERENCED_TABLE_SCHEMA, REFERENCED_TABLE_NAME, REFERENCED_COLUMN_NAME
FROM information_schema.KEY_COLUMN_USAGE
WHERE TABLE_SCHEMA IN ({schemas}) AND REFERENCED_TABLE_NAME IS NOT NULL
ORDER BY TABLE_SCHEMA, TABLE_NAME, CONSTRAINT_NAME, ORDINAL_POSITION
"""

_ACTION = r"(RESTRICT|CASCADE|SET NULL|NO ACTION|SET DEFAULT)"
_CONSTRAINT = re.compile(
    r"CONSTRAINT\s+`((?:[^`]|``)+)`\s+FOREIGN KEY\s*\([^)]*\)\s*REFERENCES\s+[^(]+\([^)]*\)"
    rf"(?:\s+ON DELETE\s+{_ACTION})?(?:\s+ON UPDATE\s+{_ACTION})?",
    re.IGNORECASE,
)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, (bytes, bytearray)) else str(value)


def referential_rules(create_table: str) -> dict[str, tuple[str, str]]:
    """Constraint name -> (ON DELETE, ON UPDATE) from a ``SHOW CREATE TABLE`` text; an action
    left out is RESTRICT (InnoDB's NO ACTION, which behaves the same)."""
    rules = {}
    for m in _CONSTRAINT.finditer(create_table):
        rules[m.group(1).replace("``", "`")] = (
            (m.group(2) or "RESTRICT").upper(),
            (m.group(3) or "RESTRICT").upper(),
        )
    return rules


def load_foreign_keys(conn: Any, tables: Iterable[TableId]) -> list[ForeignKey]:
    """Foreign keys whose child is one of ``tables`` (their parents may be any table)."""
    wanted = set(tables)
    schemas = sorted({t.database for t in wanted})
    if not schemas:
        return []
    grouped: dict[tuple[TableId, str], list[tuple[str, ...]]] = {}
    with conn.cursor(pymysql.cursors.Cursor) as cur:
        cur.execute(_COLUMNS_SQL.format(schemas=", ".join(["%s"] * len(schemas))), schemas)
        for row in cur.fetchall():
            values = tuple(_text(v) for v in row)
            child = TableId(values[0], values[1])
            if child in wanted:
                grouped.setdefault((child, values[2]), []).append(values)
        rules: dict[TableId, dict[str, tuple[str, str]]] = {}
        for child in sorted({child for child, _ in grouped}):
            cur.execute(f"SHOW CREATE TABLE `{_escape(child.database)}`.`{_escape(child.table)}`")
            rules[child] = referential_rules(_text(cur.fetchone()[1]))
    out = []
    for (child, name), parts in grouped.items():
        on_delete, on_update = rules[child].get(name, ("RESTRICT", "RESTRICT"))
        out.append(
            ForeignKey(
                name=name,
                child=child,
                child_columns=tuple(p[3] for p in parts),
                parent=TableId(parts[0][4], parts[0][5]),
                parent_columns=tuple(p[6] for p in parts),
                on_delete=on_delete,
                on_update=on_update,
            )
        )
    return out


def _escape(name: str) -> str:
    return name.replace("`", "``")
