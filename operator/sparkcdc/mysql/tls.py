"""One TLS setting, spoken in the dialect of every client that connects with it.

A pipeline's connections to a database go through several clients: PyMySQL (the source's queries,
python-mysql-replication, MySQL/MariaDB sinks), ConnectorX (snapshot reads, Rust), the Go binlog
decoder (binlogdec/) and libpq (PostgreSQL sinks). They must all encrypt and verify alike, or a
mode would silently mean less on the fast paths; so the settings live here once, as the spec
states them (``spec.source.tls``, ``spec.sink.tls``), and each client's options are derived from
them. The CA arrives as PEM text (resolved from its Secret by the driver and pickled into Spark
tasks with the rest of the settings); clients that want a file get one written per process.
Without a CA the verifying modes use the system's trust store.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import os
import shutil
import ssl
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sparkcdc.mysql.errors import SourceError

__all__ = ["TLS_MODES", "TlsSettings", "ca_file", "ssl_context", "system_ca_file"]

TLS_MODES = ("disabled", "preferred", "required", "verify-ca", "verify-identity")
VERIFYING = ("verify-ca", "verify-identity")
# libpq's names for the same modes.
_LIBPQ_MODES = {
    "disabled": "disable",
    "preferred": "prefer",
    "required": "require",
    "verify-ca": "verify-ca",
    "verify-identity": "verify-full",
}


@dataclass(frozen=True)
class TlsSettings:
    """``mode`` (one of ``TLS_MODES``) and the PEM CA; ``where`` is the spec field they came from,
    named by every error about them. Picklable: shipped to Spark tasks."""

    mode: str = "verify-identity"
    ca_pem: str | None = field(default=None, repr=False)
    where: str = "spec.source.tls"

    def __post_init__(self) -> None:
        if self.mode.lower() not in TLS_MODES:
            raise SourceError(
                f"unknown TLS mode {self.mode!r}; set {self.where}.mode to one of {', '.join(TLS_MODES)}"
            )
        object.__setattr__(self, "mode", self.mode.lower())

    @property
    def verifying(self) -> bool:
        return self.mode in VERIFYING

    def connectorx_params(self) -> dict[str, str]:
        """ConnectorX's URL parameters for an encrypted session (it has no opportunistic mode:
        ``preferred`` is asked for only once a PyMySQL session found the server offers TLS)."""
        if self.mode == "disabled":
            return {}
        if not self.verifying:
            return {"ssl-mode": "REQUIRED"}
        return {"ssl-mode": self.mode.upper().replace("-", "_"), "ssl-ca": ca_file(self)}

    def decoder_request(self) -> dict[str, Any]:
        """The Go decoder's ``tls`` request field (binlogdec/tls.go): the CA travels inline, on
        stdin with the password, never in a file or the argument list."""
        return {"mode": self.mode, "ca": self.ca_pem or ""}

    def libpq_options(self) -> dict[str, str]:
        """psycopg's ``sslmode`` and ``sslrootcert`` for the same checks."""
        options = {"sslmode": _LIBPQ_MODES[self.mode]}
        if self.verifying:
            options["sslrootcert"] = ca_file(self)
        return options


@functools.lru_cache(maxsize=8)
def _context(mode: str, ca_pem: str | None, where: str) -> ssl.SSLContext:
    try:
        ctx = ssl.create_default_context(cadata=ca_pem) if ca_pem else ssl.create_default_context()
    except ssl.SSLError as exc:
        raise SourceError(
            f"the CA certificate in {where}.caSecretRef is not valid PEM ({exc}); check it"
        ) from None
    if mode == "required":
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    elif mode == "verify-ca":
        ctx.check_hostname = False
    return ctx


def ssl_context(settings: TlsSettings) -> ssl.SSLContext:
    """One context per mode and CA for the whole process (not for ``preferred``, whose context
    PyMySQL's connection makes: connection.py): loading a CA store takes 25-100 ms, and every
    split reader and binlog reader connection would otherwise load it again."""
    return _context(settings.mode, settings.ca_pem, settings.where)


def system_ca_file() -> str:
    """The system's CA bundle, for clients that take a file (the verifying modes without a CA)."""
    paths = ssl.get_default_verify_paths()
    for candidate in (paths.cafile, paths.openssl_cafile, "/etc/ssl/certs/ca-certificates.crt"):
        if candidate and os.path.isfile(candidate):
            return candidate
    raise SourceError(
        "no system CA bundle found (install ca-certificates) and no CA given: set a caSecretRef in "
        "the TLS settings"
    )


def ca_file(settings: TlsSettings) -> str:
    """A PEM file holding the settings' CA (the system bundle without one)."""
    if not settings.ca_pem:
        return system_ca_file()
    return _written(settings.ca_pem)


@functools.cache
def _folder() -> Path:
    # A fresh private directory per process: a shared, predictable one could be prepared by
    # another user to swap the CA that connections trust.
    folder = Path(tempfile.mkdtemp(prefix="sparkcdc-ca-"))
    owner = os.getpid()

    def remove() -> None:
        if os.getpid() == owner:  # not in a forked child (PySpark's workers) still using it
            shutil.rmtree(folder, ignore_errors=True)

    atexit.register(remove)
    return folder


@functools.lru_cache(maxsize=8)
def _written(pem: str) -> str:
    # ConnectorX takes only .pem, .crt and .der names; the name is the content's hash.
    path = _folder() / f"{hashlib.sha256(pem.encode()).hexdigest()[:16]}.pem"
    path.write_text(pem)
    return str(path)
