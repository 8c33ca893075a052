"""Pure builders of a pipeline's own driver ServiceAccount, Role and RoleBinding.

Each pipeline's drivers get an account of their own whose Role names that pipeline's
CdcPipeline and nothing else of the operator's (least privilege, docs/install.md "Security
model"); the objects are owned by the CdcPipeline, so deleting it removes them. No I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sparkcdc.api.resource import CdcPipeline
from sparkcdc.controller.builders import driver_account_name, labels, namespace_of, owner_reference

__all__ = ["driver_role", "driver_role_binding", "driver_service_account"]


def driver_service_account(pipeline: CdcPipeline, template: Mapping[str, Any] | None) -> dict[str, Any]:
    """The pipeline's driver ServiceAccount. ``template`` (the namespace's shared driver account,
    from the chart) lends its annotations (e.g. a cloud workload identity) and image pull secrets."""
    template = template or {}
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": _owned_metadata(pipeline),
        "automountServiceAccountToken": False,  # the driver pod asks for its token itself
    }
    annotations = (template.get("metadata") or {}).get("annotations") or {}
    kept = {k: v for k, v in annotations.items() if not k.startswith("kubernetes.io/")}
    if kept:
        body["metadata"]["annotations"] = kept
    if template.get("imagePullSecrets"):
        body["imagePullSecrets"] = list(template["imagePullSecrets"])
    return body


def driver_role(pipeline: CdcPipeline, spark_master: str) -> dict[str, Any]:
    """What the pipeline's driver may do: its own CdcPipeline and status (by name), and the objects
    it creates, whose names are made up as it goes (checkpoint spill ConfigMaps, Spark's executor
    pods, Services, ConfigMaps and volume claims) and so cannot be listed by name."""
    own = [pipeline.metadata.name]
    rules: list[dict[str, Any]] = [
        {"apiGroups": ["sparkcdc.io"], "resources": ["cdcpipelines"], "resourceNames": own, "verbs": ["get"]},
        {
            "apiGroups": ["sparkcdc.io"],
            "resources": ["cdcpipelines/status"],
            "resourceNames": own,
            "verbs": ["get", "patch"],
        },
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
    ]
    if spark_master.startswith("k8s://"):
        watch = ["create", "delete", "deletecollection", "get", "list", "watch"]
        rules += [
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": watch},
            {"apiGroups": [""], "resources": ["pods"], "verbs": [*watch, "patch"]},
            {"apiGroups": [""], "resources": ["services", "persistentvolumeclaims"], "verbs": watch},
        ]
    else:  # the checkpoint spill only
        rules.append({"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create", "delete", "get"]})
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": _owned_metadata(pipeline),
        "rules": rules,
    }


def driver_role_binding(pipeline: CdcPipeline) -> dict[str, Any]:
    name = driver_account_name(pipeline.metadata.name)
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": _owned_metadata(pipeline),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace_of(pipeline)}],
    }


def _owned_metadata(pipeline: CdcPipeline) -> dict[str, Any]:
    return {
        "name": driver_account_name(pipeline.metadata.name),
        "namespace": namespace_of(pipeline),
        "labels": labels(pipeline, "driver"),
        "ownerReferences": [owner_reference(pipeline)],
    }
