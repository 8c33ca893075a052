"""The names online schema-change tools give the tables they work with beside a table ``x``.

gh-ost and pt-online-schema-change change a table by building a copy with the new definition
(the *ghost* or *new* table), keeping it current while they copy (gh-ost from the binlog, pt-osc
through triggers), then swapping it in with one ``RENAME TABLE x TO <old>, <ghost> TO x``. The
copies are not tables of the user's: capturing them would snapshot a half-built table, and their
rows are x's rows again. They are told apart here by their names alone, so that discovery
(engine/discovery.py) leaves them out and the stream can recognise the swap
(engine/online_schema_change.py):

* gh-ost (``GetGhostTableName`` and friends in its ``go/base/context.go``): ``_x_gho`` (ghost),
  ``_x_ghc`` (its changelog), ``_x_del`` or ``_x_<YYYYMMDDHHMMSS>_del`` (the old table); a name
  past 64 characters is made to fit by cutting the end of ``x``;
* pt-online-schema-change (``create_new_table``, ``swap_tables``): ``_x_new`` (new) and
  ``_x_old`` (old), with more leading underscores when the name is taken (up to ten), then for
  the old table random six-character ``[A-Z0-9]`` prefixes; a name past 64 characters is cut at
  64, which may cut the suffix off.

``--force-table-names`` (gh-ost) and ``--new-table-name`` (pt-osc) choose other names: those are
not recognised, and such a swap stops the table as any table rename does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

from sparkcdc.core.tables import TableId

__all__ = ["MAX_NAME", "Role", "ShadowName", "is_shadow_of", "shadow_candidates", "shadow_tables"]

MAX_NAME = 64  # MySQL's and MariaDB's longest table name


class Role(str, Enum):
    GHOST = "ghost"  # the copy with the new definition, swapped in as x
    OLD = "old"  # x's previous table after the swap
    CHANGELOG = "changelog"  # gh-ost's own bookkeeping


@dataclass(frozen=True)
class ShadowName:
    """One reading of a table name as a tool's table. ``base`` is x; for a name cut to 64
    characters (``cut``) the start of x (gh-ost), or the start of x followed by ``suffix``
    (pt-osc, whose cut may take the suffix or part of it)."""

    tool: str
    role: Role
    base: str
    cut: bool = False
    suffix: str = ""

    def names(self, table: str) -> bool:
        """Whether this reading is a shadow of ``table``."""
        if not self.base or not table:
            return False
        if not self.cut:
            return table == self.base
        whole = table + self.suffix
        return len(whole) > len(self.base) and whole.startswith(self.base)


_GH_OST = re.compile(r"^_(?P<base>.+?)_(?P<suffix>gho|ghc|del|\d{14}_del)$", re.DOTALL)
_GH_OST_ROLES = {"gho": Role.GHOST, "ghc": Role.CHANGELOG, "del": Role.OLD}
# Leading underscores (the first tries), then random prefixes (after ten tries).
_PT_OSC_PREFIX = re.compile(r"^(?:_{1,11}(?:[A-Z0-9]{6}_)*|(?:[A-Z0-9]{6}_)+)")
_PT_OSC_SUFFIXES = {"_new": Role.GHOST, "_old": Role.OLD}


def shadow_candidates(name: str) -> list[ShadowName]:
    """Every reading of ``name`` as a tool's table (none: not such a name)."""
    found: list[ShadowName] = []
    full = len(name) == MAX_NAME
    match = _GH_OST.match(name)
    if match is not None:
        suffix = match.group("suffix")
        role = _GH_OST_ROLES[suffix[-3:]]
        found.append(ShadowName("gh-ost", role, match.group("base")))
        if full:
            found.append(ShadowName("gh-ost", role, match.group("base"), cut=True))
    prefix = _PT_OSC_PREFIX.match(name)
    if prefix is not None and prefix.end() > 0:
        rest = name[prefix.end() :]
        for suffix, role in _PT_OSC_SUFFIXES.items():
            if rest.endswith(suffix) and len(rest) > len(suffix):
                found.append(ShadowName("pt-online-schema-change", role, rest[: -len(suffix)]))
        if full:
            # Cut at 64: whatever follows the prefix is the start of ``x`` + suffix.
            found.extend(
                ShadowName("pt-online-schema-change", role, rest, cut=True, suffix=suffix)
                for suffix, role in _PT_OSC_SUFFIXES.items()
            )
    return found


def is_shadow_of(name: str, table: str, role: Role | None = None) -> bool:
    """Whether ``name`` is a tool's table (of ``role``, when given) for ``table``."""
    if name == table:
        return False
    for candidate in shadow_candidates(name):
        if (role is None or candidate.role is role) and candidate.names(table):
            return True
    return False


def shadow_tables(tables: Iterable[TableId]) -> set[TableId]:
    """The tables among ``tables`` that are a tool's tables for another of them (a ``_x_new``
    without an ``x`` beside it is taken for the user's own table)."""
    tables = list(tables)
    by_db: dict[str, list[str]] = {}
    for t in tables:
        by_db.setdefault(t.database, []).append(t.table)
    out: set[TableId] = set()
    for t in tables:
        candidates = shadow_candidates(t.table)
        if candidates and any(
            c.names(other) for c in candidates for other in by_db[t.database] if other != t.table
        ):
            out.add(t)
    return out
