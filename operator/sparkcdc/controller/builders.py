"""Pure builders of the objects the operator creates: the driver Pod and its headless Service (the
pipeline's own driver ServiceAccount, Role and RoleBinding: ``driver_account``; Spark's own
pieces: ``spark_pods``).

No I/O: every input is an argument, so the output is easy to test and to diff. Database
credentials reach the driver only as ``env.valueFrom.secretKeyRef``; the env var names come from
:func:`secret_env_name`, which the driver uses again to find them.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from sparkcdc.api.resource import API_VERSION, KIND, CdcPipeline
from sparkcdc.api.spec import CdcPipelineSpec, memory_mib
from sparkcdc.core.reconcile_status import driver_pod_name, driver_service_name

DEFAULT_SPARK_MASTER = "k8s://https://kubernetes.default.svc"
DEFAULT_DRIVER_COMMAND: tuple[str, ...] = ("sparkcdc", "driver")
SPARK_UID = 185  # the user of the official Spark images
DRIVER_PORT = 7078
BLOCK_MANAGER_PORT = 7079
DRIVER_METRICS_PORT = 8090  # the driver's Prometheus endpoint (0: none)
SPARK_LOCAL_DIR = "/var/lib/sparkcdc/spark-local"
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
# The pipeline's Spark authentication key, mounted from its Secret in the driver and the executors.
SPARK_AUTH_VOLUME = "spark-auth"
SPARK_AUTH_KEY = "spark-auth-key"
SPARK_AUTH_FILE = "/var/run/secrets/sparkcdc/spark-auth/key"

LABEL_NAME = "app.kubernetes.io/name"
LABEL_COMPONENT = "app.kubernetes.io/component"
LABEL_INSTANCE = "app.kubernetes.io/instance"
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
LABEL_PIPELINE = "sparkcdc.io/pipeline"
ANNOTATION_EPOCH = "sparkcdc.io/epoch"
ANNOTATION_SPEC_HASH = "sparkcdc.io/spec-hash"
ANNOTATION_RESTART_NONCE = "sparkcdc.io/restart-nonce"
ANNOTATION_RESNAPSHOT_NONCE = "sparkcdc.io/resnapshot-nonce"

ENV_PIPELINE_NAME = "SPARKCDC_PIPELINE_NAME"
ENV_PIPELINE_NAMESPACE = "SPARKCDC_PIPELINE_NAMESPACE"
ENV_EPOCH = "SPARKCDC_EPOCH"
ENV_SPARK_MASTER = "SPARKCDC_SPARK_MASTER"
ENV_POD_NAME = "SPARKCDC_POD_NAME"
ENV_IMAGE = "SPARKCDC_IMAGE"
ENV_DRIVER_HOST = "SPARK_DRIVER_HOST"
ENV_DRIVER_METRICS_PORT = "SPARKCDC_DRIVER_METRICS_PORT"
SECRET_ENV_PREFIX = "SPARKCDC_SECRET_"
# What each variable the operator sets on the driver pod carries (docs/configuration.md lists them).
DRIVER_POD_VARIABLES: dict[str, str] = {
    ENV_PIPELINE_NAME: "The name of the CdcPipeline the driver runs.",
    ENV_PIPELINE_NAMESPACE: "The namespace of that CdcPipeline.",
    ENV_EPOCH: "The driver's epoch: it fences the driver's status writes and names its executor pods.",
    ENV_SPARK_MASTER: "The Spark master: `spec.spark.master`, else the operator's `--spark-master`.",
    ENV_DRIVER_HOST: "The pod's IP (from `status.podIP`): Spark's driver address for the executors.",
    ENV_IMAGE: "The driver's image, which the executor pods run too.",
    ENV_POD_NAME: "The pod's name (from `metadata.name`): the owner of the executor pods.",
    ENV_DRIVER_METRICS_PORT: "Port of the driver's Prometheus endpoint: the operator's "
    "`--driver-metrics-port` (0: none).",
    SECRET_ENV_PREFIX + "<FIELD PATH>": "One per secret reference of the spec, from its `secretKeyRef` "
    "(`spec.source.passwordSecretRef` -> `SPARKCDC_SECRET_SPEC_SOURCE_PASSWORDSECRETREF`); "
    "the executor pods get the same.",
}

# Fields that change how the operator treats the driver, not what the driver does: changing them
# must not roll it. The nonces are compared one by one (so the Event names the reason).
_UNHASHED = ("suspend", "restartPolicy", "statePolicy", "restartNonce", "resnapshotNonce", "resnapshotTables")


def secret_env_name(field_path: str) -> str:
    """``spec.source.passwordSecretRef`` -> ``SPARKCDC_SECRET_SPEC_SOURCE_PASSWORDSECRETREF``.

    The one mapping from a secret reference's field path to the env var carrying its value: the
    pod builder names the variables with it, and the driver reads them back with it.
    """
    return SECRET_ENV_PREFIX + re.sub(r"[^A-Za-z0-9]+", "_", field_path).strip("_").upper()


def spec_hash(spec: CdcPipelineSpec) -> str:
    """A short digest of everything in the spec the driver depends on and does not follow itself."""
    # verify/verifyNonce are read by the running driver itself (it polls them): a verification
    # request must never replace the driver it asks to verify with. A streaming driver follows its
    # table selection too (driver/spec_watch.py); a snapshot-only one does not stream: it is rolled.
    unhashed = {*_UNHASHED, "verify", "verifyNonce"}
    data = {k: v for k, v in spec.to_k8s().items() if k not in unhashed}
    if spec.startup.mode != "snapshot-only":
        data["source"] = {k: v for k, v in data["source"].items() if k not in ("tables", "excludeTables")}
    text = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def labels(pipeline: CdcPipeline, component: str) -> dict[str, str]:
    return {
        LABEL_NAME: "sparkcdc",
        LABEL_COMPONENT: component,
        LABEL_INSTANCE: pipeline.metadata.name,
        LABEL_MANAGED_BY: "sparkcdc-operator",
        LABEL_PIPELINE: pipeline.metadata.name,
    }


def driver_selector(name: str) -> dict[str, str]:
    """Labels selecting the driver pods of pipeline ``name`` (all epochs)."""
    return {LABEL_NAME: "sparkcdc", LABEL_COMPONENT: "driver", LABEL_PIPELINE: name}


def owner_reference(pipeline: CdcPipeline) -> dict[str, Any]:
    if not pipeline.metadata.uid:
        raise ValueError(f"CdcPipeline {pipeline.metadata.name} has no uid; read it from the API first")
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "name": pipeline.metadata.name,
        "uid": pipeline.metadata.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def spark_auth_secret_name(pipeline: str) -> str:
    """The Secret holding pipeline ``pipeline``'s Spark authentication key."""
    return driver_account_name(pipeline).replace("-sparkcdc-driver", "-sparkcdc-spark-auth")


