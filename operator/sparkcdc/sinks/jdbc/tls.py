"""``spec.sink.tls`` for the sink's clients (PyMySQL for MySQL/MariaDB, libpq for PostgreSQL).

The settings are the source's kind (mysql/tls.py), so a mode means the same checks for both ends
of a pipeline. They travel in the sink's settings, CA included, into every Spark task: an
executor that writes a split verifies the target exactly as the driver does, without a file or
volume of its own. Unset, each client keeps its own default (PyMySQL's and libpq's ``prefer``).
"""

from __future__ import annotations

import ssl
from typing import Any

from sparkcdc.mysql.errors import SourceError
from sparkcdc.mysql.tls import TlsSettings, ssl_context
from sparkcdc.sinks.base import SinkError

__all__ = ["libpq_tls_options", "pymysql_tls_options", "tls_failure"]

# Words of a failed handshake in PyMySQL's and libpq's messages.
_TLS_WORDS = ("ssl", "tls", "certificate", "secure transport")


def _settings(config: Any) -> TlsSettings | None:
    tls: TlsSettings | None = getattr(config, "tls", None)
    return tls


def pymysql_tls_options(config: Any) -> dict[str, Any]:
    """``pymysql.connect`` keyword arguments for the sink's TLS settings (none when unset)."""
    tls = _settings(config)
    if tls is None or tls.mode == "preferred":
        return {}  # PyMySQL's own default: TLS when offered, unverified
    if tls.mode == "disabled":
        return {"ssl_disabled": True}
    try:
        return {"ssl": ssl_context(tls)}
    except SourceError as err:
        raise SinkError(str(err)) from None


def libpq_tls_options(config: Any) -> dict[str, str]:
    """psycopg's ``sslmode``/``sslrootcert`` for the sink's TLS settings (none when unset: the URL's
    own parameters, or libpq's ``prefer``)."""
    tls = _settings(config)
    if tls is None:
        return {}
    try:
        if tls.ca_pem:
            ssl.create_default_context(cadata=tls.ca_pem)  # a bad PEM named here, not by libpq
        return tls.libpq_options()
    except (SourceError, ssl.SSLError) as err:
        raise SinkError(f"the CA certificate in spec.sink.tls.caSecretRef is not valid PEM ({err})") from None


def tls_failure(reason: str, config: Any) -> str | None:
    """The hint for a failed connection whose ``reason`` looks like a TLS failure, else None."""
    lowered = reason.lower()
    if not any(word in lowered for word in _TLS_WORDS):
        return None
    tls = _settings(config)
    mode = "unset" if tls is None else tls.mode
    return f"check spec.sink.tls (mode {mode}) and the CA in spec.sink.tls.caSecretRef"
