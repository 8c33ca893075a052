"""Asking a source who it is, whether it holds a checkpoint's history, and where GTIDs are on it.

* **identity** — ``@@server_id`` plus MySQL's ``@@server_uuid`` or MariaDB's ``@@gtid_domain_id``.
* **history** — the same ids do not prove the same binlog: a backup restored behind the same
  address has them too. A checkpointed offset whose GTID position is known is checked with
  ``BINLOG_GTID_POS(file, pos)``: the server that wrote it reports exactly that position there;
  any other server reports another one, or none (no such file, not an event boundary).
* **transactions held** — ``@@gtid_binlog_state`` lists the last sequence number binlogged per
  domain *and* originating server, so a replica that lagged (or an older backup) shows that it
  lacks the checkpoint's last transaction even once it has written newer ones of its own.
* **positions by GTID** — many GTID positions are looked up in one pass over ``SHOW BINLOG
  EVENTS`` (the same search as ``spec.startup.gtidSet``, binlog_search.py).

MariaDB only: MySQL's GTID sets need set arithmetic the stream does not track yet, so a MySQL
checkpoint moved to another server is refused (engine/source_change.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pymysql

from sparkcdc.core.offsets import BinlogOffset, binlog_file_index
from sparkcdc.core.source_identity import SourceIdentity
from sparkcdc.mysql.binlog.search import _file_state, _iter_events
from sparkcdc.mysql.errors import SourceError
from sparkcdc.mysql.flavor import ServerFlavor
from sparkcdc.mysql.gtid import GtidScan, parse_gtid_list_info, parse_mariadb_gtid_set, pick_start_file
from sparkcdc.mysql.queries import binlog_files

__all__ = [
    "gtid_at",
    "gtid_binlog_state",
    "history_problem",
    "map_gtid_positions",
    "missing_transactions",
    "read_identity",
    "same_gtid_position",
    "with_gtid",
]


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, (bytes, bytearray)) else str(value)


def _one(conn: Any, sql: str, params: Any = None) -> Any:
    with conn.cursor(pymysql.cursors.Cursor) as cur:
        cur.execute(sql, params)
        row = cur.fetchone()
    return None if row is None else row[0]


def read_identity(conn: Any, flavor: ServerFlavor, address: str) -> SourceIdentity:
    server_id = int(_one(conn, "SELECT @@GLOBAL.server_id"))
    if flavor.is_mariadb:
        domain = int(_one(conn, "SELECT @@GLOBAL.gtid_domain_id"))
        return SourceIdentity(server_id, gtid_domain_id=domain, flavor=str(flavor), address=address)
    uuid = _text(_one(conn, "SELECT @@GLOBAL.server_uuid") or "")
    return SourceIdentity(server_id, server_uuid=uuid, flavor=str(flavor), address=address)


def gtid_at(conn: Any, offset: BinlogOffset) -> str | None:
    """MariaDB's GTID position at ``offset`` (None: no such file, or not an event boundary)."""
    try:
        value = _one(conn, "SELECT BINLOG_GTID_POS(%s, %s)", (offset.file, offset.pos))
    except pymysql.err.MySQLError:
        return None
    return None if value is None else " ".join(_text(value).split())


def with_gtid(conn: Any, offset: BinlogOffset, flavor: ServerFlavor) -> BinlogOffset:
    """``offset`` with its GTID position filled in (MariaDB), so a checkpoint of it can be
    moved to another server; unchanged when it has one or the server cannot tell."""
    if offset.gtid_set or not flavor.is_mariadb:
        return offset
    gtid = gtid_at(conn, offset)
    return offset if gtid is None else BinlogOffset(offset.file, offset.pos, gtid)


def _entries(text: str) -> set[str]:
    return {p.strip() for p in text.replace("\n", ",").split(",") if p.strip()}


def same_gtid_position(a: str, b: str) -> bool:
    return _entries(a) == _entries(b)


