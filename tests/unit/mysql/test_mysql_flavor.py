from __future__ import annotations

import pytest

from sparkcdc.mysql.errors import SourceError
from sparkcdc.mysql.flavor import ServerFlavor, binlog_status_statement, parse_version


@pytest.mark.parametrize(
    ("text", "kind", "version", "statement"),
    [
        ("5.7.44-log", "mysql", (5, 7, 44), "SHOW MASTER STATUS"),
        ("8.0.36", "mysql", (8, 0, 36), "SHOW MASTER STATUS"),
        ("8.1.0", "mysql", (8, 1, 0), "SHOW MASTER STATUS"),
        ("8.2.0", "mysql", (8, 2, 0), "SHOW BINARY LOG STATUS"),
        ("8.4.0", "mysql", (8, 4, 0), "SHOW BINARY LOG STATUS"),
        ("9.1.0", "mysql", (9, 1, 0), "SHOW BINARY LOG STATUS"),
        ("8.0.36-28", "mysql", (8, 0, 36), "SHOW MASTER STATUS"),  # Percona Server
        ("10.11.19-MariaDB-0+deb12u1-log", "mariadb", (10, 11, 19), "SHOW BINLOG STATUS"),
        ("10.4.34-MariaDB", "mariadb", (10, 4, 34), "SHOW MASTER STATUS"),
        ("10.5.1-MariaDB", "mariadb", (10, 5, 1), "SHOW MASTER STATUS"),
        ("10.5.2-MariaDB", "mariadb", (10, 5, 2), "SHOW BINLOG STATUS"),
        ("11.4.2-MariaDB", "mariadb", (11, 4, 2), "SHOW BINLOG STATUS"),
        ("5.5.5-10.6.12-MariaDB-log", "mariadb", (10, 6, 12), "SHOW BINLOG STATUS"),  # handshake form
    ],
)
def test_parse_version_and_status_statement(
    text: str, kind: str, version: tuple[int, int, int], statement: str
) -> None:
    flavor = parse_version(text)
    assert flavor == ServerFlavor(kind, version)  # type: ignore[arg-type]
    assert flavor.is_mariadb == (kind == "mariadb")
    assert binlog_status_statement(flavor) == statement


def test_unparseable_version_is_a_source_error() -> None:
    with pytest.raises(SourceError, match="version string"):
        parse_version("garbage")


def test_flavor_str() -> None:
    assert str(parse_version("10.11.19-MariaDB")) == "MariaDB 10.11.19"
    assert str(parse_version("8.0.36")) == "MySQL 8.0.36"
