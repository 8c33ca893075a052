"""A source table's rename and drop followed in its JDBC target (engine/table_moves.py).

A rename renames the target (MariaDB/MySQL ``RENAME TABLE``, PostgreSQL ``ALTER TABLE … RENAME
TO``) when the new name's target differs; a drop with ``spec.sink.onTableDrop: drop`` drops it
(``DROP TABLE IF EXISTS``), or in a target merged by a route deletes that table's rows only.

Each is one statement after the batch before the source's statement committed, and is read back
from the target before it runs, so a replay after a crash before the checkpoint past the
statement does nothing more: a target renamed already shows only the new name, a dropped one is
gone. The tracker refuses renames whose state names could not tell apart (a statement taking a
name another of its renames frees, table_moves.py). A new name whose target exists beside the old
one is refused unless it is empty — the table sink.prepare creates for a table discovered at a
restart, before the stream met the rename — which is then replaced.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks.base import TableSchemaError
from sparkcdc.sinks.targets import scoped

__all__ = ["drop_statement", "rename_statements"]


def _is_mysql(scheme: str) -> bool:
    return scheme in ("mysql", "mariadb")


def _holds_rows(cur: Any, quote: Callable[[str], str], table: str) -> bool:
    cur.execute(f"SELECT 1 FROM {quote(table)} LIMIT 1")
    return cur.fetchone() is not None


def rename_statements(
    scheme: str,
    quote: Callable[[str], str],
    exists: Callable[[str], bool],
    cur: Any,
    old: TableSchema,
    new: TableSchema,
) -> list[str]:
    """What renames ``old``'s target to ``new``'s, given which of them ``exists``; nothing when the
    target shows the rename already (or neither exists: nothing to carry over)."""
    if old.sink_name == new.sink_name or not exists(old.sink_name):
        return []
    statements = []
    if exists(new.sink_name):
        if _holds_rows(cur, quote, new.sink_name):
            raise TableSchemaError(
                f"cannot rename the target {old.sink_name} of {old.table} to {new.sink_name} for its new "
                f"name {new.table}: the sink has a table {new.sink_name} already, with rows. Drop or rename "
                f"that table in the sink, then resnapshot {new.table} (resnapshotTables)",
                old.table,
            )
        statements.append(f"DROP TABLE {quote(new.sink_name)}")
    if _is_mysql(scheme):
        statements.append(f"RENAME TABLE {quote(old.sink_name)} TO {quote(new.sink_name)}")
    else:
        statements.append(f"ALTER TABLE {quote(old.sink_name)} RENAME TO {quote(new.sink_name)}")
    return statements


def drop_statement(quote: Callable[[str], str], schema: TableSchema) -> tuple[str, list[Any]]:
    """What removes a dropped table's target: the table, or in a target merged by a route only
    its rows (both harmless when repeated)."""
    if not schema.scope:
        return f"DROP TABLE IF EXISTS {quote(schema.sink_name)}", []
    where, params = scoped(schema, "1 = 1", [], quote)
    return f"DELETE FROM {quote(schema.sink_name)} WHERE {where}", params
