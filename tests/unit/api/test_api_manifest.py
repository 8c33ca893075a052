"""Manifest loading: the reference manifest, and one exact message per kind of mistake."""

from __future__ import annotations

import base64
import textwrap
from pathlib import Path

import pytest
from pydantic import SecretStr

from sparkcdc.api import JdbcSink, SecretKeyRef
from sparkcdc.api.manifest import (
    LoadedSecret,
    Manifest,
    ManifestError,
    SecretRefError,
    load_manifests,
    resolve_secret,
)

pytestmark = pytest.mark.unit

MANIFESTS = Path(__file__).parent / "manifests"
REFERENCE = MANIFESTS / "reference.yaml"
BAD = sorted((MANIFESTS / "bad").glob("*.yaml"))


def _errors(*paths: Path | str) -> list[str]:
    with pytest.raises(ManifestError) as info:
        load_manifests([str(p) for p in paths])
    return info.value.messages


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_reference_manifest_validates_as_written() -> None:
    manifest = load_manifests([str(REFERENCE)])
    [loaded] = manifest.pipelines
    assert loaded.location == f"{REFERENCE}#2"
    pipeline = loaded.pipeline
    assert pipeline.metadata.name == "shop-replica"
    assert pipeline.spec.source.tables == ["shop.orders", "shop.order_items"]
    assert pipeline.spec.startup.mode == "initial"
    assert pipeline.spec.snapshot.chunk_size == 8096
    assert isinstance(pipeline.spec.sink, JdbcSink)
    assert pipeline.spec.sink.database == "shop_replica"
    assert set(manifest.secrets) == {"mysql-cdc"}
    ref = pipeline.spec.source.password_secret_ref
    assert manifest.resolve_secret(ref, "spec.source.passwordSecretRef").get_secret_value() == "secret"


def test_there_are_enough_bad_manifests() -> None:
    assert len(BAD) >= 14


@pytest.mark.parametrize("path", BAD, ids=[p.stem for p in BAD])
def test_bad_manifest_gives_exact_messages(path: Path) -> None:
    """Each file under manifests/bad/ states its expected messages in ``# expect:`` lines."""
    expected = [
        line.removeprefix("# expect: ").replace("{file}", str(path))
        for line in path.read_text().splitlines()
        if line.startswith("# expect: ")
    ]
    assert expected, f"{path} has no '# expect:' line"
    assert _errors(path) == expected


def test_all_errors_of_all_files_are_collected_in_order(tmp_path: Path) -> None:
    first = _write(
        tmp_path,
        "a.yaml",
        """\
        apiVersion: sparkcdc.io/v1alpha1
        kind: CdcPipeline
        metadata: {name: one}
        spec:
          source: {host: h, port: 0, user: u, passwordSecretRef: {name: s, key: k}, tables: [a.b]}
          snapshot: {parallelism: 0}
          sink: {type: console}
        ---
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: settings}
        """,
    )
    second = _write(
        tmp_path,
        "b.yaml",
        """\
        apiVersion: sparkcdc.io/v1alpha1
        kind: CdcPipeline
        metadata: {name: two}
        spec:
          source: {host: h, user: u, passwordSecretRef: {name: s, key: k}, tables: []}
          sink: {type: changelog}
        """,
    )
    assert _errors(first, second) == [
        f"{first}#1 (CdcPipeline one): spec.source.port: must be at least 1, got 0",
        f"{first}#1 (CdcPipeline one): spec.snapshot.parallelism: must be at least 1, got 0",
        f"{first}#2 (ConfigMap settings): unsupported kind v1/ConfigMap; manifest files hold "
        "sparkcdc.io/v1alpha1/CdcPipeline and v1/Secret documents",
        f"{second}#1 (CdcPipeline two): spec.source.tables: must not be empty",
        f"{second}#1 (CdcPipeline two): spec.sink.path: required field is missing",
    ]


def test_secret_references_are_checked_for_every_valid_pipeline(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "p.yaml",
        """\
        apiVersion: sparkcdc.io/v1alpha1
        kind: CdcPipeline
        metadata: {name: one}
        spec:
          source:
            host: h
            user: u
            passwordSecretRef: {name: db, key: password}
            tables: [a.b]
            tls: {mode: verify-ca, caSecretRef: {name: db-ca, key: ca.crt}}
          sink: {type: console}
        """,
    )
    assert _errors(path) == [
        f"{path}#1 (CdcPipeline one): spec.source.passwordSecretRef: Secret 'db' not found (Secrets defined: "
        "none); define a v1 Secret named 'db' with key 'password', or fix passwordSecretRef.name",
        f"{path}#1 (CdcPipeline one): spec.source.tls.caSecretRef: Secret 'db-ca' not found (Secrets "
        "defined: none); define a v1 Secret named 'db-ca' with key 'ca.crt', or fix caSecretRef.name",
    ]


