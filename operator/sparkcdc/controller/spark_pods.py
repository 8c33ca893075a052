"""Pure builders of what Spark on Kubernetes needs from the operator and the driver: the driver's
Spark settings, the executor pod template and the pipeline's Spark authentication Secret.

Spark's defaults on Kubernetes are not safe to run as they are: executor pods get no
securityContext (a namespace enforcing the ``restricted`` Pod Security Standard refuses them), and
with ``spark.authenticate`` on Spark hands each executor the shared secret as a literal
environment value in its pod spec, readable by anyone who may read pods. So:

* executors start from a pod template (``executor_pod_template``) with a restricted
  securityContext, no service-account token, the pipeline's labels and the secret as a file;
* driver and executors authenticate with a per-pipeline key the operator keeps in a Secret the
  pipeline owns (``spark_auth_secret``), mounted as a file in both; with
  ``spark.authenticate.secret.executor.file`` set Spark puts no secret into the executor's
  environment, and ``spark.network.crypto.enabled`` encrypts the RPC traffic with it;
* the driver advertises and binds its pod IP: executors reach it without cluster DNS, and two
  drivers on one network namespace (a test node) cannot collide on the fixed ports.
"""

from __future__ import annotations

import base64
import secrets
from collections.abc import Mapping
from typing import Any

from sparkcdc.api.resource import CdcPipeline
from sparkcdc.controller.builders import (
    BLOCK_MANAGER_PORT,
    DEFAULT_SPARK_MASTER,
    DRIVER_PORT,
    ENV_DRIVER_HOST,
    ENV_EPOCH,
    ENV_IMAGE,
    ENV_POD_NAME,
    SERVICE_ACCOUNT_DIR,
    SPARK_AUTH_FILE,
    SPARK_AUTH_KEY,
    SPARK_LOCAL_DIR,
    driver_account_name,
    driver_host,
    labels,
    owner_reference,
    restricted_container_context,
    restricted_pod_context,
    secret_env_name,
    spark_auth_mount,
    spark_auth_secret_name,
    spark_auth_volume,
)

# Written by the driver at start (its /tmp is an emptyDir): Spark reads the template in client mode.
EXECUTOR_TEMPLATE_PATH = "/tmp/sparkcdc-executor-template.json"
EXECUTOR_CONTAINER = "executor"
# Spark's executor entry point passes SPARK_JAVA_OPT_<n> to the JVM in the order of n; Spark numbers
# its own from 0, this one comes after them.
MASTER_JAVA_OPT = "SPARK_JAVA_OPT_9999"


def in_cluster_master(master: str, env: Mapping[str, str]) -> str:
    """The default master (this cluster) as the API server's address from the pod's environment,
    like in-cluster clients find it: no dependency on cluster DNS resolving kubernetes.default.svc."""
    host, port = env.get("KUBERNETES_SERVICE_HOST"), env.get("KUBERNETES_SERVICE_PORT") or "443"
    if master != DEFAULT_SPARK_MASTER or not host:
        return master
    return f"k8s://https://{f'[{host}]' if ':' in host else host}:{port}"


def driver_spark_conf(pipeline: CdcPipeline, master: str, env: Mapping[str, str]) -> dict[str, str]:
    """Spark settings of the driver; for a Kubernetes master also client-mode networking, executors
    and authentication. The user's ``spec.spark.conf`` wins."""
    spark = pipeline.spec.spark
    conf = {"spark.driver.memory": spark.driver.memory}
    if master.startswith("k8s://"):
        conf.update(kubernetes_conf(pipeline, env))
    conf.update(spark.conf)
    return conf