def spark_auth_volume(pipeline: CdcPipeline) -> dict[str, Any]:
    """The Secret with the pipeline's Spark key as a file only the pod's group (fsGroup) reads."""
    source = {
        "secretName": spark_auth_secret_name(pipeline.metadata.name),
        "defaultMode": 0o440,
        "items": [{"key": SPARK_AUTH_KEY, "path": SPARK_AUTH_FILE.rsplit("/", 1)[1]}],
    }
    return {"name": SPARK_AUTH_VOLUME, "secret": source}


def spark_auth_mount() -> dict[str, Any]:
    return {"name": SPARK_AUTH_VOLUME, "mountPath": SPARK_AUTH_FILE.rsplit("/", 1)[0], "readOnly": True}


def restricted_pod_context() -> dict[str, Any]:
    """The pod securityContext of drivers and executors: the ``restricted`` Pod Security Standard."""
    return {
        "runAsNonRoot": True,
        "runAsUser": SPARK_UID,
        "runAsGroup": SPARK_UID,
        "fsGroup": SPARK_UID,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def restricted_container_context() -> dict[str, Any]:
    return {
        "runAsNonRoot": True,
        "runAsUser": SPARK_UID,
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "privileged": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def driver_host(pipeline: CdcPipeline) -> str:
    """``spark.driver.host``: executors reach the driver through its headless Service."""
    return f"{driver_service_name(pipeline.metadata.name)}.{namespace_of(pipeline)}.svc"


def driver_pod(
    pipeline: CdcPipeline,
    epoch: int,
    *,
    image: str,
    spark_master: str,
    service_account: str,
    spec_hash: str,
    scheduler_name: str | None = None,
    metrics_port: int = DRIVER_METRICS_PORT,
) -> dict[str, Any]:
    """The driver Pod of ``epoch``; ``restartPolicy: Never`` because the operator does the restarts."""
    spec = pipeline.spec
    annotations = {ANNOTATION_EPOCH: str(epoch), ANNOTATION_SPEC_HASH: spec_hash}
    if spec.restart_nonce is not None:
        annotations[ANNOTATION_RESTART_NONCE] = spec.restart_nonce
    if spec.resnapshot_nonce is not None:
        annotations[ANNOTATION_RESNAPSHOT_NONCE] = spec.resnapshot_nonce
    pod_spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "serviceAccountName": service_account,
        "automountServiceAccountToken": True,  # the driver writes its checkpoint to status
        "enableServiceLinks": False,
        "terminationGracePeriodSeconds": 30,
        "securityContext": restricted_pod_context(),
        "containers": [_driver_container(pipeline, epoch, image, spark_master, metrics_port)],
        "volumes": [
            {"name": "tmp", "emptyDir": {}},
            {"name": "spark-local", "emptyDir": {}},
        ],
    }
    if spark_master.startswith("k8s://"):
        pod_spec["volumes"].append(spark_auth_volume(pipeline))
        pod_spec["containers"][0]["volumeMounts"].append(spark_auth_mount())
    if scheduler_name:
        pod_spec["schedulerName"] = scheduler_name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": driver_pod_name(pipeline.metadata.name, epoch),
            "namespace": namespace_of(pipeline),
            "labels": labels(pipeline, "driver"),
            "annotations": annotations,
            "ownerReferences": [owner_reference(pipeline)],
        },
        "spec": pod_spec,
    }


