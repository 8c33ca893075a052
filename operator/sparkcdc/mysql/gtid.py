"""Pure logic for turning a startup GTID set or timestamp into a binlog position.

Nothing here talks to a server: ``binlog_search`` feeds these functions rows of
``SHOW BINLOG EVENTS`` and event timestamps, so the decisions are unit-tested per flavour.

MariaDB GTIDs are ``domain-server-sequence``; a GTID position lists the last applied GTID per
domain (``0-1-42,1-2-7``). MySQL GTID sets are ``uuid:interval[:interval]`` lists
(``3E11FA47-...:1-5:7``), which only the server can resolve (auto-position).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.mysql.errors import SourceError

__all__ = [
    "EventRow",
    "GtidScan",
    "MariaGtid",
    "is_mysql_gtid_set",
    "last_file_before",
    "parse_gtid_list_info",
    "parse_mariadb_gtid_set",
    "pick_start_file",
]

_MARIA_GTID = re.compile(r"^\s*(\d+)-(\d+)-(\d+)\s*$")
_MARIA_IN_INFO = re.compile(r"\bGTID (\d+)-(\d+)-(\d+)\b")
_MYSQL_UUID = re.compile(
    r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}"
    r"(:[A-Za-z0-9_]{1,32})?(:\d+(-\d+)?)+$"
)


@dataclass(frozen=True, order=True)
class MariaGtid:
    domain: int
    server: int
    seq: int

    def __str__(self) -> str:
        return f"{self.domain}-{self.server}-{self.seq}"


def parse_mariadb_gtid_set(text: str) -> dict[int, MariaGtid]:
    """``"0-1-42,1-2-7"`` -> {0: 0-1-42, 1: 1-2-7}. One GTID per domain, as MariaDB requires."""
    found: dict[int, MariaGtid] = {}
    for part in text.replace("\n", ",").split(","):
        if not part.strip():
            continue
        match = _MARIA_GTID.match(part)
        if match is None:
            raise SourceError(
                f"spec.startup.gtidSet {text!r} is not a MariaDB GTID position: expected "
                "domain-server-sequence entries separated by commas, e.g. 0-1-42"
            )
        gtid = MariaGtid(int(match.group(1)), int(match.group(2)), int(match.group(3)))
        if gtid.domain in found:
            raise SourceError(f"spec.startup.gtidSet {text!r} names domain {gtid.domain} twice")
        found[gtid.domain] = gtid
    if not found:
        raise SourceError("spec.startup.gtidSet is empty")
    return found


def is_mysql_gtid_set(text: str) -> bool:
    """Whether ``text`` looks like a MySQL GTID set (``uuid:1-5[:7],uuid2:1-3``)."""
    parts = [p.strip() for p in text.replace("\n", "").split(",") if p.strip()]
    return bool(parts) and all(_MYSQL_UUID.match(p) for p in parts)


def parse_gtid_list_info(info: str) -> dict[int, int]:
    """The ``Info`` of a MariaDB ``Gtid_list`` event (``[0-1-8,1-2-3]``): domain -> last sequence
    number written before the file began."""
    state: dict[int, int] = {}
    for part in info.strip().strip("[]").split(","):
        match = _MARIA_GTID.match(part)
        if match is not None:
            domain, seq = int(match.group(1)), int(match.group(3))
            state[domain] = max(seq, state.get(domain, 0))
    return state


def _within(state: Mapping[int, int], wanted: Mapping[int, MariaGtid]) -> bool:
    """Whether every transaction before a file with start ``state`` is in the wanted set."""
    return all(seq <= (wanted[d].seq if d in wanted else 0) for d, seq in state.items())


def pick_start_file(states: Sequence[Mapping[int, int]], wanted: Mapping[int, MariaGtid]) -> int | None:
    """Index of the last binlog file whose start state lies inside the wanted set (the scan for
    the first transaction after the set starts there), or None when even the oldest file starts
    after transactions that are not in the set (they were purged).

    File start states only grow, so this is a binary search (``states`` oldest first).
    """
    flags = [not _within(s, wanted) for s in states]  # False...False True...True
    index = bisect.bisect_left(flags, True) - 1
    return index if index >= 0 else None


@dataclass(frozen=True)
class EventRow:
    """One row of ``SHOW BINLOG EVENTS``."""

    file: str
    pos: int
    type: str
    end_pos: int
    info: str


@dataclass
class GtidScan:
    """Walks ``SHOW BINLOG EVENTS`` rows of MariaDB to find where the first transaction that is
    not in the wanted GTID position begins.

    A GTID position is a prefix of the binlog per domain. The answer is one file and position,
    so the set must also be a prefix of the binlog as a whole: once a transaction outside the
    set was seen, a later transaction inside it means no single position fits (domains written
    out of order); that raises ``SourceError`` instead of silently skipping or repeating changes.
    """

    wanted: Mapping[int, MariaGtid]
    start_state: Mapping[int, int]
    start: BinlogOffset | None = None
    _first_outside: MariaGtid | None = None

    def __post_init__(self) -> None:
        self._reached = {d for d, g in self.wanted.items() if self.start_state.get(d, 0) >= g.seq}

    def feed(self, rows: Iterable[EventRow]) -> bool:
        """Consume rows in binlog order; True once the answer is known (``start`` set)."""
        for row in rows:
            if row.type != "Gtid":
                continue
            match = _MARIA_IN_INFO.search(row.info)
            if match is None:
                continue
            gtid = MariaGtid(int(match.group(1)), int(match.group(2)), int(match.group(3)))
            wanted = self.wanted.get(gtid.domain)
            inside = wanted is not None and gtid.seq <= wanted.seq
            if wanted is not None and gtid.seq >= wanted.seq:
                self._reached.add(gtid.domain)
            if inside and self._first_outside is not None:
                raise SourceError(
                    f"spec.startup.gtidSet: transaction {gtid} lies after {self._first_outside}, which is "
                    "not in the set, so no single binlog position starts right after the set; give "
                    "a GTID position that is a prefix of the binlog, or use file and position"
                )
            if not inside and self._first_outside is None:
                self._first_outside = gtid
                self.start = BinlogOffset(row.file, row.pos)
            if self.start is not None and self._reached >= set(self.wanted):
                return True
        return False

    def finish(self, end: BinlogOffset, server_state: Mapping[int, int]) -> BinlogOffset:
        """The answer once every file was scanned: the first transaction outside the set, or the
        end of the binlog when the set holds everything. Raises when the set names transactions
        the server never wrote."""
        ahead = [str(g) for d, g in sorted(self.wanted.items()) if g.seq > server_state.get(d, 0)]
        if ahead:
            state = ",".join(f"{d}-?-{s}" for d, s in sorted(server_state.items())) or "empty"
            raise SourceError(
                f"spec.startup.gtidSet names {', '.join(ahead)}, which the source has not written yet "
                f"(its binlog GTID position is {state}); is this the right server?"
            )
        return self.start or end


def last_file_before(files: Sequence[str], first_timestamp: Callable[[str], int | None], target: int) -> int:
    """Index of the last binlog file whose first event is before ``target`` (seconds since the
    epoch), by binary search; 0 when no file does. Strictly before: binlog times have whole
    seconds, so a file started in the ``target`` second may follow events of that second in the
    file before it. ``first_timestamp`` returns None for a file it cannot read (treated as
    starting after the target)."""
    low, high = 0, len(files) - 1
    found = 0
    while low <= high:
        middle = (low + high) // 2
        stamp = first_timestamp(files[middle])
        if stamp is not None and stamp < target:
            found = middle
            low = middle + 1
        else:
            high = middle - 1
    return found
