"""Credentials stay out of the spec: object-store credentials by secretKeyRef, URLs with
credentials refused by the models and by the CRD's CEL rules, and never a value in a message."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from sparkcdc.api import CdcPipeline, DeltaSink, JdbcSink
from sparkcdc.api.crd import render_crd_yaml
from sparkcdc.api.credentials import CREDENTIAL_QUERY, JDBC_URL_RULE, check_object_path, credential_param
from sparkcdc.api.manifest import ManifestError, load_manifests

pytestmark = pytest.mark.unit

SECRET = "Wh4t-A-S3cret"
JDBC = {"type": "jdbc", "user": "cdc", "passwordSecretRef": {"name": "db", "key": "password"}}
REF = {"name": "lake", "key": "secret-key"}


def jdbc(url: str) -> JdbcSink:
    return JdbcSink.model_validate({**JDBC, "url": url})


def delta(path: str, credentials: list[dict[str, Any]] | None = None) -> DeltaSink:
    return DeltaSink.model_validate({"type": "delta", "path": path, "credentials": credentials or []})


def message(err: pytest.ExceptionInfo[ValidationError]) -> str:
    return str(err.value.errors()[0]["msg"])


@pytest.mark.parametrize(
    ("query", "name"),
    [
        (f"password={SECRET}", "password"),
        (f"PASSWORD={SECRET}", "PASSWORD"),
        (f"sslmode=require&Password={SECRET}", "Password"),
        (f"user=cdc&x={SECRET}", "user"),
        (f"pwd={SECRET}", "pwd"),
        (f"pass={SECRET}", "pass"),
        (f"sslpassword={SECRET}", "sslpassword"),
        (f"trustCertificateKeyStorePassword={SECRET}", "trustCertificateKeyStorePassword"),
        (f"accessToken={SECRET}", "accessToken"),
        (f"client_secret={SECRET}", "client_secret"),
        (f"pass%77ord={SECRET}", "password"),
        (f"a=1;password={SECRET}", "password"),
    ],
)
def test_jdbc_url_with_credential_parameters_is_refused_without_the_value(query: str, name: str) -> None:
    with pytest.raises(ValidationError) as err:
        jdbc(f"mysql://db:3306/shop?{query}")
    text = message(err)
    assert f"query parameter {name!r}" in text
    assert "passwordSecretRef" in text and "user" in text
    assert SECRET not in text


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://db/replica?sslmode=require&application_name=token-reader",
        "postgresql://db/replica?sslkey=/etc/ssl/client.key&sslrootcert=/etc/ssl/ca.pem",
        "mysql://db:3306/shop?useSSL=true&userTimezone=UTC",
        "mysql://db:3306/shop",
    ],
)
def test_jdbc_url_without_credentials_is_accepted(url: str) -> None:
    assert jdbc(url).url == url


@pytest.mark.parametrize(
    "path",
    [
        f"s3a://AKIAEXAMPLE:{SECRET}@bucket/lake",
        f"s3a://{SECRET}@bucket/lake",
        f"gs://svc:{SECRET}@bucket/lake",
        f"abfss://container:{SECRET}@account.dfs.core.windows.net/lake",
        f"wasbs://container@account.blob.core.windows.net/lake?sv=2022-11-02&sig={SECRET}",
        f"s3a://bucket/lake?X-Amz-Credential=AKIA&X-Amz-Signature={SECRET}",
        f"abfss://c@a.dfs.core.windows.net/lake?SIG={SECRET}",
    ],
)
def test_object_paths_with_credentials_are_refused_without_the_value(path: str) -> None:
    remedies = {"delta": "workload identity", "changelog": "mount the storage there"}
    for sink, remedy in remedies.items():
        with pytest.raises(ValidationError) as err:
            CdcPipeline.from_k8s(_pipeline({"type": sink, "path": path}))
        [error] = err.value.errors()
        assert error["loc"][-1] == "path"
        assert error["msg"].startswith("Value error, must not carry credentials")
        assert remedy in error["msg"]
        assert SECRET not in error["msg"]


@pytest.mark.parametrize(
    "path",
    [
        "/var/lib/lake",
        "s3a://bucket/lake/shop",
        "abfss://container@account.dfs.core.windows.net/lake",
        "wasbs://container@account.blob.core.windows.net/lake",
        "gs://bucket/lake?versioned=true",
    ],
)
def test_object_paths_without_credentials_are_accepted(path: str) -> None:
    assert check_object_path(path) == path
    assert delta(path).path == path


def test_credentials_are_hadoop_options_by_secret_key_and_show_in_secret_refs() -> None:
    sink = delta(
        "s3a://bucket/lake",
        [
            {"key": "fs.s3a.access.key", "secretKeyRef": {"name": "lake", "key": "access-key"}},
            {"key": "fs.s3a.secret.key", "secretKeyRef": REF},
            {"key": "fs.azure.account.key.acct.dfs.core.windows.net", "secretKeyRef": REF},
        ],
    )
    assert [c.key for c in sink.credentials] == [
        "fs.s3a.access.key",
        "fs.s3a.secret.key",
        "fs.azure.account.key.acct.dfs.core.windows.net",
    ]
    pipeline = CdcPipeline.from_k8s(_pipeline(sink.to_k8s()))
    refs = dict(pipeline.secret_refs())
    assert refs["spec.sink.credentials[1].secretKeyRef"].key == "secret-key"
    assert refs["spec.sink.credentials[0].secretKeyRef"].key == "access-key"


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("spark.hadoop.fs.s3a.secret.key", "write the Hadoop option without spark.hadoop."),
        ("hadoop.security.credential.provider.path", "must be a Hadoop filesystem option starting with fs."),
        (SECRET, "must be a Hadoop filesystem option starting with fs."),
        ("fs.s3a.secret key", "must be a Hadoop filesystem option starting with fs."),
    ],
)
def test_a_credential_key_must_be_a_hadoop_filesystem_option(key: str, expected: str) -> None:
    with pytest.raises(ValidationError) as err:
        delta("/lake", [{"key": key, "secretKeyRef": REF}])
    assert expected in message(err)
    assert SECRET not in message(err)


def test_a_credential_key_may_be_given_once(tmp_path: Path) -> None:
    twice = [{"key": "fs.s3a.secret.key", "secretKeyRef": REF}] * 2
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(_pipeline({"type": "delta", "path": "/lake", "credentials": twice})))
    with pytest.raises(ManifestError) as err:
        load_manifests([str(path)], check_secrets=False)
    assert err.value.messages == [
        f"{path}#1 (CdcPipeline lake): spec.sink.credentials[1].key: an option is given twice; each key "
        "may appear once in credentials"
    ]


def test_credentials_are_only_for_delta(tmp_path: Path) -> None:
    sink = {
        "type": "changelog",
        "path": "/out",
        "credentials": [{"key": "fs.s3a.secret.key", "secretKeyRef": REF}],
    }
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(_pipeline(sink)))
    with pytest.raises(ManifestError) as err:
        load_manifests([str(path)], check_secrets=False)
    assert "spec.sink.credentials" in err.value.messages[0]


def test_validate_message_never_holds_the_url(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from sparkcdc.cli import main

    path = tmp_path / "p.yaml"
    sink = {**JDBC, "url": f"mysql://db:3306/shop?user=cdc&password={SECRET}"}
    path.write_text(yaml.safe_dump(_pipeline(sink)))
    assert main(["validate", "--secrets=skip", str(path)]) == 2
    out, err = capsys.readouterr()
    assert SECRET not in out + err
    assert "spec.sink.url: must not carry credentials: query parameter 'user'" in err


# -- the CRD's rules ---------------------------------------------------------------------------------


def _sink_schema() -> dict[str, Any]:
    crd = yaml.safe_load(render_crd_yaml())
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    sink: dict[str, Any] = spec["properties"]["sink"]
    return sink


def _regexes(rule: str) -> list[str]:
    """The regular expressions of a CEL rule's ``matches`` calls, unquoted."""
    return [m.replace("\\\\", "\\") for m in re.findall(r"matches\('((?:[^'\\]|\\.)*)'\)", rule)]


