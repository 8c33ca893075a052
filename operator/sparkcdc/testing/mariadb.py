"""A throwaway real MariaDB server for tests and ``make demo``.

The server runs from Debian's ``mariadb-server`` package in its own directory, on a free
loopback port, with the binlog settings a CDC source needs (``log_bin``, ``ROW`` format,
``FULL`` row images and ``FULL`` row metadata). Nothing here touches a system-wide MariaDB:
``--no-defaults`` keeps ``/etc/mysql`` out, and the socket, pid file and data live in the
server's directory.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import pymysql

from sparkcdc.testing.mariadb_install import (
    MariaDBError,
    ensure_mariadb_installed,
    find_install_db,
)

log = logging.getLogger(__name__)

# Sink tests and the demo write replicas into databases named like these; the cdc user owns
# them so one account serves as both source reader and sink writer on the throwaway server.
DEFAULT_SINK_DATABASE_PATTERNS = ("%\\_replica", "%\\_sink", "sink\\_%")


def _die_with_parent() -> None:
    """preexec_fn: SIGTERM the server when the thread that started it dies (a killed test run)."""
    with contextlib.suppress(Exception):
        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


class MariaDBServer:
    """One MariaDB server process with its own data directory.

    ``base_dir`` holds the data directory, logs and pid file; ``None`` makes a temporary
    directory that is removed when the context manager exits. ``time_zone`` sets the
    server's ``default-time-zone`` (e.g. ``"+05:30"``; named zones need the tz tables).
    ``extra_options`` are more ``--option=value`` arguments for ``mariadbd``; they override the
    defaults because they come last. With ``die_with_parent`` (Linux) the server is shut down
    when the thread that started it dies, so a killed test run leaves no server behind; start
    it from a long-lived thread (the main thread).
    """

    host = "127.0.0.1"

    def __init__(
        self,
        base_dir: str | os.PathLike[str] | None = None,
        port: int | None = None,
        server_id: int = 1,
        time_zone: str | None = None,
        extra_options: Sequence[str] = (),
        die_with_parent: bool = True,
    ) -> None:
        self._owns_dir = base_dir is None
        self.die_with_parent = die_with_parent
        self.base_dir = (
            Path(base_dir) if base_dir is not None else Path(tempfile.mkdtemp(prefix="sparkcdc-mariadb-"))
        )
        self._requested_port = port
        self.port = port or 0
        self.server_id = server_id
        self.time_zone = time_zone
        self.extra_options: tuple[str, ...] = tuple(extra_options)
        self.data_dir = self.base_dir / "data"
        self.error_log = self.base_dir / "error.log"
        self.pid_file = self.base_dir / "mariadbd.pid"
        self.tmp_dir = self.base_dir / "tmp"
        self.socket_path = self._socket_path()
        self.cdc_user: str | None = None
        self.cdc_password: str | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._conn: pymysql.connections.Connection[Any] | None = None
        self._conn_lock = threading.Lock()

    def _socket_path(self) -> Path:
        path = self.base_dir / "mariadbd.sock"
        # A Unix socket path is limited to ~108 bytes; long temp dirs get a short socket dir.
        if len(str(path)) > 100:
            path = Path(tempfile.mkdtemp(prefix="mdb-")) / "mariadbd.sock"
        return path

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def _base_options(self) -> list[str]:
        options = [
            f"--datadir={self.data_dir}",
            "--bind-address=127.0.0.1",
            f"--port={self.port}",
            f"--socket={self.socket_path}",
            f"--pid-file={self.pid_file}",
            f"--log-error={self.error_log}",
            f"--tmpdir={self.tmp_dir}",  # not /tmp, shared by servers and test runs side by side
            "--log-bin=binlog",
            "--binlog-format=ROW",
            "--binlog-row-image=FULL",
            "--binlog-row-metadata=FULL",
            f"--server-id={self.server_id}",
            "--skip-name-resolve",
            "--character-set-server=utf8mb4",
            "--collation-server=utf8mb4_general_ci",
            # Small buffers: tests run several servers on a 2-core machine.
            "--innodb-buffer-pool-size=64M",
            "--innodb-log-file-size=16M",
            "--key-buffer-size=1M",
            "--performance-schema=OFF",
            "--max-connections=300",
            "--max-allowed-packet=64M",
            # Durability is irrelevant for a throwaway server; fsync would dominate test time.
            "--innodb-flush-log-at-trx-commit=2",
            "--sync-binlog=0",
            "--innodb-doublewrite=0",
        ]
        if os.geteuid() == 0:
            # mariadbd refuses to run as root unless told to.
            options.append("--user=root")
        if self.time_zone:
            options.append(f"--default-time-zone={self.time_zone}")
        return options

    def _install(self) -> None:
        install_db = find_install_db()
        if install_db is None:
            raise MariaDBError("mariadb-install-db not found; install Debian's mariadb-server")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.tmp_dir.mkdir(parents=True, exist_ok=True)
        cmd = [
            install_db,
            "--no-defaults",
            f"--datadir={self.data_dir}",
            f"--tmpdir={self.tmp_dir}",  # its bootstrap server's temporary tables too
            "--auth-root-authentication-method=normal",
            "--skip-test-db",
            "--skip-name-resolve",
            "--innodb-log-file-size=16M",
            "--innodb-buffer-pool-size=64M",
        ]
        if os.geteuid() == 0:
            cmd.append("--user=root")
        result = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise MariaDBError(f"mariadb-install-db failed:\n{result.stdout}\n{result.stderr}")

    def start(self, timeout: float = 60.0) -> MariaDBServer:
        """Initialise the data directory (first start only), start the server, wait for it."""
        if self.running:
            return self
        server = ensure_mariadb_installed()
        self.tmp_dir.mkdir(parents=True, exist_ok=True)
        if not (self.data_dir / "mysql").is_dir():
            self._install()
        attempts = 1 if self._requested_port else 5
        for attempt in range(attempts):
            if not self._requested_port:
                self.port = free_port()
            cmd = [server, "--no-defaults", *self._base_options(), *self.extra_options]
            log.debug("starting %s", " ".join(cmd))
            self._process = subprocess.Popen(
                cmd,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=_die_with_parent if self.die_with_parent else None,
            )
            try:
                self._wait_ready(timeout)
                return self
            except MariaDBError:
                self._kill()
                # Another process may have taken the free port between probe and bind.
                if attempt + 1 < attempts and "Address already in use" in self._error_tail():
                    continue
                raise
        raise AssertionError("unreachable")

    def _error_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.error_log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last: Exception | None = None
        while time.monotonic() < deadline:
            if self._process is None or self._process.poll() is not None:
                raise MariaDBError(f"mariadbd exited during startup:\n{self._error_tail()}")
            try:
                conn = self._connect()
                conn.close()
                return
            except pymysql.err.MySQLError as exc:
                last = exc
                time.sleep(0.1)
        raise MariaDBError(
            f"mariadbd did not accept connections within {timeout}s ({last}):\n{self._error_tail()}"
        )

    def _kill(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait()
        self._process = None

    def stop(self, timeout: float = 30.0) -> None:
        """Shut the server down (SIGTERM, then SIGKILL after ``timeout``); data stay for a restart."""
        self._close_conn()
        process = self._process
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._process = None

    def kill(self) -> None:
        """SIGKILL the server, as a crashed host would leave it; data stay for a restart."""
        self._close_conn()
        self._kill()

    def restart(self, extra_options: Sequence[str] | None = None, port: int | None = None) -> MariaDBServer:
        """Stop and start again on the same data, on the same port or ``port`` (another
        server's old address, say), optionally with other options."""
        self.stop()
        if extra_options is not None:
            self.extra_options = tuple(extra_options)
        if port is not None:
            self.port = self._requested_port = port
        if self.port and not self._requested_port:
            self._requested_port = self.port
        return self.start()

    def cleanup(self) -> None:
        """Stop and remove the server's files when this object created the directory."""
        self.stop()
        if self._owns_dir:
            shutil.rmtree(self.base_dir, ignore_errors=True)
        if self.socket_path.parent != self.base_dir:
            shutil.rmtree(self.socket_path.parent, ignore_errors=True)

    def __enter__(self) -> MariaDBServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.cleanup()

    # -- SQL ---------------------------------------------------------------------------------

    def _connect(self, database: str | None = None) -> pymysql.connections.Connection[Any]:
        return pymysql.connect(
            host=self.host,
            port=self.port,
            user="root",
            password="",
            database=database,
            charset="utf8mb4",
            autocommit=True,
            connect_timeout=5,
        )

    def root_connection(self, database: str | None = None) -> pymysql.connections.Connection[Any]:
        """A new autocommit connection as the passwordless root user; the caller closes it."""
        return self._connect(database)

    def _close_conn(self) -> None:
        with self._conn_lock:
            if self._conn is not None:
                with contextlib.suppress(Exception):
                    self._conn.close()
                self._conn = None

    def execute(self, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
        """Run one statement as root on a shared connection and return all result rows.

        As in PyMySQL, ``%`` placeholders are only interpreted when ``params`` is given.
        """
        with self._conn_lock:
            if self._conn is None or not self._conn.open:
                self._conn = self._connect()
            with self._conn.cursor() as cur:
                cur.execute(sql, params)
                return list(cur.fetchall())

    def create_cdc_user(
        self,
        user: str = "cdc",
        password: str | None = None,
        sink_database_patterns: Sequence[str] = DEFAULT_SINK_DATABASE_PATTERNS,
    ) -> str:
        """Create a CDC account with the privileges a binlog reader needs; returns the password.

        MariaDB 10.5.2 split REPLICATION CLIENT into BINLOG MONITOR (``SHOW BINLOG STATUS``,
        ``SHOW BINARY LOGS``) and friends; REPLICATION CLIENT is kept as an alias, so granting
        both works on every version. ``sink_database_patterns`` are ``GRANT ... ON `pattern`.*``
        database patterns the account may create and write for sink use.
        """
        password = password or secrets.token_urlsafe(16)
        self.execute(f"CREATE OR REPLACE USER '{user}'@'%%' IDENTIFIED BY %s", (password,))
        privileges = "SELECT, RELOAD, SHOW DATABASES, REPLICATION SLAVE, REPLICATION CLIENT"
        if self.execute("SELECT VERSION() LIKE '%MariaDB%'")[0][0]:
            privileges += ", BINLOG MONITOR"
        self.execute(f"GRANT {privileges} ON *.* TO '{user}'@'%'")
        for pattern in sink_database_patterns:
            self.execute(f"GRANT ALL PRIVILEGES ON `{pattern}`.* TO '{user}'@'%'")
        self.cdc_user, self.cdc_password = user, password
        return password

    def binlog_position(self) -> tuple[str, int]:
        """The current binlog file and position (``SHOW BINLOG STATUS``)."""
        row = self.execute("SHOW MASTER STATUS")[0]
        return str(row[0]), int(row[1])

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"MariaDBServer({self.host}:{self.port}, {state}, dir={self.base_dir})"


def tls_options(ca: Path, cert: Path, key: Path, require: bool = True) -> list[str]:
    """``extra_options`` for a server that offers TLS with ``cert`` (testing/pki.py's
    ``make_server_pki``) and, with ``require``, refuses connections without it
    (``require_secure_transport``: the Unix socket counts as secure, TCP must use TLS)."""
    options = [f"--ssl-ca={ca}", f"--ssl-cert={cert}", f"--ssl-key={key}"]
    if require:
        options.append("--require-secure-transport=ON")
    return options


@contextlib.contextmanager
def running_server(**kwargs: Any) -> Iterator[MariaDBServer]:
    """A started throwaway server, removed afterwards."""
    with MariaDBServer(**kwargs) as server:
        yield server
