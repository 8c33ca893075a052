"""Object-store credentials from the pod spec to the Spark session: the operator puts only
``secretKeyRef``s in the driver pod and the executor settings, the driver resolves them from the
variables the pod builder named and sets them as ``spark.hadoop.<key>``, redacted by Spark."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from harness.reconcile_fixtures import pipeline
from sparkcdc.api import CdcPipeline, SecretRefError
from sparkcdc.api.manifest import load_manifests
from sparkcdc.controller.builders import driver_pod
from sparkcdc.controller.spark_pods import driver_spark_conf
from sparkcdc.driver.local import manifest_credentials, runtimes_of, sink_spark_conf
from sparkcdc.driver.main import spark_conf
from sparkcdc.driver.support import env_secrets
from sparkcdc.engine.runtime import build_runtime
from sparkcdc.options import EngineOptions
from sparkcdc.sinks.base import SinkError
from sparkcdc.spark.credentials import HadoopCredentials, sink_credentials

pytestmark = pytest.mark.unit

K8S = "k8s://https://kubernetes.default.svc"
POD_ENV = {"SPARK_DRIVER_HOST": "10.1.2.3", "SPARKCDC_POD_NAME": "lake-driver-3", "SPARKCDC_EPOCH": "3"}
# What the kubelet would read from the Secrets the pod refers to.
SECRETS = {
    ("mysql-cdc", "password"): "source-pw-1",
    ("sink-secret", "pw"): "unused",
    ("lake", "access-key"): "AKIA-EXAMPLE-1",
    ("lake", "secret-key"): "s3-secret-value-1",
    ("azure", "key"): "azure-account-key-1",
}
CREDENTIALS = [
    {"key": "fs.s3a.access.key", "secretKeyRef": {"name": "lake", "key": "access-key"}},
    {"key": "fs.s3a.secret.key", "secretKeyRef": {"name": "lake", "key": "secret-key"}},
    {
        "key": "fs.azure.account.key.acct.dfs.core.windows.net",
        "secretKeyRef": {"name": "azure", "key": "key"},
    },
]


def delta_pipeline() -> CdcPipeline:
    sink = {
        "type": "delta",
        "path": "s3a://bucket/lake",
        "credentials": CREDENTIALS,
        "url": None,
        "user": None,
        "passwordSecretRef": None,
    }
    return pipeline(sink=sink)


def pod_env_from_secrets(pod: dict[str, Any]) -> dict[str, str]:
    """The container's environment as a kubelet builds it: literals and Secret keys."""
    env: dict[str, str] = dict(POD_ENV)
    for entry in pod["spec"]["containers"][0]["env"]:
        if "value" in entry:
            env[entry["name"]] = entry["value"]
        elif "secretKeyRef" in entry.get("valueFrom", {}):
            ref = entry["valueFrom"]["secretKeyRef"]
            env[entry["name"]] = SECRETS[(ref["name"], ref["key"])]
    return env


def build_pod(p: CdcPipeline) -> dict[str, Any]:
    return driver_pod(p, 3, image="img:1", spark_master=K8S, service_account="sa", spec_hash="h")


def test_the_driver_pod_and_executor_settings_carry_credentials_by_secret_key_ref_only() -> None:
    p = delta_pipeline()
    pod = build_pod(p)
    env = pod["spec"]["containers"][0]["env"]
    refs = {
        e["name"]: e["valueFrom"]["secretKeyRef"] for e in env if "secretKeyRef" in e.get("valueFrom", {})
    }
    assert refs["SPARKCDC_SECRET_SPEC_SINK_CREDENTIALS_0_SECRETKEYREF"] == {
        "name": "lake",
        "key": "access-key",
    }
    assert refs["SPARKCDC_SECRET_SPEC_SINK_CREDENTIALS_1_SECRETKEYREF"] == {
        "name": "lake",
        "key": "secret-key",
    }
    assert refs["SPARKCDC_SECRET_SPEC_SINK_CREDENTIALS_2_SECRETKEYREF"] == {"name": "azure", "key": "key"}
    assert all("value" not in e for e in env if e["name"].startswith("SPARKCDC_SECRET_"))
    conf = driver_spark_conf(p, K8S, POD_ENV)
    assert conf[
        "spark.kubernetes.executor.secretKeyRef.SPARKCDC_SECRET_SPEC_SINK_CREDENTIALS_1_SECRETKEYREF"
    ] == ("lake:secret-key")
    text = json.dumps(pod) + json.dumps(conf)
    assert "spark.hadoop" not in text
    for value in SECRETS.values():
        assert value not in text


