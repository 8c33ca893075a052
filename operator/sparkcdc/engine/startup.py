"""Where a pipeline without a snapshot starts reading the binlog (``spec.startup``).

``latest`` starts at the current end, ``earliest`` at the oldest file the source still has,
``specific-offset`` at a file and position (checked against ``SHOW BINARY LOGS``) or after a
GTID set, ``timestamp`` at the first transaction that began at or after the time. The searches
live in mysql/binlog/search.py; this module picks one by mode and server flavour.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sparkcdc.api.source import StartupSpec
from sparkcdc.core.offsets import BinlogOffset, binlog_file_index
from sparkcdc.mysql.binlog.search import mariadb_gtid_offset, mysql_gtid_offset, timestamp_offset
from sparkcdc.mysql.connection import SourceConfig
from sparkcdc.mysql.errors import SourceError
from sparkcdc.mysql.flavor import ServerFlavor
from sparkcdc.mysql.gtid import is_mysql_gtid_set, parse_mariadb_gtid_set
from sparkcdc.mysql.queries import binlog_files

__all__ = ["SearchContext", "check_specific_file", "gtid_flavor_problem", "startup_offset"]


@dataclass(frozen=True)
class SearchContext:
    """What the searches that read the binlog need: the source and a replication id no other
    connection of the pipeline uses at that moment."""

    source: SourceConfig
    server_id: int
    flavor: ServerFlavor


def gtid_flavor_problem(gtid_set: str, flavor: ServerFlavor) -> str | None:
    """Why ``gtid_set`` cannot be used on this server, or None."""
    if flavor.is_mariadb:
        if is_mysql_gtid_set(gtid_set):
            return (
                f"spec.startup.gtidSet {gtid_set!r} is a MySQL GTID set, but the source is {flavor}, whose "
                "GTIDs look like domain-server-sequence (e.g. 0-1-42); see SELECT @@gtid_binlog_pos"
            )
        try:
            parse_mariadb_gtid_set(gtid_set)
        except SourceError as err:
            return str(err)
        return None
    if not is_mysql_gtid_set(gtid_set):
        return (
            f"spec.startup.gtidSet {gtid_set!r} is not a MySQL GTID set (uuid:1-5,...), which the source "
            f"({flavor}) needs; see SELECT @@GLOBAL.gtid_executed"
        )
    if flavor.version < (5, 6, 5):
        return f"the source ({flavor}) has no GTIDs (MySQL 5.6.5 added them); start with file and position"
    return None


def check_specific_file(names: list[str], file: str) -> None:
    """``spec.startup.file`` must still be on the source."""
    if file in names:
        return
    index = binlog_file_index(file)
    if index < binlog_file_index(names[0]):
        raise SourceError(
            f"spec.startup.file {file} was purged from the source; its oldest binlog file is {names[0]} "
            f"(it has {names[0]} … {names[-1]}) — start from a file that still exists, mode: earliest, "
            "or mode: initial for a new snapshot"
        )
    raise SourceError(
        f"spec.startup.file {file} is not on the source; it has {names[0]} … {names[-1]} — pick a file "
        "that exists or start with mode: earliest"
    )


def startup_offset(
    conn: Any, startup: StartupSpec, now: BinlogOffset, search: SearchContext | None = None
) -> BinlogOffset:
    """The first offset to read for ``latest``, ``earliest``, ``specific-offset`` and ``timestamp``.

    ``search`` is needed by ``timestamp`` and GTID starts (they read the binlog).
    """
    if startup.mode == "latest":
        return now
    files = binlog_files(conn)
    if not files:
        raise SourceError("the source lists no binary logs (SHOW BINARY LOGS is empty); is log_bin on?")
    names = [name for name, _size in files]
    if startup.mode == "earliest":
        return BinlogOffset(names[0], 4)
    if startup.mode == "specific-offset" and startup.file is not None and startup.position is not None:
        check_specific_file(names, startup.file)
        size = dict(files)[startup.file]
        if startup.position > size:
            raise SourceError(
                f"spec.startup.position {startup.position} is past the end of {startup.file} ({size} bytes)"
            )
        return BinlogOffset(startup.file, startup.position)
    if search is None:
        raise SourceError(f"spec.startup.mode {startup.mode} needs a binlog search context")
    if startup.mode == "specific-offset" and startup.gtid_set:
        problem = gtid_flavor_problem(startup.gtid_set, search.flavor)
        if problem is not None:
            raise SourceError(problem)
        if search.flavor.is_mariadb:
            return mariadb_gtid_offset(conn, startup.gtid_set, now)
        return mysql_gtid_offset(search.source, search.server_id, startup.gtid_set, now)
    if startup.mode == "timestamp" and startup.timestamp is not None:
        return timestamp_offset(conn, search.source, search.server_id, startup.timestamp.timestamp(), now)
    raise SourceError(f"spec.startup.mode {startup.mode} is not a binlog-only startup mode")
