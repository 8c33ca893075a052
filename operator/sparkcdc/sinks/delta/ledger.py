"""What a Delta table's history says about its snapshot ranges: may a wave simply append?

Every data-bearing commit records what wrote it (``userMetadata``). While all of them are
sparkcdc snapshot commits, the table holds rows only in the split ranges those commits list, so
a wave whose ranges overlap none of them can append instead of replacing (``snapshot.py``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sparkcdc.core.jsoncodec import decode_key
from sparkcdc.core.keys import KeyOrder
from sparkcdc.core.splits import Key
from sparkcdc.sinks.delta.config import commit_metadata

__all__ = ["Ledger", "rs_table_ledger", "table_ledger"]

Range = tuple[Key | None, Key | None]
HistoryRow = tuple[int, str, str | None]

# Commits that change no rows: they keep a table's snapshot history "clean".
_METADATA_ONLY = {
    "CREATE TABLE",
    "ADD COLUMNS",
    "DROP COLUMNS",
    "CHANGE COLUMN",
    "RENAME COLUMN",
    "SET TBLPROPERTIES",
    "UNSET TBLPROPERTIES",
    "UPGRADE PROTOCOL",
    "OPTIMIZE",
    "VACUUM START",
    "VACUUM END",
    "ADD CONSTRAINT",
    "DROP CONSTRAINT",
}


@dataclass
class Ledger:
    """What the commits up to ``version`` say: ``clean`` while every commit that added rows was
    a sparkcdc snapshot commit, and the split ranges those commits wrote."""

    version: int = -1
    clean: bool = True
    ranges: list[Range] = field(default_factory=list)

    def add(self, rows: Sequence[HistoryRow]) -> None:
        for version, operation, user_metadata in sorted(rows, key=lambda r: r[0]):
            if version <= self.version:
                continue
            if version != self.version + 1:
                self.clean = False  # commits we cannot see (log cleanup): assume rows anywhere
            meta = commit_metadata(user_metadata)
            phase = meta.get("phase") if meta else None
            if phase == "snapshot" and meta is not None:
                for _index, start, end in meta.get("splits", []):
                    self.ranges.append(
                        (
                            None if start is None else decode_key(start),
                            None if end is None else decode_key(end),
                        )
                    )
            elif phase in ("schema", "create") or (meta is None and operation in _METADATA_ONLY):
                pass
            else:
                self.clean = False
            self.version = version

    def empty_in(self, ranges: Sequence[Range], order: KeyOrder) -> bool:
        """True when the table certainly has no rows in any of ``ranges``."""
        return self.clean and not any(_overlap(a, b, order) for a in ranges for b in self.ranges)


def _overlap(a: Range, b: Range, order: KeyOrder) -> bool:
    (s1, e1), (s2, e2) = a, b
    first = s1 is None or e2 is None or order.compare(s1, e2) < 0
    second = s2 is None or e1 is None or order.compare(s2, e1) < 0
    return first and second


# Per driver process, keyed by table path. Always brought up to the table's latest version before
# use, so it is never stale; the cache only saves re-reading the whole history every wave.
_LEDGERS: dict[str, Ledger] = {}
_LOCK = threading.Lock()


# Commits read in one go: a wave's ledger is usually a commit or two behind (its own last write,
# a MERGE in between), so one history job brings it up to date.
_RECENT = 16


def table_ledger(spark: Any, path: str) -> Ledger:
    """The ledger of the table at ``path``, brought up to its latest version (usually with one
    Spark job over the recent history; the whole history only when more is new)."""
    from delta.tables import DeltaTable

    table = DeltaTable.forPath(spark, path)
    return _brought_up(path, lambda limit: _history(table, limit))


def rs_table_ledger(table: Any, path: str) -> Ledger:
    """The same ledger read by delta-rs from ``table`` (a ``deltalake.DeltaTable`` of ``path``),
    without Spark (arrow_append.py)."""

    def history(limit: int | None) -> list[HistoryRow]:
        return [
            (int(c["version"]), str(c.get("operation", "")), c.get("userMetadata"))
            for c in table.history(limit)
        ]

    return _brought_up(path, history)


def _brought_up(path: str, history: Callable[[int | None], list[HistoryRow]]) -> Ledger:
    rows = history(_RECENT)
    latest = max(r[0] for r in rows)
    with _LOCK:
        ledger = _LEDGERS.get(path)
        if ledger is None or ledger.version > latest:
            ledger = Ledger()
    if latest > ledger.version and min(r[0] for r in rows) > ledger.version + 1:
        rows = history(None if ledger.version < 0 else latest - ledger.version)
    # Under the lock: the driver's task threads bring the same ledger up to date at once.
    with _LOCK:
        ledger.add(rows)
        _LEDGERS[path] = ledger
    return ledger


def _history(table: Any, limit: int | None) -> list[HistoryRow]:
    """(version, operation, userMetadata) of the latest ``limit`` commits (all when None)."""
    history = table.history() if limit is None else table.history(limit)
    return [
        (int(r[0]), str(r[1]), r[2]) for r in history.select("version", "operation", "userMetadata").collect()
    ]