def test_the_driver_resolves_the_credentials_and_keeps_them_out_of_its_spark_settings() -> None:
    p = delta_pipeline()
    env = pod_env_from_secrets(build_pod(p))
    credentials = sink_credentials(p.spec.sink, env_secrets(env))
    assert [(key, value.get_secret_value()) for key, value in credentials.options] == [
        ("fs.s3a.access.key", "AKIA-EXAMPLE-1"),
        ("fs.s3a.secret.key", "s3-secret-value-1"),
        ("fs.azure.account.key.acct.dfs.core.windows.net", "azure-account-key-1"),
    ]
    # The settings become `--conf key=value` arguments of the JVM: no credential may be among them.
    runtime = build_runtime(p, env_secrets(env), EngineOptions())
    conf = spark_conf(runtime, K8S, env)
    assert conf["spark.sql.extensions"] == "io.delta.sql.DeltaSparkSessionExtension"
    assert not [key for key in conf if key.startswith("spark.hadoop.")]
    for value in SECRETS.values():
        assert value not in json.dumps(conf)


def test_a_missing_variable_names_the_field_and_the_secret() -> None:
    p = delta_pipeline()
    env = pod_env_from_secrets(build_pod(p))
    del env["SPARKCDC_SECRET_SPEC_SINK_CREDENTIALS_1_SECRETKEYREF"]
    with pytest.raises(SecretRefError) as err:
        sink_credentials(p.spec.sink, env_secrets(env))
    assert str(err.value).startswith(
        "spec.sink.credentials[1].secretKeyRef: no value in "
        "$SPARKCDC_SECRET_SPEC_SINK_CREDENTIALS_1_SECRETKEYREF: the driver pod was not given Secret "
        "'lake' key 'secret-key'"
    )


def test_credentials_never_show_in_a_repr() -> None:
    p = delta_pipeline()
    credentials = sink_credentials(p.spec.sink, env_secrets(pod_env_from_secrets(build_pod(p))))
    assert credentials.keys == ("fs.s3a.access.key", "fs.s3a.secret.key", CREDENTIALS[2]["key"])
    for value in SECRETS.values():
        assert value not in repr(credentials) and value not in str(credentials)
    assert HadoopCredentials().keys == ()


LOCAL = """\
apiVersion: v1
kind: Secret
metadata: {{name: mysql-cdc}}
stringData: {{password: pw}}
---
apiVersion: v1
kind: Secret
metadata: {{name: {secret}}}
stringData: {{secret-key: {value}}}
---
apiVersion: sparkcdc.io/v1alpha1
kind: CdcPipeline
metadata: {{name: {name}}}
spec:
  source:
    host: 127.0.0.1
    user: cdc
    passwordSecretRef: {{name: mysql-cdc, key: password}}
    tables: [shop.orders]
  sink:
    type: delta
    path: {path}
    credentials: [{{key: fs.s3a.secret.key, secretKeyRef: {{name: {secret}, key: secret-key}}}}]
"""


def _local(tmp_path: Path, name: str, secret: str, value: str) -> str:
    path = tmp_path / f"{name}.yaml"
    text = LOCAL.format(name=name, secret=secret, value=value, path=tmp_path / name)
    path.write_text(textwrap.dedent(text))
    return str(path)


def test_sparkcdc_run_resolves_credentials_from_the_manifests_secrets(tmp_path: Path) -> None:
    manifest = load_manifests(
        [_local(tmp_path, "one", "s3-one", "v1"), _local(tmp_path, "two", "s3-two", "v1")]
    )
    credentials = manifest_credentials(manifest)
    assert [(key, value.get_secret_value()) for key, value in credentials.options] == [
        ("fs.s3a.secret.key", "v1")
    ]
    options = EngineOptions()
    conf = sink_spark_conf(runtimes_of(manifest, options), 2, options)
    assert conf and "v1" not in conf.values()


def test_two_pipelines_giving_one_key_different_values_are_refused(tmp_path: Path) -> None:
    files = [_local(tmp_path, "one", "s3-one", "first-v"), _local(tmp_path, "two", "s3-two", "second-v")]
    with pytest.raises(SinkError) as err:
        manifest_credentials(load_manifests(files))
    assert str(err.value) == (
        "spec.sink.credentials: pipelines one and two give fs.s3a.secret.key different values, and one run "
        "shares one Spark session: run them separately, or use per-bucket options "
        "(fs.s3a.bucket.BUCKET.secret.key)"
    )
