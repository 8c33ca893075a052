"""Spark on Kubernetes, built purely: the driver's settings, the executor pod template and the
pipeline's Spark authentication Secret. Executors must pass the ``restricted`` Pod Security
Standard and get the authentication key as a file, never as a literal in their pod spec."""

from __future__ import annotations

import base64
import json
from typing import Any

from harness.reconcile_fixtures import pipeline
from sparkcdc.controller.builders import SPARK_AUTH_FILE, driver_pod
from sparkcdc.controller.spark_pods import (
    EXECUTOR_TEMPLATE_PATH,
    driver_spark_conf,
    executor_pod_template,
    in_cluster_master,
    spark_auth_secret,
)

K8S = "k8s://https://kubernetes.default.svc"
POD_ENV = {"SPARK_DRIVER_HOST": "10.1.2.3", "SPARKCDC_POD_NAME": "shop-driver-7", "SPARKCDC_EPOCH": "7"}


def test_kubernetes_conf_runs_authenticated_encrypted_executors_from_the_template() -> None:
    p = pipeline(spark={"conf": {"spark.executor.instances": "5"}})
    conf = driver_spark_conf(p, K8S, POD_ENV)
    # Executors connect to the pod's own address, which the driver also binds.
    assert conf["spark.driver.host"] == conf["spark.driver.bindAddress"] == "10.1.2.3"
    assert conf["spark.kubernetes.driver.pod.name"] == "shop-driver-7"
    assert conf["spark.kubernetes.executor.podNamePrefix"] == "shop-e7"
    assert conf["spark.executor.instances"] == "5"  # the user's conf wins
    assert conf["spark.kubernetes.executor.podTemplateFile"] == EXECUTOR_TEMPLATE_PATH
    assert conf["spark.authenticate"] == "true"
    assert conf["spark.network.crypto.enabled"] == "true"
    # Both files set: Spark then passes no _SPARK_AUTH_SECRET literal in the executors' env.
    assert conf["spark.authenticate.secret.driver.file"] == SPARK_AUTH_FILE
    assert conf["spark.authenticate.secret.executor.file"] == SPARK_AUTH_FILE
    assert "spark.authenticate.secret" not in conf
    # The executor's first connection (fetching these settings) reads the key file on a k8s master.
    assert conf["spark.authenticate.secret.file"] == SPARK_AUTH_FILE
    assert conf["spark.kubernetes.executor.secretKeyRef.SPARKCDC_SECRET_SPEC_SOURCE_PASSWORDSECRETREF"] == (
        "mysql-cdc:password"
    )
    assert conf["spark.kubernetes.executor.label.sparkcdc.io/pipeline"] == "shop"
    assert conf["spark.kubernetes.authenticate.executor.serviceAccountName"] == "shop-sparkcdc-driver"


def test_without_a_pod_ip_the_driver_is_reached_through_its_service() -> None:
    conf = driver_spark_conf(pipeline(), K8S, {})
    assert conf["spark.driver.host"] == "shop-driver.ns.svc"
    assert conf["spark.driver.bindAddress"] == "0.0.0.0"


def test_a_local_master_gets_no_kubernetes_settings() -> None:
    local = driver_spark_conf(pipeline(), "local[2]", POD_ENV)
    assert local == {"spark.driver.memory": "1g"}


def test_the_default_master_is_the_api_server_of_the_pods_environment() -> None:
    env = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    assert in_cluster_master(K8S, env) == "k8s://https://10.96.0.1:443"
    assert in_cluster_master(K8S, {"KUBERNETES_SERVICE_HOST": "fd00::1"}) == "k8s://https://[fd00::1]:443"
    assert in_cluster_master(K8S, {}) == K8S  # outside a pod: as given
    assert in_cluster_master("k8s://https://other:6443", env) == "k8s://https://other:6443"


def _restricted_violations(pod: dict[str, Any]) -> list[str]:
    """The checks of the restricted Pod Security Standard (v1.34) a pod template can fail."""
    spec, found = pod["spec"], []
    pod_sc = spec.get("securityContext") or {}
    allowed_volumes = {"emptyDir", "secret", "configMap", "projected", "downwardAPI", "persistentVolumeClaim"}
    for volume in spec.get("volumes") or []:
        if not set(volume) - {"name"} <= allowed_volumes:
            found.append(f"volume {volume['name']}")
    for c in spec["containers"]:
        sc = c.get("securityContext") or {}
        if sc.get("allowPrivilegeEscalation") is not False:
            found.append("allowPrivilegeEscalation")
        if (sc.get("capabilities") or {}).get("drop") != ["ALL"]:
            found.append("capabilities")
        if not sc.get("runAsNonRoot", pod_sc.get("runAsNonRoot")):
            found.append("runAsNonRoot")
        if sc.get("runAsUser", pod_sc.get("runAsUser")) == 0:
            found.append("runAsUser")
        seccomp = (sc.get("seccompProfile") or pod_sc.get("seccompProfile") or {}).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost"):
            found.append("seccompProfile")
        if sc.get("privileged"):
            found.append("privileged")
    return found


def test_the_executor_template_is_restricted_and_mounts_the_key_as_a_file() -> None:
    template = executor_pod_template(pipeline(), K8S)
    assert _restricted_violations(template) == []
    spec = template["spec"]
    assert spec["automountServiceAccountToken"] is False
    assert template["metadata"]["labels"]["sparkcdc.io/pipeline"] == "shop"
    assert template["metadata"]["labels"]["app.kubernetes.io/component"] == "executor"
    (container,) = spec["containers"]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env["SPARK_JAVA_OPT_9999"] == f"-Dspark.master={K8S}"  # the executor reads the key file
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    key_dir, key_name = SPARK_AUTH_FILE.rsplit("/", 1)
    assert mounts[key_dir]["readOnly"] is True and "/tmp" in mounts
    volumes = {v["name"]: v for v in spec["volumes"]}
    secret = volumes[mounts[key_dir]["name"]]["secret"]
    assert secret["secretName"] == "shop-sparkcdc-spark-auth"
    assert secret["items"][0]["path"] == key_name and secret["defaultMode"] == 0o440
    json.dumps(template)  # Spark reads it as a JSON file


def test_a_kubernetes_driver_mounts_the_key_a_local_one_does_not() -> None:
    def volumes(master: str) -> set[str]:
        pod = driver_pod(pipeline(), 3, image="i", spark_master=master, service_account="a", spec_hash="h")
        assert _restricted_violations(pod) == []
        return {v["name"] for v in pod["spec"]["volumes"]}

    assert "spark-auth" in volumes(K8S)
    assert "spark-auth" not in volumes("local[2]")


def test_the_auth_secret_is_random_and_owned_by_the_pipeline() -> None:
    p = pipeline()
    first, second = spark_auth_secret(p), spark_auth_secret(p)
    key = base64.b64decode(first["data"]["spark-auth-key"])
    assert len(key) == 32 and first["data"] != second["data"]
    assert first["metadata"]["name"] == "shop-sparkcdc-spark-auth"
    assert first["metadata"]["ownerReferences"][0]["kind"] == "CdcPipeline"
    assert spark_auth_secret(p, b"k")["data"] == {"spark-auth-key": base64.b64encode(b"k").decode()}
