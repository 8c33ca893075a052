"""Credentials in URLs are refused by the real API server at apply (the CRD's CEL rules, RE2), with
the models' cases: a JDBC URL carrying a password or user parameter, a Delta or changelog path
carrying user:secret@ or a SAS signature; while object-store credentials by secretKeyRef, Azure's
container@account form and ordinary parameters are accepted."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from sparkcdc.testing.kube import ControlPlane

SECRET = "Wh4t-A-S3cret"
PIPELINE: dict[str, Any] = {
    "apiVersion": "sparkcdc.io/v1alpha1",
    "kind": "CdcPipeline",
    "metadata": {"name": "lake"},
    "spec": {
        "source": {
            "host": "127.0.0.1",
            "user": "cdc",
            "passwordSecretRef": {"name": "mysql-cdc", "key": "password"},
            "tables": ["shop.orders"],
        },
        "sink": {},
    },
}
JDBC = {"type": "jdbc", "user": "cdc", "passwordSecretRef": {"name": "mysql-cdc", "key": "password"}}
URL_MESSAGE = 'spec.sink.url: Invalid value: "string": must not carry credentials in query parameters'
USERINFO_MESSAGE = (
    'spec.sink.path: Invalid value: "string": must not carry credentials (user:secret@ or key@)'
)
QUERY_MESSAGE = 'spec.sink.path: Invalid value: "string": must not carry credentials in query parameters'

REFUSED = {
    "jdbc password parameter": ({**JDBC, "url": f"mysql://db:3306/shop?password={SECRET}"}, URL_MESSAGE),
    "jdbc PassWord parameter": (
        {**JDBC, "url": f"postgresql://db/replica?sslmode=require&PassWord={SECRET}"},
        URL_MESSAGE,
    ),
    "jdbc user parameter": ({**JDBC, "url": "mysql://db:3306/shop?user=root"}, URL_MESSAGE),
    "delta path user:secret@": (
        {"type": "delta", "path": f"s3a://AKIA:{SECRET}@bucket/lake"},
        USERINFO_MESSAGE,
    ),
    "delta path key@": ({"type": "delta", "path": f"s3a://{SECRET}@bucket/lake"}, USERINFO_MESSAGE),
    "delta path abfss container:key@": (
        {"type": "delta", "path": f"abfss://lake:{SECRET}@acct.dfs.core.windows.net/x"},
        USERINFO_MESSAGE,
    ),
    "delta path SAS token": (
        {"type": "delta", "path": f"wasbs://lake@acct.blob.core.windows.net/x?sv=2022-11-02&sig={SECRET}"},
        QUERY_MESSAGE,
    ),
    "changelog path user:secret@": (
        {"type": "changelog", "path": f"s3a://AKIA:{SECRET}@bucket/out"},
        USERINFO_MESSAGE,
    ),
    "credential key with spark.hadoop.": (
        {
            "type": "delta",
            "path": "s3a://bucket/lake",
            "credentials": [
                {"key": "spark.hadoop.fs.s3a.secret.key", "secretKeyRef": {"name": "lake", "key": "k"}}
            ],
        },
        'spec.sink.credentials[0].key: Invalid value: "spark.hadoop.fs.s3a.secret.key"',
    ),
    "credential key twice": (
        {
            "type": "delta",
            "path": "s3a://bucket/lake",
            "credentials": [
                {"key": "fs.s3a.secret.key", "secretKeyRef": {"name": "lake", "key": "a"}},
                {"key": "fs.s3a.secret.key", "secretKeyRef": {"name": "lake", "key": "b"}},
            ],
        },
        'spec.sink.credentials[1]: Duplicate value: {"key":"fs.s3a.secret.key"}',
    ),
    "credentials on a changelog sink": (
        {
            "type": "changelog",
            "path": "/out",
            "credentials": [{"key": "fs.s3a.secret.key", "secretKeyRef": {"name": "lake", "key": "a"}}],
        },
        "credentials, partitionBy, tableProperties, changeDataFeed, optimizeEveryCommits and mergeSchema "
        "are only allowed when type is delta",
    ),
}
ACCEPTED = {
    "jdbc ordinary parameters": {
        **JDBC,
        "url": "postgresql://db/replica?sslmode=require&application_name=token-reader",
    },
    "delta with credentials by secretKeyRef": {
        "type": "delta",
        "path": "s3a://bucket/lake",
        "credentials": [
            {"key": "fs.s3a.access.key", "secretKeyRef": {"name": "lake", "key": "access-key"}},
            {"key": "fs.s3a.secret.key", "secretKeyRef": {"name": "lake", "key": "secret-key"}},
        ],
    },
    "delta on abfss container@account": {"type": "delta", "path": "abfss://lake@acct.dfs.core.windows.net/x"},
    "changelog on a local path": {"type": "changelog", "path": "/var/lib/out"},
}


def _apply(control_plane: ControlPlane, namespace: str, tmp_path: Path, sink: dict[str, Any]) -> Any:
    body = copy.deepcopy(PIPELINE)
    body["spec"]["sink"] = sink
    path = tmp_path / "pipeline.yaml"
    path.write_text(yaml.safe_dump(body))
    return control_plane.kubectl("apply", "-n", namespace, "-f", str(path), check=False)


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_the_api_server_refuses_credentials_in_the_spec(
    control_plane: ControlPlane, sparkcdc_crd: str, namespace: str, tmp_path: Path, case: str
) -> None:
    sink, message = REFUSED[case]
    res = _apply(control_plane, namespace, tmp_path, sink)
    assert res.returncode != 0, f"the server accepted {case}: {res.stdout}"
    assert message in res.stderr
    assert SECRET not in res.stderr  # CEL refusals name the type, not the value
    got = control_plane.kubectl("get", "cdcp", "-n", namespace, "-o", "name").stdout
    assert got.strip() == ""


@pytest.mark.parametrize("case", sorted(ACCEPTED))
def test_the_api_server_accepts_credentials_kept_out_of_the_spec(
    control_plane: ControlPlane, sparkcdc_crd: str, namespace: str, tmp_path: Path, case: str
) -> None:
    res = _apply(control_plane, namespace, tmp_path, ACCEPTED[case])
    assert res.returncode == 0, res.stderr
    got = json.loads(control_plane.kubectl("get", "cdcp", "lake", "-n", namespace, "-o", "json").stdout)
    assert got["spec"]["sink"] == ACCEPTED[case]
