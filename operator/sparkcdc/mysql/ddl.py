"""A minimal, conservative reading of DDL statements from the binlog.

The binlog phase must know, for each DDL statement, which captured tables it touches and
whether the change is one the pipeline follows (ADD, DROP, RENAME COLUMN, MODIFY/CHANGE — the
last two only when the tracker finds them widening, engine/schema_changes.py — TRUNCATE, which
writes no row events, and the table's own rename or drop: ``RENAME TABLE``, ``ALTER TABLE …
RENAME TO``, ``DROP TABLE``, ``DROP DATABASE``, ``CREATE OR REPLACE TABLE``), one it can ignore
(indexes, table options, column defaults) or one that stops the table (primary key change,
partition drops, a rename combined with other changes). Anything not understood stops the table
too: a wrong guess there would silently corrupt the replica, a stop names the statement. The
ALTER TABLE specifications are read in mysql/ddl_alter.py.

Names may be backquoted (with doubled backquotes inside) and qualified (``db.t``); unqualified
names resolve against the statement's default schema (the ``USE`` database logged with it).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from sparkcdc.core.tables import TableId
from sparkcdc.mysql.columns import default_sql
from sparkcdc.mysql.ddl_alter import NAME_RX, read_alter, split_top_level, unquote

__all__ = [
    "DdlKind",
    "TableDdl",
    "column_defaults",
    "created_tables",
    "parse_ddl",
    "rename_pairs",
    "split_top_level",
    "strip_comments",
]

_NAME_RX = NAME_RX
_ALTER_PREFIX = re.compile(
    r"^ALTER\s+(?:ONLINE\s+|OFFLINE\s+)?(?:IGNORE\s+)?TABLE\s+(?:IF\s+EXISTS\s+)?", re.IGNORECASE
)


class DdlKind(str, Enum):
    EVOLVE = "evolve"  # columns added, dropped, renamed or redefined: followed where exact
    TRUNCATE = "truncate"  # every row removed, without row events: emptied in order with the stream
    RENAME = "rename"  # the table goes on under ``TableDdl.new_name`` (or stops being captured)
    DROP = "drop"  # the table is gone (also replaced): it stops being captured
    IGNORE = "ignore"  # no effect on the rows a replica holds
    FAIL = "fail"  # stop the table


@dataclass(frozen=True)
class TableDdl:
    """What one statement does to one table. ``renamed`` holds (old, new) column names;
    ``modified`` (name after the statement, declared definition) of MODIFY and CHANGE.
    ``declared_added`` (name, declared definition) of ADD COLUMN; not compared. ``new_name``: the
    table's name after a ``RENAME``."""

    table: TableId
    kind: DdlKind
    added: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()
    reason: str = ""
    renamed: tuple[tuple[str, str], ...] = ()
    modified: tuple[tuple[str, str], ...] = ()
    declared_added: tuple[tuple[str, str], ...] = field(default=(), compare=False)  # of ADD COLUMN
    new_name: TableId | None = None


def strip_comments(sql: str) -> str:
    """The statement without comments; ``/*!NNNNN ...*/`` version comments keep their body."""
    out: list[str] = []
    i, n = 0, len(sql)
    while i < n:
        ch = sql[i]
        if ch in "'\"`":
            end = i + 1
            while end < n:
                if sql[end] == "\\" and ch != "`":
                    end += 2
                    continue
                if sql[end] == ch:
                    if end + 1 < n and sql[end + 1] == ch:
                        end += 2
                        continue
                    break
                end += 1
            out.append(sql[i : end + 1])
            i = end + 1
        elif sql.startswith("/*", i):
            end = sql.find("*/", i + 2)
            end = n if end < 0 else end
            body = sql[i + 2 : end]
            match = re.match(r"[!M]!?\d*", body)
            if match is not None:
                out.append(" " + body[match.end() :] + " ")
            else:
                out.append(" ")
            i = end + 2
        elif (sql.startswith("--", i) and (i + 2 >= n or sql[i + 2].isspace())) or ch == "#":
            end = sql.find("\n", i)
            i = n if end < 0 else end
        else:
            out.append(ch)
            i += 1
    return " ".join("".join(out).split())