def gtid_binlog_state(conn: Any) -> dict[tuple[int, int], int]:
    """``@@gtid_binlog_state``: (domain, server) -> last sequence number binlogged."""
    state: dict[tuple[int, int], int] = {}
    for part in _entries(_text(_one(conn, "SELECT @@GLOBAL.gtid_binlog_state") or "")):
        domain, server, seq = (int(x) for x in part.split("-"))
        state[(domain, server)] = max(seq, state.get((domain, server), 0))
    return state


def missing_transactions(gtid_position: str, state: dict[tuple[int, int], int]) -> list[str]:
    """The GTIDs of ``gtid_position`` the server has not binlogged (with what it has instead)."""
    missing = []
    for gtid in parse_mariadb_gtid_set(gtid_position).values():
        held = state.get((gtid.domain, gtid.server), 0)
        if held < gtid.seq:
            has = f"{gtid.domain}-{gtid.server}-{held}" if held else f"nothing from server {gtid.server}"
            missing.append(f"{gtid} (it has {has} in domain {gtid.domain})")
    return missing


def history_problem(conn: Any, offset: BinlogOffset, flavor: ServerFlavor) -> str | None:
    """Why the server is not the one that wrote ``offset``, or None when its binlog agrees.

    A purged file is not a problem here (binlog_lost.py deals with it); a file the server never
    reached, a position past a file's end, or another GTID position at ``offset`` are.
    """
    files = dict(binlog_files(conn))
    if not files:
        return None
    names = list(files)
    index = binlog_file_index(offset.file)
    if offset.file not in files:
        if index < binlog_file_index(names[0]):
            return None  # purged: the binlog-lost check says so
        return f"its binlog has no file {offset.file} (it has {names[0]} … {names[-1]})"
    if offset.pos > files[offset.file]:
        return f"its binlog file {offset.file} ends at {files[offset.file]}, before {offset}"
    if offset.gtid_set and flavor.is_mariadb:
        found = gtid_at(conn, offset)
        if found is None or not same_gtid_position(found, offset.gtid_set):
            return f"its binlog has GTID position {found or 'none'} at {offset}, not {offset.gtid_set}"
    return None


def _server_state(conn: Any) -> dict[int, int]:
    return parse_gtid_list_info(_text(_one(conn, "SELECT @@GLOBAL.gtid_binlog_pos") or ""))


def map_gtid_positions(conn: Any, positions: Iterable[str], now: BinlogOffset) -> dict[str, BinlogOffset]:
    """For each MariaDB GTID position, the offset on this server right after its transactions
    (the first transaction not in it, or ``now`` when there is none yet), in one binlog pass.

    Raises ``SourceError`` when a position's next transactions were purged here, or when it is
    not a prefix of this server's binlog.
    """
    wanted = {p: parse_mariadb_gtid_set(p) for p in sorted(set(positions))}
    if not wanted:
        return {}
    files = [name for name, _size in binlog_files(conn)]
    if not files:
        raise SourceError("the source lists no binary logs (SHOW BINARY LOGS is empty); is log_bin on?")
    states = [_file_state(conn, f) for f in files]
    scans: dict[str, tuple[int, GtidScan]] = {}
    for text, gtids in wanted.items():
        index = pick_start_file(states, gtids)
        if index is None:
            raise SourceError(
                f"the transactions after GTID position {text} were purged from the source; its oldest "
                f"binlog file {files[0]} starts later"
            )
        scans[text] = (index, GtidScan(gtids, states[index]))
    first = min(index for index, _scan in scans.values())
    pending = dict(scans)
    order = {name: i for i, name in enumerate(files)}
    for row in _iter_events(conn, files[first:]):
        for text, (index, scan) in list(pending.items()):
            if order[row.file] >= index and scan.feed([row]):
                del pending[text]
        if not pending:
            break
    server_state = _server_state(conn)
    found = {}
    for text, (_index, scan) in scans.items():
        offset = scan.finish(now, server_state)
        found[text] = BinlogOffset(offset.file, offset.pos, text)
    return found
