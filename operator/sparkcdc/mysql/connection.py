"""Connections to the source: settings, TLS, retries and errors a user can act on."""

from __future__ import annotations

import functools
import ssl
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pymysql
import pymysql.converters
from pymysql.constants import CR, ER
from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential

from sparkcdc.mysql.errors import SourceError
from sparkcdc.mysql.tls import TLS_MODES, TlsSettings, ssl_context

__all__ = ["TLS_MODES", "SourceConfig", "SourceError", "connect", "connection_kwargs", "source_error"]

# Encoders only, no decoders: result values arrive as ``str`` (text columns and numbers,
# dates, ... in their text form) or ``bytes`` (binary charset), and types.py converts whole
# columns at once with Arrow instead of one Python object per value.
RAW_CONVERSIONS: dict[Any, Any] = {
    k: v for k, v in pymysql.converters.conversions.items() if not isinstance(k, int)
}

# Errors worth another attempt: the server is starting, restarting or briefly overloaded.
_TRANSIENT = {
    CR.CR_CONNECTION_ERROR,
    CR.CR_CONN_HOST_ERROR,
    CR.CR_SERVER_GONE_ERROR,
    CR.CR_SERVER_LOST,
    ER.CON_COUNT_ERROR,
    1927,  # ER_CONNECTION_KILLED (MariaDB)
}
_PRIVILEGE_ERRORS = {
    ER.SPECIFIC_ACCESS_DENIED_ERROR,
    ER.TABLEACCESS_DENIED_ERROR,
    ER.DBACCESS_DENIED_ERROR,
}


@dataclass(frozen=True)
class SourceConfig:
    """How to reach the source. Picklable: it is shipped to Spark tasks.

    ``tls_mode`` is one of ``disabled``, ``preferred`` (TLS when the server offers it, no
    certificate check), ``required`` (TLS, no certificate check), ``verify-ca`` (certificate
    signed by ``ca_pem``, else by one the system trusts) and ``verify-identity`` (also the host
    name); pipelines take it from ``spec.source.tls``, whose default is ``verify-identity``, and
    the default here serves only configurations built by hand (tests, benchmarks). ``server_time_zone``
    is the zone the server's ``DATETIME`` values are meant in when a consumer needs one;
    sessions always run in UTC so ``TIMESTAMP`` values arrive as UTC.
    """

    host: str
    port: int = 3306
    user: str = "cdc"
    password: str = field(default="", repr=False)
    server_time_zone: str | None = None
    tls_mode: str = "preferred"
    ca_pem: str | None = field(default=None, repr=False)
    connect_timeout: int = 10
    chunk_reader: str = "auto"  # EngineOptions.chunk_reader: "auto" (ConnectorX where exact), "pymysql"

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def tls(self) -> TlsSettings:
        """The TLS settings every client of the source derives its own from (tls.py)."""
        return TlsSettings(self.tls_mode, self.ca_pem, "spec.source.tls")


def _ssl_options(cfg: SourceConfig) -> dict[str, Any]:
    tls = cfg.tls
    if tls.mode == "disabled":
        return {"ssl_disabled": True}
    if tls.mode == "preferred":
        # PyMySQL's default: TLS when the server supports it, plaintext otherwise (its context
        # comes from _TlsPreferringConnection).
        return {}
    return {"ssl": ssl_context(tls)}


@functools.cache
def _unverified_context() -> ssl.SSLContext:
    # What PyMySQL's preferred mode builds for every connection (no certificate or host check),
    # without loading the system's CA store, which that context never consults.
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.verify_flags &= ~ssl.VERIFY_X509_STRICT
    return ctx


if TYPE_CHECKING:
    _Connection = pymysql.connections.Connection[Any]
else:
    _Connection = pymysql.connections.Connection


class _TlsPreferringConnection(_Connection):
    """PyMySQL's connection, sharing one context for its preferred TLS mode (``{}`` options).
    ``tls`` is the settings it was made with, for clients that open their own connection to the
    same server with the same checks (chunk_reader's ConnectorX)."""

    tls: TlsSettings | None = None

    def _create_ssl_ctx(self, sslp: Any) -> ssl.SSLContext:
        if isinstance(sslp, dict) and not sslp:
            return _unverified_context()
        context: ssl.SSLContext = super()._create_ssl_ctx(sslp)  # type: ignore[misc]
        return context


def connection_kwargs(cfg: SourceConfig, database: str | None = None) -> dict[str, Any]:
    """Keyword arguments for ``pymysql.connect`` (also used for binlog stream connections)."""
    kwargs: dict[str, Any] = {
        "host": cfg.host,
        "port": int(cfg.port),
        "user": cfg.user,
        "password": cfg.password,
        "charset": "utf8mb4",
        "autocommit": True,
        "connect_timeout": cfg.connect_timeout,
        # TIMESTAMP values are converted to the session zone on the way out; UTC makes the
        # snapshot agree with the binlog, which carries TIMESTAMP as a UTC epoch.
        "init_command": "SET time_zone = '+00:00'",
    }
    if database:
        kwargs["database"] = database
    kwargs.update(_ssl_options(cfg))
    return kwargs


