"""Which server we talk to: MySQL or MariaDB, and which version, from ``SELECT VERSION()``."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from sparkcdc.mysql.errors import SourceError

Kind = Literal["mysql", "mariadb"]

_VERSION = re.compile(r"^\s*(?:5\.5\.5-)?(\d+)\.(\d+)\.(\d+)")


@dataclass(frozen=True)
class ServerFlavor:
    kind: Kind
    version: tuple[int, int, int]

    @property
    def is_mariadb(self) -> bool:
        return self.kind == "mariadb"

    def __str__(self) -> str:
        name = "MariaDB" if self.is_mariadb else "MySQL"
        return f"{name} {'.'.join(map(str, self.version))}"


def parse_version(text: str) -> ServerFlavor:
    """Parse a ``VERSION()`` string such as ``8.0.36`` or ``10.11.19-MariaDB-0+deb12u1-log``.

    MariaDB's protocol handshake prefixes ``5.5.5-`` for old clients; ``VERSION()`` does
    not, but the prefix is accepted so either source of the string works.
    """
    match = _VERSION.match(text)
    if match is None:
        raise SourceError(f"cannot understand the source's version string {text!r}")
    version = (int(match.group(1)), int(match.group(2)), int(match.group(3)))
    kind: Kind = "mariadb" if "mariadb" in text.lower() else "mysql"
    return ServerFlavor(kind, version)


def binlog_status_statement(flavor: ServerFlavor) -> str:
    """The statement that reports the current binlog file and position.

    MySQL 8.2 deprecated ``SHOW MASTER STATUS`` for ``SHOW BINARY LOG STATUS`` (and 8.4
    removed the old name); MariaDB 10.5.2 added ``SHOW BINLOG STATUS``.
    """
    if flavor.is_mariadb:
        return "SHOW BINLOG STATUS" if flavor.version >= (10, 5, 2) else "SHOW MASTER STATUS"
    return "SHOW BINARY LOG STATUS" if flavor.version >= (8, 2, 0) else "SHOW MASTER STATUS"


def detect_flavor(conn: Any) -> ServerFlavor:
    """The flavor of the server behind a PyMySQL connection."""
    with conn.cursor() as cur:
        cur.execute("SELECT VERSION()")
        (text,) = cur.fetchone()
    return parse_version(text.decode() if isinstance(text, bytes) else str(text))
