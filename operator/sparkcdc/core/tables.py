"""Table identities and the captured-table filter."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class TableId:
    database: str
    table: str

    def __str__(self) -> str:
        return f"{self.database}.{self.table}"

    @classmethod
    def parse(cls, text: str) -> TableId:
        database, sep, table = text.partition(".")
        if not sep or not database or not table:
            raise ValueError(f"table name {text!r} must be of the form db.table")
        return cls(database, table)


_REGEX_CHARS = set("\\^$*+?[](){}|")


def is_table_pattern(text: str) -> bool:
    """True when a ``source.tables`` entry is a regular expression rather than a plain name."""
    return any(ch in _REGEX_CHARS for ch in text)


def select_tables(patterns: Iterable[str], available: Iterable[TableId]) -> list[TableId]:
    """The tables among ``available`` that some entry names exactly or matches as a whole regex."""
    compiled = [re.compile(p) for p in patterns if is_table_pattern(p)]
    names = {p for p in patterns if not is_table_pattern(p)}
    chosen = [t for t in available if str(t) in names or any(rx.fullmatch(str(t)) for rx in compiled)]
    return sorted(set(chosen))
