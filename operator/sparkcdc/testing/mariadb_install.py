"""Finding, or installing, Debian's MariaDB server for the throwaway servers of mariadb.py."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from collections.abc import Sequence

__all__ = ["MariaDBError", "ensure_mariadb_installed", "find_install_db"]

log = logging.getLogger(__name__)

_SERVER_CANDIDATES = ("mariadbd", "/usr/sbin/mariadbd", "mysqld", "/usr/sbin/mysqld")
_INSTALL_DB_CANDIDATES = ("mariadb-install-db", "/usr/bin/mariadb-install-db", "mysql_install_db")


class MariaDBError(RuntimeError):
    """The throwaway server could not be installed, started or stopped."""


def _find(candidates: Sequence[str]) -> str | None:
    for name in candidates:
        path = shutil.which(name) if "/" not in name else (name if os.access(name, os.X_OK) else None)
        if path:
            return path
    return None


def ensure_mariadb_installed() -> str:
    """The path of ``mariadbd``, installing Debian's packages first when it is absent."""
    found = _find(_SERVER_CANDIDATES)
    if found:
        return found
    prefix = [] if os.geteuid() == 0 else ["sudo", "-n"]
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    install = [
        *prefix,
        "apt-get",
        "install",
        "-y",
        "--no-install-recommends",
        "mariadb-server",
        "mariadb-client",
    ]
    log.info("mariadbd not found; installing Debian's mariadb-server")
    if subprocess.run(install, env=env, check=False).returncode != 0:
        # A fresh container has no package lists yet.
        subprocess.run([*prefix, "apt-get", "update"], env=env, check=False)
        subprocess.run(install, env=env, check=True)
    found = _find(_SERVER_CANDIDATES)
    if not found:
        raise MariaDBError("mariadb-server was installed but no mariadbd binary was found")
    return found


def find_install_db() -> str | None:
    """The path of ``mariadb-install-db``, or None."""
    return _find(_INSTALL_DB_CANDIDATES)