def test_secret_in_a_later_file_resolves_and_data_is_base64(tmp_path: Path) -> None:
    pipeline = _write(
        tmp_path,
        "p.yaml",
        """\
        apiVersion: sparkcdc.io/v1alpha1
        kind: CdcPipeline
        metadata: {name: one}
        spec:
          source: {host: h, user: u, passwordSecretRef: {name: db, key: password}, tables: [a.b]}
          sink: {type: console}
        """,
    )
    encoded = base64.b64encode("pä55".encode()).decode()
    secret = _write(
        tmp_path,
        "s.yaml",
        f"""\
        apiVersion: v1
        kind: Secret
        metadata: {{name: db}}
        type: Opaque
        data: {{password: {encoded}, other: {base64.b64encode(b"x").decode()}}}
        stringData: {{other: y}}
        """,
    )
    manifest = load_manifests([str(pipeline), str(secret)])
    assert manifest.secrets["db"].data["password"].get_secret_value() == "pä55"
    assert manifest.secrets["db"].data["other"].get_secret_value() == "y"  # stringData wins, as in Kubernetes


def test_duplicate_pipeline_names_are_refused(tmp_path: Path) -> None:
    doc = """\
        apiVersion: sparkcdc.io/v1alpha1
        kind: CdcPipeline
        metadata: {name: one}
        spec:
          source: {host: h, user: u, passwordSecretRef: {name: db, key: password}, tables: [a.b]}
          sink: {type: console}
        """
    secret = "apiVersion: v1\nkind: Secret\nmetadata: {name: db}\nstringData: {password: x}\n"
    path = _write(
        tmp_path, "p.yaml", textwrap.dedent(doc) + "---\n" + textwrap.dedent(doc) + "---\n" + secret
    )
    assert _errors(path) == [
        f"{path}#2 (CdcPipeline one): metadata.name: another CdcPipeline is named 'one' ({path}#1)"
    ]


def test_unreadable_and_invalid_yaml_files(tmp_path: Path) -> None:
    broken = _write(tmp_path, "broken.yaml", "apiVersion: v1\nkind: [Secret\n")
    missing = tmp_path / "missing.yaml"
    assert _errors(broken, missing) == [
        f"{broken}: line 3, column 1: invalid YAML: while parsing a flow sequence; expected ',' or ']', "
        "but got '<stream end>'",
        f"{missing}: cannot read: No such file or directory",
    ]


def test_a_file_without_pipelines_is_an_error(tmp_path: Path) -> None:
    path = _write(tmp_path, "s.yaml", "apiVersion: v1\nkind: Secret\nmetadata: {name: db}\n---\n")
    assert _errors(path) == [f"{path}: no CdcPipeline document found"]


def test_documents_that_are_not_objects(tmp_path: Path) -> None:
    path = _write(tmp_path, "x.yaml", "- a\n- b\n---\nmetadata: {name: x}\n")
    assert _errors(path) == [
        f"{path}#1: expected a Kubernetes object (a mapping with apiVersion and kind), got a list",
        f"{path}#2: kind: required field is missing; expected CdcPipeline or Secret",
    ]


def test_resolve_secret_from_plain_mapping_and_errors() -> None:
    secrets = {"db": {"password": "pw"}}
    ref = SecretKeyRef(name="db", key="password")
    value = resolve_secret(secrets, ref, "spec.sink.passwordSecretRef")
    assert isinstance(value, SecretStr)
    assert value.get_secret_value() == "pw"
    with pytest.raises(SecretRefError) as info:
        resolve_secret(secrets, SecretKeyRef(name="db", key="pass"), "spec.sink.passwordSecretRef")
    assert (info.value.field_path, info.value.secret, info.value.key) == (
        "spec.sink.passwordSecretRef",
        "db",
        "pass",
    )
    assert str(info.value) == (
        "spec.sink.passwordSecretRef: Secret 'db' has no key 'pass' (keys: password); add key 'pass' to the "
        "Secret, or fix passwordSecretRef.key"
    )


def test_resolve_secret_respects_namespaces() -> None:
    secret = LoadedSecret(location="s.yaml#1", name="db", namespace="a", data={"k": SecretStr("v")})
    manifest = Manifest(pipelines=[], secrets={"db": secret})
    ref = SecretKeyRef(name="db", key="k")
    assert (
        manifest.resolve_secret(ref, "spec.source.passwordSecretRef", namespace="a").get_secret_value() == "v"
    )
    with pytest.raises(SecretRefError):
        manifest.resolve_secret(ref, "spec.source.passwordSecretRef", namespace="b")