def kubernetes_conf(pipeline: CdcPipeline, env: Mapping[str, str]) -> dict[str, str]:
    spark, name = pipeline.spec.spark, pipeline.metadata.name
    pod_ip = env.get(ENV_DRIVER_HOST)
    conf = {
        "spark.submit.deployMode": "client",
        "spark.driver.host": pod_ip or driver_host(pipeline),
        "spark.driver.bindAddress": pod_ip or "0.0.0.0",
        "spark.driver.port": str(DRIVER_PORT),
        "spark.blockManager.port": str(BLOCK_MANAGER_PORT),
        "spark.local.dir": SPARK_LOCAL_DIR,
        "spark.kubernetes.namespace": pipeline.metadata.namespace or "default",
        "spark.kubernetes.driver.pod.name": env.get(ENV_POD_NAME, ""),
        "spark.kubernetes.container.image": env.get(ENV_IMAGE, spark.image),
        "spark.kubernetes.authenticate.caCertFile": f"{SERVICE_ACCOUNT_DIR}/ca.crt",
        "spark.kubernetes.authenticate.oauthTokenFile": f"{SERVICE_ACCOUNT_DIR}/token",
        "spark.kubernetes.executor.podNamePrefix": f"{name}-e{env.get(ENV_EPOCH, '0')}",
        # The pipeline's own account (and its annotations, e.g. a workload identity for an object
        # store); the template mounts no API token, so executors cannot call the API server.
        "spark.kubernetes.authenticate.executor.serviceAccountName": driver_account_name(name),
        "spark.kubernetes.executor.podTemplateFile": EXECUTOR_TEMPLATE_PATH,
        "spark.kubernetes.executor.podTemplateContainerName": EXECUTOR_CONTAINER,
        "spark.executor.instances": str(spark.executor.instances),
        "spark.executor.cores": str(spark.executor.cores),
        "spark.executor.memory": spark.executor.memory,
        # Both files set: Spark reads the key from them and passes none in the executors' env.
        "spark.authenticate": "true",
        "spark.authenticate.secret.file": SPARK_AUTH_FILE,
        "spark.authenticate.secret.driver.file": SPARK_AUTH_FILE,
        "spark.authenticate.secret.executor.file": SPARK_AUTH_FILE,
        "spark.network.crypto.enabled": "true",
    }
    for key, value in labels(pipeline, "executor").items():
        conf[f"spark.kubernetes.executor.label.{key}"] = value
    for path, ref in pipeline.secret_refs():
        conf[f"spark.kubernetes.executor.secretKeyRef.{secret_env_name(path)}"] = f"{ref.name}:{ref.key}"
    if spark.image_pull_policy is not None:
        conf["spark.kubernetes.container.image.pullPolicy"] = spark.image_pull_policy
    return conf


def executor_pod_template(pipeline: CdcPipeline, master: str) -> dict[str, Any]:
    """What every executor pod starts from; Spark adds image, command, env, resources and owner."""
    env = [
        # The root filesystem is read-only: Python, the JVM and nss_wrapper write to /tmp.
        {"name": "HOME", "value": "/tmp"},
        # An executor first fetches the driver's settings over a connection authenticated with the
        # key of spark.authenticate.secret.file, which Spark reads only when it knows the master is
        # Kubernetes; a -Dspark.* option is refused in spark.executor.extraJavaOptions.
        {"name": MASTER_JAVA_OPT, "value": f"-Dspark.master={master}"},
    ]
    container = {
        "name": EXECUTOR_CONTAINER,
        "securityContext": restricted_container_context(),
        "env": env,
        "volumeMounts": [
            {"name": "tmp", "mountPath": "/tmp"},
            spark_auth_mount(),
        ],
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"labels": labels(pipeline, "executor")},
        "spec": {
            # Executors never call the API server.
            "automountServiceAccountToken": False,
            "enableServiceLinks": False,
            "securityContext": restricted_pod_context(),
            "containers": [container],
            "volumes": [
                {"name": "tmp", "emptyDir": {}},
                spark_auth_volume(pipeline),
            ],
        },
    }


def spark_auth_secret(pipeline: CdcPipeline, key: bytes | None = None) -> dict[str, Any]:
    """The pipeline's Spark authentication key (256 random bits unless ``key`` is given), owned by
    the pipeline so it goes with it."""
    value = secrets.token_bytes(32) if key is None else key
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {
            "name": spark_auth_secret_name(pipeline.metadata.name),
            "namespace": pipeline.metadata.namespace or "default",
            "labels": labels(pipeline, "spark-auth"),
            "ownerReferences": [owner_reference(pipeline)],
        },
        "data": {SPARK_AUTH_KEY: base64.b64encode(value).decode()},
    }


def runs_executors(master: str) -> bool:
    return master.startswith("k8s://")


__all__ = [
    "EXECUTOR_TEMPLATE_PATH",
    "driver_spark_conf",
    "executor_pod_template",
    "in_cluster_master",
    "kubernetes_conf",
    "runs_executors",
    "spark_auth_secret",
]
