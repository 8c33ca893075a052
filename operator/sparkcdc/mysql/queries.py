"""Control queries: binlog position, binlog settings, tables, binlog files."""

from __future__ import annotations

from typing import Any

import pymysql

from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.errors import SourceError
from sparkcdc.mysql.flavor import ServerFlavor, binlog_status_statement, detect_flavor

__all__ = [
    "SYSTEM_SCHEMAS",
    "binlog_files",
    "check_binlog_settings",
    "current_offset",
    "list_tables",
    "server_variables",
]

SYSTEM_SCHEMAS = ("mysql", "information_schema", "performance_schema", "sys")

LOG_BIN_OFF = (
    "binary logging is off on the source; start it with --log-bin (log_bin in the server's "
    "configuration) and restart the server"
)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, (bytes, bytearray)) else str(value)


def _query(conn: Any, sql: str, params: Any = None) -> tuple[list[str], list[tuple[Any, ...]]]:
    with conn.cursor(pymysql.cursors.Cursor) as cur:
        cur.execute(sql, params)
        names = [d[0] for d in cur.description or ()]
        return names, list(cur.fetchall())


def server_variables(conn: Any, *names: str) -> dict[str, str | None]:
    """Global values of server variables; a variable this server does not have maps to None."""
    _, rows = _query(conn, "SHOW GLOBAL VARIABLES WHERE Variable_name IN %s", (tuple(names),))
    found = {_text(k).lower(): (None if v is None else _text(v)) for k, v in rows}
    return {n: found.get(n.lower()) for n in names}


def current_offset(conn: Any, flavor: ServerFlavor | None = None) -> BinlogOffset:
    """The position after the last committed event, with the GTID set at that point.

    MySQL reports its executed GTID set with the position. MariaDB keeps it in
    ``@@gtid_binlog_pos``; a failover moves checkpointed offsets to another server by this
    GTID position (mysql/failover.py), so it must be the one at the position exactly: it is
    read before and after the position, and a commit in between makes us read again.
    """
    flavor = flavor or detect_flavor(conn)
    if not flavor.is_mariadb:
        return _binlog_status(conn, flavor)
    for _attempt in range(5):
        before = _gtid_binlog_pos(conn)
        offset = _binlog_status(conn, flavor)
        if _gtid_binlog_pos(conn) == before:
            return BinlogOffset(offset.file, offset.pos, before)
    # Busy: let the server compute it (it reads the current file from its start).
    _, gtid_rows = _query(conn, "SELECT BINLOG_GTID_POS(%s, %s)", (offset.file, offset.pos))
    gtid = gtid_rows[0][0] if gtid_rows and gtid_rows[0][0] is not None else ""
    return BinlogOffset(offset.file, offset.pos, " ".join(_text(gtid).split()))


def _gtid_binlog_pos(conn: Any) -> str:
    _, rows = _query(conn, "SELECT @@GLOBAL.gtid_binlog_pos")
    return " ".join(_text(rows[0][0]).split()) if rows and rows[0][0] else ""


def _binlog_status(conn: Any, flavor: ServerFlavor) -> BinlogOffset:
    try:
        names, rows = _query(conn, binlog_status_statement(flavor))
    except pymysql.err.MySQLError as exc:
        if exc.args and exc.args[0] in (1227, 1045):
            raise SourceError(
                "the source refused to report its binlog position (access denied); grant REPLICATION "
                "CLIENT (BINLOG MONITOR on MariaDB) to spec.source.user"
            ) from None
        raise
    if not rows:
        raise SourceError(LOG_BIN_OFF)
    row = dict(zip([n.lower() for n in names], rows[0], strict=True))
    gtid = row.get("executed_gtid_set")
    gtid_text = " ".join(_text(gtid).split()) if gtid else ""
    return BinlogOffset(_text(row["file"]), int(row["position"]), gtid_text)


def check_binlog_settings(conn: Any) -> None:
    """Raise ``SourceError`` naming every binlog setting that stops CDC, with its fix."""
    values = server_variables(conn, "log_bin", "binlog_format", "binlog_row_image")
    problems: list[str] = []
    if (values["log_bin"] or "OFF").upper() not in ("ON", "1"):
        problems.append(LOG_BIN_OFF)
    else:
        binlog_format = (values["binlog_format"] or "").upper()
        if binlog_format != "ROW":
            problems.append(
                f"binlog_format is {binlog_format or 'unset'} on the source, but change data capture needs "
                "row events; set binlog_format=ROW in the server's configuration (SET GLOBAL "
                "binlog_format='ROW' applies to new sessions)"
            )
        row_image = (values["binlog_row_image"] or "FULL").upper()
        if row_image != "FULL":
            problems.append(
                f"binlog_row_image is {row_image} on the source, but change data capture needs complete "
                "row images; set binlog_row_image=FULL in the server's configuration (SET GLOBAL "
                "binlog_row_image='FULL' applies to new sessions)"
            )
    if problems:
        raise SourceError("; ".join(problems))


def list_tables(conn: Any) -> list[TableId]:
    """Every base table outside the system schemas, sorted."""
    placeholders = ", ".join(["%s"] * len(SYSTEM_SCHEMAS))
    _, rows = _query(
        conn,
        "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES "
        f"WHERE TABLE_TYPE = 'BASE TABLE' AND TABLE_SCHEMA NOT IN ({placeholders})",
        SYSTEM_SCHEMAS,
    )
    return sorted(TableId(_text(db), _text(name)) for db, name in rows)


def binlog_files(conn: Any) -> list[tuple[str, int]]:
    """``SHOW BINARY LOGS``: (file name, size in bytes), oldest first."""
    try:
        _, rows = _query(conn, "SHOW BINARY LOGS")
    except pymysql.err.MySQLError as exc:
        if exc.args and exc.args[0] == 1381:  # ER_NO_BINARY_LOGGING
            raise SourceError(LOG_BIN_OFF) from None
        raise
    return [(_text(r[0]), int(r[1])) for r in rows]
