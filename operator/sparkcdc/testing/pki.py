"""Self-made PKI for tests (``openssl`` on the machine): for the test control plane a CA, the
apiserver's serving cert, client certs, a service-account key pair and kubeconfig files; for
databases that accept only TLS a CA and a serving certificate (``make_server_pki``)."""

from __future__ import annotations

import base64
import ipaddress
import json
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _keypair(pki: Path, name: str) -> None:
    _openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", f"{name}.key", cwd=pki)


def _signed_cert(pki: Path, name: str, subject: str, ext: str) -> None:
    """``name.crt`` for ``name.key``, signed by the CA, with the given x509v3 extensions."""
    _keypair(pki, name)
    _openssl("req", "-new", "-key", f"{name}.key", "-subj", subject, "-out", f"{name}.csr", cwd=pki)
    (pki / f"{name}.ext").write_text(ext)
    _openssl(
        "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
        "-days", "3650", "-sha256", "-extfile", f"{name}.ext", "-out", f"{name}.crt", cwd=pki,
    )  # fmt: skip


_USAGE = "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"


def _ca(pki: Path, name: str = "sparkcdc-test-ca") -> None:
    pki.mkdir(parents=True, exist_ok=True)
    _keypair(pki, "ca")
    _openssl(
        "req", "-x509", "-new", "-key", "ca.key", "-subj", f"/CN={name}", "-days", "3650",
        "-sha256", "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature", "-out", "ca.crt", cwd=pki,
    )  # fmt: skip


@dataclass(frozen=True)
class ServerPki:
    """A CA and a server certificate it signed (PEM files)."""

    ca: Path
    cert: Path
    key: Path

    @property
    def ca_pem(self) -> str:
        return self.ca.read_text()


def make_server_pki(
    pki: Path, hosts: Sequence[str] = ("127.0.0.1", "localhost"), ca_name: str = ""
) -> ServerPki:
    """A new CA (``ca_name``, default a unique one) and a serving certificate for ``hosts``
    (IP addresses and DNS names, all in the subjectAltName) in ``pki``."""
    _ca(pki, ca_name or f"sparkcdc-test-ca-{pki.name}")
    alt = ",".join(f"IP:{h}" if _is_ip(h) else f"DNS:{h}" for h in hosts)
    _signed_cert(
        pki, "server", f"/CN={hosts[0]}", _USAGE + f"extendedKeyUsage=serverAuth\nsubjectAltName={alt}\n"
    )
    # PostgreSQL refuses a key file that others may read.
    (pki / "server.key").chmod(0o600)
    return ServerPki(pki / "ca.crt", pki / "server.crt", pki / "server.key")


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def make_pki(pki: Path) -> None:
    """CA, apiserver serving cert (127.0.0.1/localhost), client certs, service-account key pair."""
    _ca(pki)
    usage = _USAGE
    _signed_cert(
        pki, "apiserver", "/CN=kube-apiserver",
        usage + "extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost,IP:10.0.0.1,"
        "DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,"
        "DNS:kubernetes.default.svc.cluster.local\n",
    )  # fmt: skip
    client = usage + "extendedKeyUsage=clientAuth\n"
    _signed_cert(pki, "admin", "/O=system:masters/CN=sparkcdc-admin", client)
    _signed_cert(pki, "controller-manager", "/CN=system:kube-controller-manager", client)
    _keypair(pki, "sa")
    _openssl("ec", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=pki)


def write_kubeconfig(path: Path, server: str, ca: Path, cert: Path, key: Path, user: str) -> None:
    def b64(p: Path) -> str:
        return base64.b64encode(p.read_bytes()).decode()

    cfg = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "sparkcdc-test", "cluster": {"server": server, "certificate-authority-data": b64(ca)}}
        ],
        "users": [
            {"name": user, "user": {"client-certificate-data": b64(cert), "client-key-data": b64(key)}}
        ],
        "contexts": [{"name": "sparkcdc-test", "context": {"cluster": "sparkcdc-test", "user": user}}],
        "current-context": "sparkcdc-test",
    }
    path.write_text(json.dumps(cfg, indent=2))  # JSON is YAML; every client reads it
    path.chmod(0o600)
