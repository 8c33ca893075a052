"""The specifications of one ``ALTER TABLE`` statement, read conservatively (mysql/ddl.py).

Each comma-separated specification is sorted into what the replica must follow — columns
added, dropped, renamed (``RENAME COLUMN a TO b``, ``CHANGE a b ...``) or redefined (``MODIFY``,
``CHANGE``) — what it can ignore (indexes, options, defaults), and what stops the table. A
redefinition is only recorded here with its declared definition: whether it keeps every value
(a widening) needs the column's definitions before and after, which the schema tracker has
(engine/schema_changes.py, mysql/widening.py).

Names freed and taken again in one statement (``CHANGE a b .., CHANGE b a ..``, ``DROP b, CHANGE
a b ..``) stop the table: a target altered half-way by a crash could not tell from its columns'
names which of the steps it already took, so the replay could not be made exact.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["IDENT", "NAME_RX", "AlterSpecs", "read_alter", "split_top_level", "unquote"]

# An unquoted identifier's characters: ASCII letters, digits, ``_`` and ``$``, and U+0080 to U+FFFF.
# Spelt as two classes because the one-class form ``[0-9A-Za-z_$\u0080-\uffff]`` made every
# pattern holding it take tens of milliseconds to compile (a case-folded map of the whole range),
# paid at every start; both forms match exactly the same characters, with or without IGNORECASE.
IDENT = r"(?:`(?:[^`]|``)+`|(?:[0-9A-Za-z_$]|[^\x00-\x7f\U00010000-\U0010ffff])+)"
NAME_RX = re.compile(rf"\s*({IDENT})(?:\s*\.\s*({IDENT}))?")


def unquote(name: str) -> str:
    name = name.strip()
    if name.startswith("`") and name.endswith("`") and len(name) >= 2:
        return name[1:-1].replace("``", "`")
    return name


def split_top_level(text: str) -> list[str]:
    """Split at commas outside parentheses and quotes."""
    parts: list[str] = []
    depth, start, i, quote = 0, 0, 0, ""
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\" and quote != "`":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "'\"`":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
        i += 1
    parts.append(text[start:].strip())
    return [p for p in parts if p]


@dataclass
class AlterSpecs:
    """What one ALTER TABLE statement does to a table's columns."""

    added: list[str] = field(default_factory=list)
    declared_added: list[tuple[str, str]] = field(default_factory=list)  # (name, definition)
    dropped: list[str] = field(default_factory=list)
    renamed: list[tuple[str, str]] = field(default_factory=list)
    # (name after the statement, declared definition) of MODIFY and CHANGE
    modified: list[tuple[str, str]] = field(default_factory=list)
    fail: list[str] = field(default_factory=list)


