"""A throwaway real PostgreSQL server for tests and demos.

The server runs from Debian's ``postgresql`` package (``initdb`` and ``postgres`` from
``/usr/lib/postgresql/<version>/bin``) in its own temporary directory, on a free loopback port,
with no Unix socket and durability switched off. ``initdb`` creates a superuser with a random
password; TCP logins use ``scram-sha-256``, so tests exercise real password authentication.

PostgreSQL refuses to run as root. When the tests run as root the data directory is owned by,
and ``initdb`` / ``postgres`` run as, an unprivileged system user (Debian's ``postgres``
account, created when missing) through ``setpriv``, which ``exec``s the server so the process
we hold is the postmaster itself and signals reach it directly.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any

log = logging.getLogger(__name__)

_BIN_GLOB = "/usr/lib/postgresql"
_SERVER_USER = "postgres"


class PostgresError(RuntimeError):
    """The throwaway server could not be installed, started or stopped."""


def _bin_dir() -> Path | None:
    """The newest ``/usr/lib/postgresql/<version>/bin`` holding ``initdb`` and ``postgres``."""
    root = Path(_BIN_GLOB)
    found: list[tuple[int, Path]] = []
    if root.is_dir():
        for child in root.iterdir():
            bin_dir = child / "bin"
            if child.name.isdigit() and (bin_dir / "initdb").exists() and (bin_dir / "postgres").exists():
                found.append((int(child.name), bin_dir))
    if found:
        return max(found)[1]
    initdb = shutil.which("initdb")
    return Path(initdb).resolve().parent if initdb else None


def ensure_postgres_installed() -> Path:
    """The directory holding ``initdb`` and ``postgres``, installing Debian's package when absent."""
    found = _bin_dir()
    if found:
        return found
    prefix = [] if os.geteuid() == 0 else ["sudo", "-n"]
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    install = [*prefix, "apt-get", "install", "-y", "--no-install-recommends", "postgresql"]
    log.info("PostgreSQL not found; installing Debian's postgresql")
    if subprocess.run(install, env=env, check=False).returncode != 0:
        subprocess.run([*prefix, "apt-get", "update"], env=env, check=False)  # a fresh container
        subprocess.run(install, env=env, check=True)
    found = _bin_dir()
    if not found:
        raise PostgresError("postgresql was installed but no initdb/postgres binaries were found")
    return found


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _server_account() -> pwd.struct_passwd | None:
    """The unprivileged account to run as when we are root (created when missing); else None."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(_SERVER_USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", _SERVER_USER],
            check=True,
            capture_output=True,
        )
        return pwd.getpwnam(_SERVER_USER)


def _utf8_locale() -> str:
    out = subprocess.run(["locale", "-a"], capture_output=True, text=True, check=False).stdout
    names = {line.strip().lower().replace("-", "") for line in out.splitlines()}
    return "C.UTF-8" if "c.utf8" in names else "C"


class PostgresServer:
    """One PostgreSQL server process with its own data directory.

    ``user`` / ``password`` are the superuser's credentials; ``database`` is created at start
    and is what ``url`` and ``execute`` use. ``base_dir=None`` makes a temporary directory that
    ``cleanup`` (and the context manager) remove. ``tls`` (a certificate and its key, e.g. from
    testing/pki.py's ``make_server_pki``) switches TLS on (``ssl=on``; clients choose whether to use it).
    """

    host = "127.0.0.1"

    def __init__(
        self,
        base_dir: str | os.PathLike[str] | None = None,
        port: int | None = None,
        user: str = "sparkcdc",
        password: str | None = None,
        database: str = "sparkcdc",
        tls: tuple[Path, Path] | None = None,
    ) -> None:
        self._owns_dir = base_dir is None
        self.tls = tls
        self.base_dir = (
            Path(base_dir) if base_dir is not None else Path(tempfile.mkdtemp(prefix="sparkcdc-pg-"))
        )
        self._requested_port = port
        self.port = port or 0
        self.user = user
        self.password = password or secrets.token_urlsafe(16)
        self.database = database
        self.data_dir = self.base_dir / "data"
        self.log_file = self.base_dir / "postgres.log"
        self._account = _server_account()
        self._process: subprocess.Popen[bytes] | None = None
        self.cdc_user: str | None = None
        self.cdc_password: str | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def url(self) -> str:
        """The sink URL of ``database`` (credentials are passed separately, never in URLs)."""
        return f"postgresql://{self.host}:{self.port}/{self.database}"

    def _as_server_user(self, cmd: list[str]) -> list[str]:
        if self._account is None:
            return cmd
        return [
            "setpriv",
            f"--reuid={self._account.pw_uid}",
            f"--regid={self._account.pw_gid}",
            "--init-groups",
            *cmd,
        ]

    def _give_to_server_user(self, path: Path) -> None:
        if self._account is not None:
            os.chown(path, self._account.pw_uid, self._account.pw_gid)

    def _initdb(self, bin_dir: Path) -> None:
        self.base_dir.mkdir(parents=True, exist_ok=True)
        self._give_to_server_user(self.base_dir)
        pwfile = self.base_dir / "pwfile"
        pwfile.write_text(self.password + "\n")
        self._give_to_server_user(pwfile)
        cmd = [
            str(bin_dir / "initdb"),
            f"--pgdata={self.data_dir}",
            f"--username={self.user}",
            f"--pwfile={pwfile}",
            "--auth-local=scram-sha-256",
            "--auth-host=scram-sha-256",
            "--encoding=UTF8",
            f"--locale={_utf8_locale()}",
            "--no-sync",
        ]
        result = subprocess.run(self._as_server_user(cmd), capture_output=True, text=True, check=False)
        pwfile.unlink(missing_ok=True)
        if result.returncode != 0:
            raise PostgresError(f"initdb failed:\n{result.stdout}\n{result.stderr}")

    def _server_cmd(self, bin_dir: Path) -> list[str]:
        settings = {
            "listen_addresses": self.host,
            "port": str(self.port),
            "unix_socket_directories": "",
            # Durability is irrelevant for a throwaway server; fsync would dominate test time.
            "fsync": "off",
            "synchronous_commit": "off",
            "full_page_writes": "off",
            "shared_buffers": "64MB",
            "max_connections": "100",
            "logging_collector": "off",
            "log_min_messages": "warning",
        }
        cmd = [str(bin_dir / "postgres"), "-D", str(self.data_dir)]
        if self.tls is not None:
            settings.update(
                ssl="on",
                ssl_cert_file=str(self.base_dir / "server.crt"),
                ssl_key_file=str(self.base_dir / "server.key"),
            )
        for name, value in settings.items():
            cmd += ["-c", f"{name}={value}"]
        return self._as_server_user(cmd)

    def _install_tls(self) -> None:
        # The server reads them as its own user and refuses a key others may read.
        assert self.tls is not None
        for source, name in zip(self.tls, ("server.crt", "server.key"), strict=True):
            target = self.base_dir / name
            shutil.copyfile(source, target)
            target.chmod(0o600)
            self._give_to_server_user(target)

    def start(self, timeout: float = 60.0) -> PostgresServer:
        """Initialise the data directory (first start only), start the server, wait for it."""
        if self.running:
            return self
        bin_dir = ensure_postgres_installed()
        if not (self.data_dir / "PG_VERSION").exists():
            self._initdb(bin_dir)
        if self.tls is not None:
            self._install_tls()
        attempts = 1 if self._requested_port else 5
        for attempt in range(attempts):
            if not self._requested_port:
                self.port = free_port()
            with open(self.log_file, "ab") as log_out:
                self._process = subprocess.Popen(
                    self._server_cmd(bin_dir),
                    stdout=log_out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            try:
                self._wait_ready(timeout)
                break
            except PostgresError:
                self._kill()
                if attempt + 1 < attempts and "could not bind" in self._log_tail():
                    continue  # another process took the free port between probe and bind
                raise
        self._create_database()
        return self

    def _log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def _wait_ready(self, timeout: float) -> None:
        import psycopg

        deadline = time.monotonic() + timeout
        last: Exception | None = None
        while time.monotonic() < deadline:
            if self._process is None or self._process.poll() is not None:
                raise PostgresError(f"postgres exited during startup:\n{self._log_tail()}")
            try:
                psycopg.connect(**self._params("postgres"), connect_timeout=5).close()
                return
            except psycopg.OperationalError as exc:
                last = exc
                time.sleep(0.1)
        raise PostgresError(
            f"postgres did not accept connections within {timeout}s ({last}):\n{self._log_tail()}"
        )

    def _create_database(self) -> None:
        if not self.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", (self.database,), database="postgres"
        ):
            self.execute(f"CREATE DATABASE {quote_ident(self.database)}", database="postgres")

    def _kill(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait()
        self._process = None

    def stop(self, timeout: float = 30.0) -> None:
        """Fast shutdown (SIGINT), then SIGKILL after ``timeout``; the data stay for a restart."""
        process = self._process
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._process = None

    def cleanup(self) -> None:
        """Stop and remove the server's files when this object created the directory."""
        self.stop()
        if self._owns_dir:
            shutil.rmtree(self.base_dir, ignore_errors=True)

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.cleanup()

    # -- SQL ---------------------------------------------------------------------------------

    def _params(self, database: str | None = None) -> dict[str, Any]:
        return {
            "host": self.host,
            "port": self.port,
            "user": self.user,
            "password": self.password,
            "dbname": database or self.database,
        }

    def connect(self, database: str | None = None, autocommit: bool = True) -> Any:
        """A new psycopg connection as the superuser; the caller closes it."""
        import psycopg

        return psycopg.connect(**self._params(database), autocommit=autocommit, connect_timeout=10)

    def execute(self, sql: str, params: Any = None, database: str | None = None) -> list[tuple[Any, ...]]:
        """Run one statement as the superuser (autocommit) and return its rows (none for DDL)."""
        with self.connect(database) as conn, conn.cursor() as cur:
            cur.execute(sql, params)
            return list(cur.fetchall()) if cur.description is not None else []

    def create_cdc_user(self, user: str = "cdc", password: str | None = None) -> str:
        """A non-superuser login that may create schemas in ``database`` and databases it owns
        (``cdc_user`` / ``cdc_password`` remember it); returns its password."""
        password = password or secrets.token_urlsafe(16)
        literal = "'" + password.replace("'", "''") + "'"
        self.execute(f"CREATE ROLE {quote_ident(user)} LOGIN PASSWORD {literal}")
        self.execute(f"GRANT CREATE, CONNECT ON DATABASE {quote_ident(self.database)} TO {quote_ident(user)}")
        self.execute(f"GRANT ALL ON SCHEMA public TO {quote_ident(user)}")
        self.cdc_user, self.cdc_password = user, password
        return password

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"PostgresServer({self.host}:{self.port}, {state}, dir={self.base_dir})"


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


@contextlib.contextmanager
def running_server(**kwargs: Any) -> Any:
    """A started throwaway server, removed afterwards."""
    with PostgresServer(**kwargs) as server:
        yield server
