"""Column rules of ``spec.transforms``: which columns reach the sink, and which only masked.

A rule set is resolved against a table's columns once, when the table is discovered, so that a
misspelt column or a key column left out is refused before anything is read or written. Key
columns can be neither excluded nor masked: the sink identifies, deletes and rewrites rows by
them, and a hash is not ordered like the value it hides, so split ranges would stop meaning
anything in the target.

Masks are applied where the row is produced, in the task that read the snapshot split or the
driver that decoded the binlog, before any sink sees it. ``sha256`` keeps a column joinable
(equal values hash equally, in the snapshot and the binlog alike, since both produce the same
canonical value — architecture §3 rule 7); it is unsalted, so a low-entropy value (a birth date, a
four-digit PIN) can be found by trying them all: ``redact`` writes NULL instead.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sparkcdc.core.tables import TableId, is_table_pattern

MASKS = ("sha256", "redact")


def mask_value(kind: str, value: Any) -> str | None:
    """``value`` masked: the SHA-256 hex digest of its canonical text or bytes, or None."""
    if value is None or kind == "redact":
        return None
    binary = isinstance(value, (bytes, bytearray, memoryview))
    return hashlib.sha256(bytes(value) if binary else str(value).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ColumnRules:
    """What a table's target keeps of its columns: ``include`` (None: all) minus ``exclude``,
    with ``masks`` (column, kind) applied."""

    include: tuple[str, ...] | None = None
    exclude: tuple[str, ...] = ()
    masks: tuple[tuple[str, str], ...] = ()

    @property
    def empty(self) -> bool:
        return self.include is None and not self.exclude and not self.masks

    def resolve(self, table: TableId, columns: Sequence[str], key: Sequence[str]) -> tuple[str, ...]:
        """The kept columns in table order; ``ValueError`` naming the column and the reason for a
        column the table lacks, or a key column excluded or masked."""
        known = {c.lower(): c for c in columns}
        named = [*(self.include or ()), *self.exclude, *(c for c, _ in self.masks)]
        for name in named:
            if name.lower() not in known:
                raise ValueError(
                    f"spec.transforms names column {name!r}, which table {table} does not have; "
                    f"its columns are {', '.join(columns)}"
                )
        include = None if self.include is None else {c.lower() for c in self.include}
        exclude = {c.lower() for c in self.exclude}
        kept = tuple(
            c for c in columns if (include is None or c.lower() in include) and c.lower() not in exclude
        )
        keys = {k.lower() for k in key}
        for name in columns:
            if name.lower() in keys and name not in kept:
                raise ValueError(
                    f"spec.transforms leaves out key column {name!r} of table {table}; the sink "
                    "identifies and rewrites rows by their key, so key columns always go to the sink"
                )
        for name, _ in self.masks:
            if name.lower() in keys:
                raise ValueError(
                    f"spec.transforms masks key column {name!r} of table {table}; the sink "
                    "identifies and rewrites rows by their key, so key columns cannot be masked"
                )
        return kept

    def mask_of(self, column: str) -> str | None:
        for name, kind in self.masks:
            if name.lower() == column.lower():
                return kind
        return None


@dataclass(frozen=True)
class Transform:
    """``spec.transforms[i]``: column rules for the tables matching ``source_tables``."""

    source_tables: str
    rules: ColumnRules

    def matches(self, table: TableId) -> bool:
        if is_table_pattern(self.source_tables):
            return re.fullmatch(self.source_tables, str(table)) is not None
        return str(table) == self.source_tables


def rules_for(transforms: Sequence[Transform], table: TableId) -> ColumnRules:
    """The first matching transform's rules; no rules when none matches."""
    for transform in transforms:
        if transform.matches(table):
            return transform.rules
    return ColumnRules()
