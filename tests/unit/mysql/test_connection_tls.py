"""TLS contexts are built once per process, not per connection (loading the CA store costs
25-100 ms, and every split read and binlog read opens connections)."""

from __future__ import annotations

import ssl

import pytest

from sparkcdc.mysql.connection import SourceConfig, SourceError, _TlsPreferringConnection, connection_kwargs


def _unconnected(mode: str) -> _TlsPreferringConnection:
    kwargs = connection_kwargs(SourceConfig(host="127.0.0.1", port=1, tls_mode=mode))
    return _TlsPreferringConnection(**kwargs, defer_connect=True)


def test_preferred_mode_shares_one_unverified_context() -> None:
    first, second = _unconnected("preferred"), _unconnected("preferred")
    # Still PyMySQL's preferred mode: TLS when offered, plaintext otherwise.
    assert first.ssl and not first._ssl_required
    assert first.ctx is second.ctx
    # The same checks as PyMySQL's own preferred context: none.
    assert first.ctx.verify_mode == ssl.CERT_NONE
    assert not first.ctx.check_hostname


@pytest.mark.parametrize("mode", ["required", "verify-ca", "verify-identity"])
def test_verifying_modes_share_one_context_per_mode(mode: str) -> None:
    cfg = SourceConfig(host="127.0.0.1", tls_mode=mode)
    context = connection_kwargs(cfg)["ssl"]
    assert connection_kwargs(cfg)["ssl"] is context
    assert _unconnected(mode).ctx is context
    expected = {
        "required": (ssl.CERT_NONE, False),
        "verify-ca": (ssl.CERT_REQUIRED, False),
        "verify-identity": (ssl.CERT_REQUIRED, True),
    }[mode]
    assert (context.verify_mode, context.check_hostname) == expected


def test_disabled_mode_has_no_context() -> None:
    assert not _unconnected("disabled").ssl


def test_a_bad_ca_is_reported_every_time() -> None:
    cfg = SourceConfig(host="127.0.0.1", tls_mode="verify-ca", ca_pem="not a certificate")
    for _ in range(2):  # a failure is not cached as a context
        with pytest.raises(SourceError, match="not valid PEM"):
            connection_kwargs(cfg)
