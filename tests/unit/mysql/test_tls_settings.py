"""One TLS setting, the same checks in every client's dialect (mysql/tls.py), and the spec fields
that carry it (spec.source.tls verified by default, spec.sink.tls)."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from sparkcdc.api.base import SecretKeyRef
from sparkcdc.api.sinks import JdbcSink
from sparkcdc.api.source import TlsSpec
from sparkcdc.mysql.errors import SourceError
from sparkcdc.mysql.tls import TlsSettings, ca_file, system_ca_file
from sparkcdc.sinks.base import SinkError
from sparkcdc.sinks.factory import sink_config
from sparkcdc.sinks.jdbc.config import JdbcSinkConfig
from sparkcdc.sinks.jdbc.tls import libpq_tls_options, pymysql_tls_options, tls_failure
from sparkcdc.testing.pki import make_server_pki

REF = SecretKeyRef(name="db-ca", key="ca.crt")


@pytest.fixture(scope="module")
def ca_pem(tmp_path_factory: pytest.TempPathFactory) -> str:
    return make_server_pki(tmp_path_factory.mktemp("pki")).ca_pem


def test_the_source_verifies_identity_by_default_with_the_system_cas() -> None:
    spec = TlsSpec()
    assert (spec.mode, spec.ca_secret_ref) == ("verify-identity", None)
    assert TlsSpec(mode="verify-ca", ca_secret_ref=REF).ca_secret_ref == REF


def test_verify_ca_needs_a_ca_of_ones_own() -> None:
    # Against the public trust store it would accept any certified server under any name.
    with pytest.raises(ValueError, match="required when mode is verify-ca"):
        TlsSpec(mode="verify-ca")


def test_every_client_gets_the_same_checks(ca_pem: str) -> None:
    verified = TlsSettings("verify-identity", ca_pem, "spec.source.tls")
    path = ca_file(verified)
    assert Path(path).read_text() == ca_pem and path.endswith(".pem")  # ConnectorX wants .pem/.crt
    assert oct(Path(path).parent.stat().st_mode & 0o777) == "0o700"
    assert verified.connectorx_params() == {"ssl-mode": "VERIFY_IDENTITY", "ssl-ca": path}
    assert verified.decoder_request() == {"mode": "verify-identity", "ca": ca_pem}
    assert verified.libpq_options() == {"sslmode": "verify-full", "sslrootcert": path}
    chain_only = TlsSettings("verify-ca", ca_pem)
    assert chain_only.connectorx_params()["ssl-mode"] == "VERIFY_CA"
    assert chain_only.libpq_options()["sslmode"] == "verify-ca"
    for mode, libpq in (("required", "require"), ("preferred", "prefer")):
        assert TlsSettings(mode).connectorx_params() == {"ssl-mode": "REQUIRED"}
        assert TlsSettings(mode).libpq_options() == {"sslmode": libpq}
    assert TlsSettings("disabled").connectorx_params() == {}
    assert TlsSettings("disabled").libpq_options() == {"sslmode": "disable"}


def test_without_a_ca_the_system_bundle_is_trusted() -> None:
    system = TlsSettings("verify-identity")
    assert ca_file(system) == system_ca_file()
    assert system.decoder_request() == {"mode": "verify-identity", "ca": ""}


def test_an_unknown_mode_names_its_field() -> None:
    with pytest.raises(SourceError, match=r"set spec\.sink\.tls\.mode to one of"):
        TlsSettings("on", None, "spec.sink.tls")


def _jdbc(url: str, tls: TlsSpec | None) -> JdbcSink:
    ref = SecretKeyRef(name="db", key="password")
    return JdbcSink(type="jdbc", url=url, user="u", password_secret_ref=ref, tls=tls)


def test_the_sink_tls_block_reaches_its_clients(ca_pem: str) -> None:
    spec = _jdbc("postgresql://pg:5432/lake", TlsSpec(ca_secret_ref=REF))
    config = sink_config(spec, "pw", ca_pem)
    assert isinstance(config, JdbcSinkConfig) and config.tls is not None
    assert config.tls.where == "spec.sink.tls" and config.tls.mode == "verify-identity"
    assert libpq_tls_options(config)["sslmode"] == "verify-full"
    assert isinstance(pymysql_tls_options(config)["ssl"], ssl.SSLContext)
    unset = sink_config(_jdbc("mysql://db:3306/lake", None), "pw")
    assert pymysql_tls_options(unset) == {} and libpq_tls_options(unset) == {}
    off = sink_config(_jdbc("mysql://db:3306/lake", TlsSpec(mode="disabled")), "pw")
    assert pymysql_tls_options(off) == {"ssl_disabled": True}


def test_a_bad_sink_ca_is_a_sink_error() -> None:
    spec = _jdbc("postgresql://pg:5432/lake", TlsSpec(ca_secret_ref=REF))
    config = sink_config(spec, "pw", "not a certificate")
    with pytest.raises(SinkError, match=r"spec\.sink\.tls\.caSecretRef is not valid PEM"):
        libpq_tls_options(config)
    with pytest.raises(SinkError, match="not valid PEM"):
        pymysql_tls_options(config)


def test_one_tls_setting_per_sink() -> None:
    with pytest.raises(ValueError, match="sslmode and tls both set TLS"):
        _jdbc("postgresql://pg:5432/lake?sslmode=require", TlsSpec(mode="required"))
    assert _jdbc("postgresql://pg:5432/lake?sslmode=require", None).tls is None


def test_a_handshake_failure_points_at_the_sink_tls() -> None:
    config = sink_config(_jdbc("mysql://db:3306/lake", TlsSpec(mode="required")), "pw")
    assert "spec.sink.tls (mode required)" in (tls_failure("[SSL: CERTIFICATE_VERIFY_FAILED]", config) or "")
    assert tls_failure("Access denied for user", config) is None