def _table(text: str, default_schema: str) -> tuple[TableId | None, str]:
    """The table name at the start of ``text`` and the rest."""
    match = _NAME_RX.match(text)
    if match is None:
        return None, text
    first, second = match.group(1), match.group(2)
    if second is not None:
        return TableId(unquote(first), unquote(second)), text[match.end() :]
    if not default_schema:
        return None, text[match.end() :]
    return TableId(default_schema, unquote(first)), text[match.end() :]


_RENAME_TABLE_SPEC = re.compile(r"^RENAME(?:\s+(?:TO|AS))?\s+(?!(?:COLUMN|INDEX|KEY)\b)", re.IGNORECASE)


def _alter_rename(body: str, table: TableId, default_schema: str) -> TableDdl | None:
    """``ALTER TABLE a RENAME [TO|AS] b`` as a table rename; None when the statement renames no
    table. Combined with other changes it stops the table: the target would have to take both
    in one step a crash could split."""
    specs = split_top_level(body)
    renames = [(s, m) for s in specs if (m := _RENAME_TABLE_SPEC.match(s)) is not None]
    if not renames:
        return None
    if len(specs) > 1:
        reason = "a table rename combined with other changes in one ALTER TABLE"
        return TableDdl(table, DdlKind.FAIL, reason=reason)
    spec, match = renames[0]
    new_name, rest = _table(spec[match.end() :], default_schema)
    if new_name is None or rest.strip():
        return TableDdl(table, DdlKind.FAIL, reason=f"unsupported change {spec!r}")
    return TableDdl(table, DdlKind.RENAME, new_name=new_name)


def _alter(body: str, table: TableId) -> TableDdl:
    specs = read_alter(body)
    if specs.fail:
        return TableDdl(table, DdlKind.FAIL, reason=f"unsupported change {specs.fail[0]!r}")
    if specs.added or specs.dropped or specs.renamed or specs.modified:
        return TableDdl(
            table,
            DdlKind.EVOLVE,
            tuple(specs.added),
            tuple(specs.dropped),
            renamed=tuple(specs.renamed),
            modified=tuple(specs.modified),
            declared_added=tuple(specs.declared_added),
        )
    return TableDdl(table, DdlKind.IGNORE)


def _names(text: str, default_schema: str) -> Iterator[TableId]:
    for part in split_top_level(text):
        table, _rest = _table(part, default_schema)
        if table is not None:
            yield table


def rename_pairs(statement: str, default_schema: str) -> list[tuple[TableId, TableId]]:
    """The (from, to) tables of a ``RENAME TABLE`` statement, in order; empty for any other
    statement, or when a pair cannot be read (the statement then stops its tables as a rename)."""
    sql = strip_comments(statement)
    match = re.match(r"^RENAME\s+TABLES?\s+", sql, re.IGNORECASE)
    if match is None:
        return []
    pairs: list[tuple[TableId, TableId]] = []
    for pair in split_top_level(sql[match.end() :]):
        source, rest = _table(pair, default_schema)
        to = re.match(r"^\s*(?:WAIT\s+\d+\s+|NOWAIT\s+)?TO\s+", rest, re.IGNORECASE)
        if source is None or to is None:
            return []
        target, tail = _table(rest[to.end() :], default_schema)
        if target is None or tail.strip():
            return []
        pairs.append((source, target))
    return pairs