_IGNORED = re.compile(
    r"^(?:ADD\s+(?:CONSTRAINT\b|(?:UNIQUE|FULLTEXT|SPATIAL|FOREIGN|INDEX|KEY|CHECK|PERIOD)\b)"
    r"|DROP\s+(?:INDEX|KEY|FOREIGN|CONSTRAINT|CHECK)\b"
    r"|ALTER\s+(?:COLUMN\s+)?" + IDENT + r"\s+(?:SET\s+DEFAULT|DROP\s+DEFAULT|SET\s+(?:IN)?VISIBLE)\b"
    r"|ALTER\s+(?:INDEX|KEY)\b|RENAME\s+(?:INDEX|KEY)\b"
    r"|ENGINE\b|(?:DEFAULT\s+)?(?:CHARACTER\s+SET|CHARSET|COLLATE)\b|COMMENT\b|AUTO_INCREMENT\b"
    r"|ROW_FORMAT\b|KEY_BLOCK_SIZE\b|STATS_\w+\b|PACK_KEYS\b|CHECKSUM\b|MAX_ROWS\b|MIN_ROWS\b"
    r"|AVG_ROW_LENGTH\b|DELAY_KEY_WRITE\b|PAGE_CHECKSUM\b|TRANSACTIONAL\b|ENCRYPTED\b|ENCRYPTION\w*\b"
    r"|FORCE\b|ALGORITHM\b|LOCK\b|ORDER\s+BY\b|(?:DISABLE|ENABLE)\s+KEYS\b|(?:ANALYZE|CHECK|OPTIMIZE"
    r"|REPAIR|REBUILD)\s+PARTITION\b|WAIT\b|NOWAIT\b)",
    re.IGNORECASE,
)
_ADD_COLUMN = re.compile(rf"^ADD\s+(?:COLUMN\s+)?(?:IF\s+NOT\s+EXISTS\s+)?({IDENT}|\()", re.IGNORECASE)
_DROP_COLUMN = re.compile(
    rf"^DROP\s+(?:COLUMN\s+)?(?:IF\s+EXISTS\s+)?({IDENT})\s*(?:RESTRICT|CASCADE)?$", re.I
)
_RENAME_COLUMN = re.compile(rf"^RENAME\s+COLUMN\s+(?:IF\s+EXISTS\s+)?({IDENT})\s+TO\s+({IDENT})$", re.I)
_CHANGE = re.compile(rf"^CHANGE\s+(?:COLUMN\s+)?(?:IF\s+EXISTS\s+)?({IDENT})\s+({IDENT})\s+(.+)$", re.I)
_MODIFY = re.compile(rf"^MODIFY\s+(?:COLUMN\s+)?(?:IF\s+EXISTS\s+)?({IDENT})\s+(.+)$", re.I)
_KEYWORDS_NOT_COLUMNS = {"PRIMARY", "INDEX", "KEY", "UNIQUE", "PARTITION", "SYSTEM", "CONSTRAINT"}


def _column_list(text: str) -> list[tuple[str, str]]:
    """Names and definitions of ``(a INT, b TEXT)``."""
    inner = text.strip()
    if inner.startswith("(") and inner.endswith(")"):
        inner = inner[1:-1]
    columns = []
    for part in split_top_level(inner):
        match = NAME_RX.match(part)
        if match is not None:
            columns.append((unquote(match.group(1)), part[match.end(1) :].strip()))
    return columns


def _spec(spec: str, result: AlterSpecs) -> None:
    if _IGNORED.match(spec):
        return
    added = _ADD_COLUMN.match(spec)
    if added is not None:
        head = added.group(1)
        if head == "(":
            columns = _column_list(spec[added.start(1) :])
        elif head.upper() in _KEYWORDS_NOT_COLUMNS:
            result.fail.append(spec)
            return
        else:
            columns = [(unquote(head), spec[added.end(1) :].strip())]
        result.added.extend(name for name, _ in columns)
        result.declared_added.extend(columns)
        return
    dropped = _DROP_COLUMN.match(spec)
    if dropped is not None and dropped.group(1).upper() not in _KEYWORDS_NOT_COLUMNS:
        result.dropped.append(unquote(dropped.group(1)))
        return
    renamed = _RENAME_COLUMN.match(spec)
    if renamed is not None:
        result.renamed.append((unquote(renamed.group(1)), unquote(renamed.group(2))))
        return
    changed = _CHANGE.match(spec)
    if changed is not None:
        old, new = unquote(changed.group(1)), unquote(changed.group(2))
        if old != new:
            result.renamed.append((old, new))
        result.modified.append((new, changed.group(3).strip()))
        return
    modified = _MODIFY.match(spec)
    if modified is not None:
        result.modified.append((unquote(modified.group(1)), modified.group(2).strip()))
        return
    result.fail.append(spec)


def read_alter(body: str) -> AlterSpecs:
    """The specifications after ``ALTER TABLE name``; ``fail`` holds those that stop the table."""
    result = AlterSpecs()
    for spec in split_top_level(body):
        _spec(spec, result)
    freed = {n.lower() for n in result.dropped} | {old.lower() for old, _ in result.renamed}
    taken = {n.lower() for n in result.added} | {new.lower() for _, new in result.renamed}
    # A case-only rename (CHANGE a A ...) frees and takes the same name: that is not a reuse.
    reused = sorted((freed & taken) - {o.lower() for o, n in result.renamed if o.lower() == n.lower()})
    if reused and not result.fail:
        result.fail.append(f"the column name {reused[0]!r} is freed and taken again in one statement")
    return result