def _scrub(text: str, cfg: SourceConfig) -> str:
    # Server messages never echo the password, but a driver message might; short passwords are
    # left alone because replacing every "a" would make the message unreadable.
    if cfg.password and len(cfg.password) >= 4:
        text = text.replace(cfg.password, "***")
    return text


def source_error(
    exc: BaseException, cfg: SourceConfig, doing: str = "connecting to the source"
) -> SourceError:
    """A ``SourceError`` for a PyMySQL error, naming the problem and the spec field to fix."""
    code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
    detail = _scrub(str(exc.args[1]) if len(exc.args) > 1 else str(exc), cfg)
    if _is_tls_failure(exc, code):
        # Before the unreachable-server case: PyMySQL reports a failed handshake as one.
        msg = f"TLS to the source at {cfg.address} failed ({detail}); check spec.source.tls"
    elif "secure transport" in detail:  # require_secure_transport: MySQL 3159, MariaDB 4036
        msg = f"the source at {cfg.address} accepts only TLS ({detail}); set spec.source.tls.mode"
    elif code in (CR.CR_CONNECTION_ERROR, CR.CR_CONN_HOST_ERROR, CR.CR_UNKNOWN_HOST, CR.CR_SERVER_LOST) and (
        "connect" in doing
    ):
        msg = (
            f"cannot reach the source at {cfg.address} ({detail}); check spec.source.host and "
            "spec.source.port and that the server accepts TCP connections"
        )
    elif code in (ER.ACCESS_DENIED_ERROR, 1698):  # 1698: ER_ACCESS_DENIED_NO_PASSWORD_ERROR
        msg = (
            f"the source refused user {cfg.user!r} at {cfg.address} (access denied); check spec.source.user "
            "and the password in the secret named by spec.source.passwordSecretRef"
        )
        if cfg.tls.mode == "disabled":
            # MariaDB refuses a plaintext login to a server with require_secure_transport this way.
            msg += ", or whether the server accepts only TLS (then set spec.source.tls.mode)"
    elif code == ER.BAD_DB_ERROR:
        msg = f"{detail} on the source at {cfg.address}; check spec.source.tables"
    elif code in _PRIVILEGE_ERRORS:
        msg = (
            f"user {cfg.user!r} lacks a privilege on the source while {doing} ({detail}); grant SELECT, "
            "RELOAD, SHOW DATABASES, REPLICATION SLAVE and REPLICATION CLIENT (BINLOG MONITOR on MariaDB) "
            "to it"
        )
    else:
        msg = f"source error while {doing} at {cfg.address}: {detail}"
    return SourceError(msg)


def _is_tls_failure(exc: BaseException, code: int | None) -> bool:
    # PyMySQL wraps a failed handshake (a certificate that does not verify, a server without TLS
    # when it is required) in "Can't connect" and keeps the SSL error as original_exception.
    original = getattr(exc, "original_exception", None)
    return (
        code == CR.CR_SSL_CONNECTION_ERROR
        or isinstance(exc, ssl.SSLError)
        or isinstance(original, ssl.SSLError)
    )


def _is_transient(exc: BaseException) -> bool:
    return isinstance(exc, pymysql.err.OperationalError) and bool(exc.args) and exc.args[0] in _TRANSIENT


def connect(
    cfg: SourceConfig,
    database: str | None = None,
    streaming: bool = False,
    attempts: int = 3,
) -> pymysql.connections.Connection[Any]:
    """An autocommit utf8mb4 connection whose session runs in UTC.

    ``streaming=True`` is for bulk reads: the default cursor is unbuffered (``SSCursor``), values
    arrive raw (``str``/``bytes``, converted column-wise by ``arrow_columns.rows_to_arrow``), and the
    server waits longer for a slow reader. Transient failures are retried ``attempts`` times;
    anything left becomes a ``SourceError`` that never contains the password.
    """
    kwargs = connection_kwargs(cfg, database)
    if streaming:
        kwargs["cursorclass"] = pymysql.cursors.SSCursor
        kwargs["conv"] = RAW_CONVERSIONS
    retrying = Retrying(
        stop=stop_after_attempt(max(1, attempts)),
        wait=wait_exponential(multiplier=0.2, max=2),
        retry=retry_if_exception(_is_transient),
        reraise=True,
    )
    try:
        conn: _TlsPreferringConnection = retrying(_TlsPreferringConnection, **kwargs)
    except (pymysql.err.MySQLError, ssl.SSLError, OSError) as exc:
        raise source_error(exc, cfg) from None
    conn.tls = cfg.tls
    if streaming:
        try:
            with conn.cursor(pymysql.cursors.Cursor) as cur:
                # An unbuffered reader converts batches between fetches; don't let the server
                # give up on it (net_write_timeout defaults to 60 s).
                cur.execute("SET SESSION net_write_timeout = 3600, net_read_timeout = 3600")
        except pymysql.err.MySQLError as exc:
            conn.close()
            raise source_error(exc, cfg) from None
    return conn