def parse_ddl(statement: str, default_schema: str) -> list[TableDdl]:
    """What ``statement`` does to each table it names (tables not named are untouched).

    Statements that are not about tables (users, grants, databases other than DROP DATABASE,
    views, routines) give an empty list. ``DROP DATABASE`` gives a single entry with table
    ``*`` standing for every table of that database.
    """
    sql = strip_comments(statement)
    upper = sql.upper()
    alter = _ALTER_PREFIX.match(sql)
    if alter is not None:
        table, rest = _table(sql[alter.end() :], default_schema)
        if table is None:
            return []
        return [_alter_rename(rest, table, default_schema) or _alter(rest, table)]
    match = re.match(r"^RENAME\s+TABLES?\s+", upper)
    if match is not None:
        pairs = rename_pairs(sql, default_schema)
        if pairs:
            return [TableDdl(old, DdlKind.RENAME, new_name=new) for old, new in pairs]
        tables: list[TableDdl] = []
        for pair in split_top_level(sql[match.end() :]):
            source, _rest = _table(pair, default_schema)
            if source is not None:
                tables.append(TableDdl(source, DdlKind.FAIL, reason="a table rename that could not be read"))
        return tables
    match = re.match(r"^DROP\s+(?:TEMPORARY\s+)?TABLES?\s+(?:IF\s+EXISTS\s+)?", upper)
    if match is not None:
        if "TEMPORARY" in upper[: match.end()]:
            return []
        body = re.sub(r"\s+(?:RESTRICT|CASCADE)\s*$", "", sql[match.end() :], flags=re.IGNORECASE)
        body = re.sub(r"^(?:WAIT\s+\d+|NOWAIT)\s+", "", body, flags=re.IGNORECASE)
        return [
            TableDdl(t, DdlKind.DROP, reason="the table was dropped") for t in _names(body, default_schema)
        ]
    match = re.match(r"^TRUNCATE\s+(?:TABLE\s+)?", upper)
    if match is not None:
        table, _rest = _table(sql[match.end() :], default_schema)
        return [] if table is None else [TableDdl(table, DdlKind.TRUNCATE)]
    match = re.match(r"^CREATE\s+OR\s+REPLACE\s+(?:TEMPORARY\s+)?TABLE\s+", upper)
    if match is not None and "TEMPORARY" not in upper[: match.end()]:
        table, _rest = _table(sql[match.end() :], default_schema)
        return [] if table is None else [TableDdl(table, DdlKind.DROP, reason="the table was replaced")]
    match = re.match(r"^DROP\s+(?:DATABASE|SCHEMA)\s+(?:IF\s+EXISTS\s+)?", upper)
    if match is not None:
        db = _NAME_RX.match(sql[match.end() :])
        if db is None:
            return []
        reason = "its database was dropped"
        return [TableDdl(TableId(unquote(db.group(1)), "*"), DdlKind.DROP, reason=reason)]
    return []  # CREATE TABLE/INDEX, DROP INDEX, GRANT, ...: no effect on existing captured rows


_CREATE_TABLE = re.compile(
    r"^CREATE\s+(?:OR\s+REPLACE\s+)?(TEMPORARY\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?", re.IGNORECASE
)


def created_tables(statement: str, default_schema: str) -> list[TableId] | None:
    """The tables ``statement`` may make exist under a name they did not have: the table a
    ``CREATE TABLE`` creates (none for a temporary one), the new names of ``RENAME TABLE`` and
    ``ALTER TABLE … RENAME``; None when it cannot be told (a name that cannot be read)."""
    sql = strip_comments(statement)
    create = _CREATE_TABLE.match(sql)
    if create is not None:
        if create.group(1):
            return []
        table, _rest = _table(sql[create.end() :], default_schema)
        return None if table is None else [table]
    entries = parse_ddl(statement, default_schema)
    if any(e.kind is DdlKind.FAIL for e in entries):
        return None
    return [e.new_name for e in entries if e.kind is DdlKind.RENAME and e.new_name is not None]


def column_defaults(conn: Any, table: TableId, is_mariadb: bool) -> dict[str, str | None]:
    """Each column's default as a MySQL expression usable after ``DEFAULT`` (None: no default).

    MariaDB (10.2.7+) reports defaults as SQL (``'abc'``, ``5``, ``NULL``, ``current_timestamp()``);
    MySQL reports a literal's bare value and marks expressions with ``DEFAULT_GENERATED``.
    """
    with conn.cursor() as cur:
        cur.execute(
            "SELECT COLUMN_NAME, COLUMN_DEFAULT, EXTRA FROM information_schema.COLUMNS "
            "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s",
            (table.database, table.table),
        )
        rows = cur.fetchall()
    return {
        _text(name): default_sql(None if default is None else _text(default), _text(extra or ""), is_mariadb)
        for name, default, extra in rows
    }


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, (bytes, bytearray)) else str(value)
