"""The driver Pod and Service builders: pure dicts, secrets only by reference."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness.reconcile_fixtures import pipeline, pipeline_obj
from sparkcdc.api import CdcPipeline
from sparkcdc.controller.builders import (
    driver_pod,
    driver_service,
    secret_env_name,
    spec_hash,
)
from sparkcdc.core.reconcile_status import driver_service_name

SECRET_VALUE = "hunter2-do-not-leak"


def build(p: CdcPipeline | None = None, **kwargs: Any) -> dict[str, Any]:
    args: dict[str, Any] = {"image": "img:1", "spark_master": "local[2]", "spec_hash": "abc"}
    args["service_account"] = "sparkcdc-driver"
    args.update(kwargs)
    return driver_pod(p or pipeline(), 7, **args)


def container(pod: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = pod["spec"]["containers"][0]
    return result


def env(pod: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container(pod)["env"]}


def test_metadata_labels_annotations_and_owner() -> None:
    pod = build()
    md = pod["metadata"]
    assert (md["name"], md["namespace"]) == ("shop-driver-7", "ns")
    assert md["labels"]["app.kubernetes.io/name"] == "sparkcdc"
    assert md["labels"]["app.kubernetes.io/component"] == "driver"
    assert md["labels"]["sparkcdc.io/pipeline"] == "shop"
    assert md["annotations"] == {"sparkcdc.io/epoch": "7", "sparkcdc.io/spec-hash": "abc"}
    assert md["ownerReferences"] == [{
        "apiVersion": "sparkcdc.io/v1alpha1", "kind": "CdcPipeline", "name": "shop", "uid": "uid-1",
        "controller": True, "blockOwnerDeletion": True,
    }]  # fmt: skip
    assert pod["spec"]["restartPolicy"] == "Never"
    assert pod["spec"]["serviceAccountName"] == "sparkcdc-driver"


def test_nonces_are_recorded_on_the_pod() -> None:
    pod = build(pipeline(restartNonce="r1", resnapshotNonce="s1"))
    assert pod["metadata"]["annotations"]["sparkcdc.io/restart-nonce"] == "r1"
    assert pod["metadata"]["annotations"]["sparkcdc.io/resnapshot-nonce"] == "s1"


def test_restricted_security_context() -> None:
    pod = build()
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
    assert pod["spec"]["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    sc = container(pod)["securityContext"]
    assert sc["runAsNonRoot"] is True and sc["runAsUser"] == 185
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"] == {"drop": ["ALL"]}
    assert sc["seccompProfile"] == {"type": "RuntimeDefault"}
    mounts = {m["mountPath"] for m in container(pod)["volumeMounts"]}
    assert {"/tmp", "/var/lib/sparkcdc/spark-local"} <= mounts
    assert all("emptyDir" in v for v in pod["spec"]["volumes"])
    assert container(pod)["terminationMessagePolicy"] == "FallbackToLogsOnError"


def test_environment() -> None:
    variables = env(build())
    assert variables["SPARKCDC_PIPELINE_NAME"] == "shop"
    assert variables["SPARKCDC_PIPELINE_NAMESPACE"] == "ns"
    assert variables["SPARKCDC_EPOCH"] == "7"
    assert variables["SPARKCDC_SPARK_MASTER"] == "local[2]"
    assert variables["SPARK_DRIVER_HOST"] == {"fieldRef": {"fieldPath": "status.podIP"}}


def test_secrets_only_by_reference() -> None:
    variables = env(build())
    assert variables["SPARKCDC_SECRET_SPEC_SOURCE_PASSWORDSECRETREF"] == {
        "secretKeyRef": {"name": "mysql-cdc", "key": "password"}
    }
    assert variables["SPARKCDC_SECRET_SPEC_SINK_PASSWORDSECRETREF"] == {
        "secretKeyRef": {"name": "sink-secret", "key": "pw"}
    }
    refs = pipeline().secret_refs()
    assert {secret_env_name(path) for path, _ in refs} <= set(variables)


def test_no_literal_secret_anywhere() -> None:
    """The builders never see a secret value; nothing that looks like one may appear in the pod."""
    obj = pipeline_obj()
    text = json.dumps(build(CdcPipeline.from_k8s(obj))) + json.dumps(driver_service(pipeline()))
    assert SECRET_VALUE not in text
    for entry in container(build())["env"]:
        if entry["name"].startswith("SPARKCDC_SECRET_"):
            assert "value" not in entry and set(entry["valueFrom"]) == {"secretKeyRef"}


def test_resources_follow_spec_spark_driver() -> None:
    pod = build(pipeline(spark={"driver": {"cores": 2, "memory": "2g"}}))
    assert container(pod)["resources"] == {
        "requests": {"cpu": "2", "memory": "2432Mi"}, "limits": {"memory": "2432Mi"}
    }  # fmt: skip


def test_the_driver_command_and_the_scheduler_override() -> None:
    pod = build(scheduler_name="test-scheduler")
    assert pod["spec"]["schedulerName"] == "test-scheduler"
    assert "schedulerName" not in build()["spec"]
    # The image's `sparkcdc driver`: no override, tests swap the image instead.
    assert container(pod)["command"] == ["sparkcdc", "driver"]
    assert "terminationMessagePath" not in container(pod)  # the default the driver writes


def test_headless_service() -> None:
    svc = driver_service(pipeline())
    assert svc["metadata"]["name"] == "shop-driver"
    assert svc["spec"]["clusterIP"] == "None"
    assert svc["spec"]["selector"] == {
        "app.kubernetes.io/name": "sparkcdc",
        "app.kubernetes.io/component": "driver",
        "sparkcdc.io/pipeline": "shop",
    }
    assert svc["metadata"]["ownerReferences"][0]["uid"] == "uid-1"
    pod_labels = build()["metadata"]["labels"]
    assert all(pod_labels[k] == v for k, v in svc["spec"]["selector"].items())


def test_driver_metrics_port_on_pod_and_service() -> None:
    pod = build(metrics_port=9100)
    assert env(pod)["SPARKCDC_DRIVER_METRICS_PORT"] == "9100"
    assert {"name": "metrics", "containerPort": 9100, "protocol": "TCP"} in container(pod)["ports"]
    ports = {p["name"]: p["port"] for p in driver_service(pipeline(), 9100)["spec"]["ports"]}
    assert ports["metrics"] == 9100
    off = build(metrics_port=0)
    assert env(off)["SPARKCDC_DRIVER_METRICS_PORT"] == "0"
    assert "metrics" not in {p["name"] for p in container(off)["ports"]}
    assert "metrics" not in {p["name"] for p in driver_service(pipeline(), 0)["spec"]["ports"]}


@pytest.mark.parametrize("name", ["a" * 63, "1abc", "x"])
def test_service_names_are_dns_1035_labels(name: str) -> None:
    svc = driver_service_name(name)
    assert len(svc) <= 63 and svc[0].isalpha() and svc[-1].isalnum()
    assert driver_service_name(name) == svc


@pytest.mark.parametrize(
    ("path", "env_name"),
    [
        ("spec.source.passwordSecretRef", "SPARKCDC_SECRET_SPEC_SOURCE_PASSWORDSECRETREF"),
        ("spec.source.tls.caSecretRef", "SPARKCDC_SECRET_SPEC_SOURCE_TLS_CASECRETREF"),
        ("spec.sink.options[a.b]", "SPARKCDC_SECRET_SPEC_SINK_OPTIONS_A_B"),
    ],
)
def test_secret_env_names(path: str, env_name: str) -> None:
    assert secret_env_name(path) == env_name


def test_spec_hash_ignores_operator_only_fields() -> None:
    base = spec_hash(pipeline().spec)
    for change in ({"suspend": True}, {"restartNonce": "x"}, {"restartPolicy": {"maxRestarts": 3}},
                   {"statePolicy": "Retain"}, {"resnapshotNonce": "n"}):  # fmt: skip
        assert spec_hash(pipeline(**change).spec) == base, change
    assert spec_hash(pipeline(snapshot={"chunkSize": 10}).spec) != base


def test_a_streaming_driver_is_not_rolled_for_its_table_selection() -> None:
    """It follows source.tables and excludeTables itself (driver/spec_watch.py); a snapshot-only
    driver does not stream, so an edit of them replaces it."""
    tables = {"tables": ["shop.orders", "shop.order_items", "shop.customers"]}
    exclude = {"excludeTables": ["shop.order_items"]}
    base = spec_hash(pipeline().spec)
    assert spec_hash(pipeline(source=tables).spec) == base
    assert spec_hash(pipeline(source=exclude).spec) == base
    assert spec_hash(pipeline(source={"port": 3307}).spec) != base
    only = {"startup": {"mode": "snapshot-only"}}
    snapshot_only = spec_hash(pipeline(**only).spec)
    assert spec_hash(pipeline(source=tables, **only).spec) != snapshot_only
    assert spec_hash(pipeline(source=exclude, **only).spec) != snapshot_only
