"""``sparkcdc validate --secrets=require|skip``: a GitOps repository validates without its Secrets,
and a missing Secret under ``require`` names the Secret, the key and the field referring to it."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from sparkcdc.cli import build_parser, main

pytestmark = pytest.mark.unit

PIPELINE = """\
apiVersion: sparkcdc.io/v1alpha1
kind: CdcPipeline
metadata: {name: lake}
spec:
  source:
    host: 127.0.0.1
    user: cdc
    passwordSecretRef: {name: mysql-cdc, key: password}
    tables: [shop.orders]
  sink:
    type: delta
    path: s3a://bucket/lake
    credentials:
      - {key: fs.s3a.access.key, secretKeyRef: {name: lake-s3, key: access-key}}
      - {key: fs.s3a.secret.key, secretKeyRef: {name: lake-s3, key: secret-key}}
"""
MYSQL_SECRET = """\
apiVersion: v1
kind: Secret
metadata: {name: mysql-cdc}
stringData: {password: pw}
"""
S3_SECRET_WITHOUT_SECRET_KEY = """\
apiVersion: v1
kind: Secret
metadata: {name: lake-s3}
stringData: {access-key: AKIAEXAMPLE}
"""


def _write(tmp_path: Path, name: str, *docs: str) -> str:
    path = tmp_path / name
    path.write_text("---\n".join(textwrap.dedent(d) for d in docs))
    return str(path)


def test_require_is_the_default() -> None:
    assert build_parser().parse_args(["validate", "x.yaml"]).secrets == "require"


def test_require_names_the_missing_secret_its_key_and_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, "pipeline.yaml", PIPELINE)
    for argv in (["validate", path], ["validate", "--secrets=require", path]):
        assert main(argv) == 2
        out, err = capsys.readouterr()
        assert out == ""
        label = f"{path}#1 (CdcPipeline lake)"
        assert err.splitlines() == [
            f"{label}: spec.source.passwordSecretRef: Secret 'mysql-cdc' not found (Secrets defined: none); "
            "define a v1 Secret named 'mysql-cdc' with key 'password', or fix passwordSecretRef.name",
            f"{label}: spec.sink.credentials[0].secretKeyRef: Secret 'lake-s3' not found (Secrets defined: "
            "none); define a v1 Secret named 'lake-s3' with key 'access-key', or fix secretKeyRef.name",
            f"{label}: spec.sink.credentials[1].secretKeyRef: Secret 'lake-s3' not found (Secrets defined: "
            "none); define a v1 Secret named 'lake-s3' with key 'secret-key', or fix secretKeyRef.name",
        ]


def test_require_names_a_missing_key_of_a_secret_in_another_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = _write(tmp_path, "pipeline.yaml", PIPELINE)
    secrets = _write(tmp_path, "secrets.yaml", MYSQL_SECRET, S3_SECRET_WITHOUT_SECRET_KEY)
    assert main(["validate", "--secrets", "require", pipeline, secrets]) == 2
    _, err = capsys.readouterr()
    assert err == (
        f"{pipeline}#1 (CdcPipeline lake): spec.sink.credentials[1].secretKeyRef: Secret 'lake-s3' has no "
        "key 'secret-key' (keys: access-key); add key 'secret-key' to the Secret, or fix secretKeyRef.key\n"
    )
    assert "AKIAEXAMPLE" not in err


def test_skip_validates_without_secrets(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, "pipeline.yaml", PIPELINE)
    assert main(["validate", "--secrets=skip", path]) == 0
    out, err = capsys.readouterr()
    assert out == f"{path}#1: CdcPipeline lake is valid (secret references not checked: --secrets=skip)\n"
    assert err == ""


def test_skip_still_refuses_everything_else(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = PIPELINE.replace("tables: [shop.orders]", "tables: []").replace(
        "path: s3a://bucket/lake", "path: s3a://AKIAEXAMPLE:hunter2@bucket/lake"
    )
    broken_secret = "apiVersion: v1\nkind: Secret\nmetadata: {name: lake-s3}\ndata: {secret-key: '%%%'}\n"
    path = _write(tmp_path, "pipeline.yaml", bad, broken_secret)
    assert main(["validate", "--secrets=skip", path]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 3, err
    assert "spec.source.tables:" in lines[0]
    assert "spec.sink.path: must not carry credentials" in lines[1]
    assert lines[2] == (
        f"{path}#2 (Secret lake-s3): data.secret-key: not valid base64; put plain text under "
        "stringData instead"
    )
    assert "hunter2" not in err


def test_an_unknown_mode_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["validate", "--secrets=ignore", "x.yaml"])
    assert exit_info.value.code == 2
    assert "argument --secrets: invalid choice: 'ignore'" in capsys.readouterr().err
