"""Whether a column redefinition (MODIFY, CHANGE) keeps every value the column can hold.

A redefinition rewrites the table's rows on the source without writing row events, so the
replica can follow it only when no stored value changes: a longer VARCHAR or VARBINARY, a
larger integer type (unsigned to signed only when the larger type holds the unsigned range;
signed never becomes unsigned: no unsigned type holds negatives), a DECIMAL with at least as
many digits before and after the point, NOT NULL becoming NULL. Anything else — shorter,
smaller, another type family, another character set or collation, NULL becoming NOT NULL (the
server turns NULLs into zeros or empty strings) — may have changed stored values, and the
table must stop.

``declared_matches`` compares a column's definition with the one a statement declares: when a
stream resumed from before a statement reads a definition loaded after it, the two tell whether
that definition is still the statement's (engine/schema_changes.py).
"""

from __future__ import annotations

import re
from dataclasses import replace

from sparkcdc.mysql.columns import Column, Family, family_of

__all__ = ["declared_conflicts", "declared_matches", "widening_problem"]

_INT_BITS = {"tinyint": 8, "smallint": 16, "mediumint": 24, "int": 32, "integer": 32, "bigint": 64}
_ALIASES = {
    "integer": "int", "numeric": "decimal", "dec": "decimal", "fixed": "decimal", "bool": "tinyint",
    "boolean": "tinyint", "real": "double", "nvarchar": "varchar", "nchar": "char",
}  # fmt: skip
# Type names whose spelling in a statement is the data type information_schema reports.
_PLAIN = {
    *_INT_BITS, "decimal", "float", "double", "bit", "year", "date", "datetime", "timestamp", "time",
    "char", "varchar", "binary", "varbinary", "tinytext", "text", "mediumtext", "longtext",
    "tinyblob", "blob", "mediumblob", "longblob", "enum", "set",
}  # fmt: skip
_TYPE = re.compile(
    r"^\s*(?:(?P<national>NATIONAL)\s+)?(?P<name>[A-Za-z]+(?:\s+PRECISION|\s+VARYING)?)\s*"
    r"(?:\((?P<args>[^)]*)\))?(?P<rest>.*)$",
    re.IGNORECASE | re.DOTALL,
)


def _int_range(column: Column) -> tuple[int, int]:
    bits = _INT_BITS[column.data_type.lower()]
    if column.unsigned:
        return 0, 2**bits - 1
    return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1


def widening_problem(old: Column, new: Column) -> str | None:
    """None when every value ``old`` can hold is stored unchanged in ``new``; else why not."""
    what = f"column {new.name!r} changed from {old.column_type} to {new.column_type}"
    if old.nullable and not new.nullable:
        return f"column {new.name!r} became NOT NULL (NULLs are rewritten without row events)"
    if old.family is not new.family:
        return f"{what}: another type family"
    if (old.charset, old.collation) != (new.charset, new.collation):
        return f"{what}: another character set or collation ({old.collation} to {new.collation})"
    if old.column_type.lower() == new.column_type.lower():
        return None
    family = old.family
    if family is Family.INTEGER and old.data_type in _INT_BITS and new.data_type in _INT_BITS:
        (lo, hi), (nlo, nhi) = _int_range(old), _int_range(new)
        return None if nlo <= lo and hi <= nhi else f"{what}: a smaller range"
    if family is Family.DECIMAL:
        digits = int(old.precision or 10) - int(old.scale or 0)
        new_digits = int(new.precision or 10) - int(new.scale or 0)
        if new.unsigned and not old.unsigned:
            return f"{what}: negative values cannot be stored"
        if new_digits >= digits and int(new.scale or 0) >= int(old.scale or 0):
            return None
        return f"{what}: fewer digits"
    if old.data_type == new.data_type and old.data_type in ("varchar", "varbinary"):
        if int(new.length or 0) >= int(old.length or 0):
            return None
        return f"{what}: shorter"
    return f"{what}: not a widening sparkcdc follows"


def _declared_name(text: str) -> str:
    name = " ".join(text.lower().split())
    name = {"character varying": "varchar", "char varying": "varchar", "double precision": "double"}.get(
        name, name
    )
    return _ALIASES.get(name, name)


def declared_conflicts(column: Column, definition: str) -> bool:
    """Whether ``column`` is certainly not what ``definition`` declares (ADD COLUMN): a type
    spelling not known here (``JSON``, ``SERIAL``, ...) is not a conflict."""
    match = _TYPE.match(definition)
    if match is None:
        return False
    name = _declared_name(match.group("name"))
    if name != column.data_type.lower():
        return name in _PLAIN and column.data_type.lower() in _PLAIN
    # Nullability does not change how rows decode: a column made NULL since is no conflict.
    typed = re.sub(r"\b(?:NOT\s+)?NULL\b", " ", definition, flags=re.IGNORECASE)
    return not declared_matches(replace(column, nullable=True), typed)


def declared_matches(column: Column, definition: str) -> bool:
    """Whether ``column`` is what ``definition`` (the text after the column name in MODIFY or
    CHANGE) declares: type, length, precision and scale, signedness and, when declared,
    nullability. Display widths, defaults, comments and positions are not compared."""
    match = _TYPE.match(definition)
    if match is None:
        return False
    name = _declared_name(match.group("name"))
    if name != column.data_type.lower() or family_of(name) is not column.family:
        return False
    args = [a.strip() for a in (match.group("args") or "").split(",") if a.strip()]
    rest = " ".join(match.group("rest").upper().split())
    if column.family is Family.INTEGER:
        if ("UNSIGNED" in rest.split()) != column.unsigned:
            return False
    elif column.family is Family.DECIMAL:
        precision = int(args[0]) if args else 10
        scale = int(args[1]) if len(args) > 1 else 0
        if (precision, scale) != (int(column.precision or 10), int(column.scale or 0)):
            return False
        if ("UNSIGNED" in rest.split()) != column.unsigned:
            return False
    elif column.data_type in ("varchar", "varbinary", "char", "binary"):
        length = int(args[0]) if args else 1
        if length != int(column.length or 0):
            return False
    not_null = re.search(r"(?<!\w)NOT NULL\b", rest) is not None
    if not_null:
        return not column.nullable
    return column.nullable or re.search(r"\bNULL\b", rest) is None