def test_crd_refuses_credentials_in_the_jdbc_url_and_the_path() -> None:
    props = _sink_schema()["properties"]
    assert props["url"]["x-kubernetes-validations"] == [JDBC_URL_RULE]
    path_rules = props["path"]["x-kubernetes-validations"]
    assert len(path_rules) == 2
    assert all(r["message"].startswith("must not carry credentials") for r in path_rules)
    assert all("workload identity" in r["message"] for r in path_rules)
    assert props["credentials"]["x-kubernetes-list-type"] == "map"
    assert props["credentials"]["x-kubernetes-list-map-keys"] == ["key"]
    assert (
        props["credentials"]["items"]["properties"]["key"]["pattern"] == r"^fs\.[A-Za-z0-9][-A-Za-z0-9_.]*$"
    )
    assert props["credentials"]["items"]["required"] == ["key", "secretKeyRef"]


# The CEL rules' regexes (RE2 on the server; the e2e test runs them there) agree with the models.
CEL_CASES = [
    "mysql://db/x?password=1",
    "mysql://db/x?sslmode=require&PASSWORD=1",
    "mysql://db/x?useSSL=true",
    "mysql://db/x?application_name=token",
    "mysql://db/x?user=a",
    "s3a://k:s@bucket/x",
    "s3a://k@bucket/x",
    "s3a://bucket/x",
    "abfss://c@a.dfs.core.windows.net/x",
    "abfss://c:k@a.dfs.core.windows.net/x",
    "wasbs://c@a.blob.core.windows.net/x?sv=1&sig=2",
    "/local/dir",
    "/local/dir?weird=1",
]


@pytest.mark.parametrize("value", CEL_CASES)
def test_cel_rules_agree_with_the_models(value: str) -> None:
    props = _sink_schema()["properties"]

    def cel_refuses(rules: list[dict[str, str]]) -> bool:
        for rule in rules:
            regexes = _regexes(rule["rule"])
            if rule["rule"].startswith("!self.matches(") and " || " in rule["rule"]:
                refused = bool(re.search(regexes[0], value)) and not re.search(regexes[1], value)
            else:
                refused = bool(re.search(regexes[0], value))
            if refused:
                return True
        return False

    if value.startswith("mysql://"):
        url_rules = [r for r in props["url"]["x-kubernetes-validations"] if "credentials" in r["message"]]
        assert cel_refuses(url_rules) == (credential_param(value) is not None)
    else:
        try:
            check_object_path(value)
            model_refuses = False
        except ValueError:
            model_refuses = True
        assert cel_refuses(props["path"]["x-kubernetes-validations"]) == model_refuses


def test_the_query_regex_looks_only_at_parameter_names() -> None:
    rx = re.compile(CREDENTIAL_QUERY)
    assert rx.match("mysql://db/x?a=password") is None
    assert rx.match("mysql://db/x?a=1#password=1") is None
    assert rx.match("mysql://db/password/x") is None
    assert rx.match("mysql://db/x?a=1&secret_key=1")


def _pipeline(sink: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "sparkcdc.io/v1alpha1",
        "kind": "CdcPipeline",
        "metadata": {"name": "lake"},
        "spec": {
            "source": {
                "host": "127.0.0.1",
                "user": "cdc",
                "passwordSecretRef": {"name": "db", "key": "password"},
                "tables": ["shop.orders"],
            },
            "sink": sink,
        },
    }