def _driver_container(
    pipeline: CdcPipeline,
    epoch: int,
    image: str,
    spark_master: str,
    metrics_port: int,
) -> dict[str, Any]:
    spark = pipeline.spec.spark
    ports = [
        {"name": "driver-rpc", "containerPort": DRIVER_PORT, "protocol": "TCP"},
        {"name": "blockmanager", "containerPort": BLOCK_MANAGER_PORT, "protocol": "TCP"},
    ]
    if metrics_port:
        ports.append({"name": "metrics", "containerPort": metrics_port, "protocol": "TCP"})
    env = _driver_env(pipeline, epoch, image, spark_master)
    env.insert(4, {"name": ENV_DRIVER_METRICS_PORT, "value": str(metrics_port)})
    container: dict[str, Any] = {
        "name": "driver",
        "image": image,
        "command": list(DEFAULT_DRIVER_COMMAND),
        "env": env,
        "ports": ports,
        "resources": _driver_resources(spark.driver.cores, spark.driver.memory),
        "securityContext": restricted_container_context(),
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "volumeMounts": [
            {"name": "tmp", "mountPath": "/tmp"},
            {"name": "spark-local", "mountPath": SPARK_LOCAL_DIR},
        ],
    }
    if spark.image_pull_policy is not None:
        container["imagePullPolicy"] = spark.image_pull_policy
    return container


def _driver_env(pipeline: CdcPipeline, epoch: int, image: str, spark_master: str) -> list[dict[str, Any]]:
    env: list[dict[str, Any]] = [
        {"name": ENV_PIPELINE_NAME, "value": pipeline.metadata.name},
        {"name": ENV_PIPELINE_NAMESPACE, "value": namespace_of(pipeline)},
        {"name": ENV_EPOCH, "value": str(epoch)},
        {"name": ENV_SPARK_MASTER, "value": spark_master},
        # Spark's driver address: executors connect to the pod's IP (no cluster DNS needed).
        {"name": ENV_DRIVER_HOST, "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": ENV_IMAGE, "value": image},
        {"name": ENV_POD_NAME, "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        # The root filesystem is read-only: Spark, Ivy and Python caches go to the emptyDirs.
        {"name": "HOME", "value": "/tmp"},
        {"name": "SPARK_LOCAL_DIRS", "value": SPARK_LOCAL_DIR},
        {"name": "PYTHONDONTWRITEBYTECODE", "value": "1"},
    ]
    for path, ref in pipeline.secret_refs():
        env.append({
            "name": secret_env_name(path),
            "valueFrom": {"secretKeyRef": {"name": ref.name, "key": ref.key}},
        })  # fmt: skip
    return env


def _driver_resources(cores: int, memory: str) -> dict[str, Any]:
    """The JVM heap plus Spark's default overhead (10%, at least 384 MiB) as request and limit."""
    heap = memory_mib(memory)
    total = heap + max(384, heap // 10)
    return {
        "requests": {"cpu": str(cores), "memory": f"{total}Mi"},
        "limits": {"memory": f"{total}Mi"},
    }


def driver_service(pipeline: CdcPipeline, metrics_port: int = DRIVER_METRICS_PORT) -> dict[str, Any]:
    """Headless Service giving the driver a stable DNS name for Spark client mode (and a named
    ``metrics`` port for a ServiceMonitor)."""
    name = pipeline.metadata.name
    ports = [
        {"name": "driver-rpc", "port": DRIVER_PORT, "targetPort": DRIVER_PORT, "protocol": "TCP"},
        {
            "name": "blockmanager",
            "port": BLOCK_MANAGER_PORT,
            "targetPort": BLOCK_MANAGER_PORT,
            "protocol": "TCP",
        },
    ]
    if metrics_port:
        ports.append({"name": "metrics", "port": metrics_port, "targetPort": metrics_port, "protocol": "TCP"})
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": driver_service_name(name),
            "namespace": namespace_of(pipeline),
            "labels": labels(pipeline, "driver"),
            "ownerReferences": [owner_reference(pipeline)],
        },
        "spec": {
            "clusterIP": "None",
            "selector": driver_selector(name),
            # Executors connect while the driver starts, before any readiness would be reported.
            "publishNotReadyAddresses": True,
            "ports": ports,
        },
    }


# -- the driver's own account -------------------------------------------------------------------


def driver_account_name(pipeline: str) -> str:
    """The ServiceAccount, Role and RoleBinding of one pipeline's drivers (a DNS subdomain name)."""
    name = f"{pipeline}-sparkcdc-driver"
    if len(name) <= 253:
        return name
    digest = hashlib.sha256(pipeline.encode()).hexdigest()[:8]
    return f"{pipeline[:227]}-{digest}-sparkcdc-driver"


def namespace_of(pipeline: CdcPipeline) -> str:
    return pipeline.metadata.namespace or "default"
