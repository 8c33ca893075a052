"""Every call the operator and the driver make to the Kubernetes API (the checkpoint store aside).

Objects travel as plain JSON dicts (``_preload_content=False``): the operator only reads a few
fields, and dicts are what the builders produce and the tests compare.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.config.incluster_config import InClusterConfigLoader

from sparkcdc.api.resource import GROUP, PLURAL, VERSION
from sparkcdc.core.refusal import Refusal

MERGE_PATCH = "application/merge-patch+json"
METADATA_ONLY = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
IN_CLUSTER_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
EVENT_COMPONENT = "sparkcdc-operator"

Obj = dict[str, Any]
_ABSENT = (403, 404)  # see KubeClient: what the operator may not read where it may not create


class ConflictError(RuntimeError):
    """The object changed since it was read (HTTP 409); read it again and redo the decision."""


def refusal_of(err: ApiException) -> Refusal:
    """What the API server said when it refused a call: its Status reason and message (the
    response body), not the exception's text, which carries the response headers too."""
    try:
        body = json.loads(err.body) if err.body else {}
    except (TypeError, ValueError):
        body = {}
    if not isinstance(body, dict):
        body = {}
    reason = str(body.get("reason") or err.reason or "")
    message = str(body.get("message") or err.reason or f"HTTP {err.status}")
    return Refusal(err.status, reason, message)


@dataclass(frozen=True)
class KubeConfig:
    configuration: Any  # kubernetes.client.Configuration
    namespace: str | None  # the pod's namespace in a cluster; None from a kubeconfig


def load_config(env: Mapping[str, str]) -> KubeConfig:
    """Credentials for the API: the pod's service account (its token at the fixed in-cluster path,
    the address from ``KUBERNETES_SERVICE_HOST``/``PORT`` in ``env``, the composition root's
    environment), else the kubeconfig (``$KUBECONFIG``)."""
    cfg = client.Configuration()
    token_dir = Path(IN_CLUSTER_DIR)
    if env.get("KUBERNETES_SERVICE_HOST") and (token_dir / "token").exists():
        loader = InClusterConfigLoader(  # type: ignore[no-untyped-call]
            token_filename=str(token_dir / "token"), cert_filename=str(token_dir / "ca.crt")
        )
        loader.load_and_set(cfg)  # type: ignore[no-untyped-call]
        namespace_file = token_dir / "namespace"
        namespace = namespace_file.read_text().strip() if namespace_file.exists() else None
        return KubeConfig(cfg, namespace)
    config.load_kube_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
    return KubeConfig(cfg, None)


def _json(response: Any) -> Obj:
    data: Obj = json.loads(response.data)
    return data


class KubeClient:
    """Typed-enough wrappers over the generated client; 404 is None, 409 is ConflictError.

    Reads of what the operator makes (its Services, ConfigMaps, the namespace's driver account)
    treat 403 as absent too: watching all namespaces, it may create only in the driver namespaces
    (the chart's RBAC), so elsewhere nothing it made can exist, and a pipeline there is refused
    for the missing driver account instead of failing its reconcile on a read."""

    def __init__(self, api: Any, instance: str = EVENT_COMPONENT) -> None:
        self.api = api
        self.instance = instance  # who posts Events (``reportingInstance``): the pod's name
        # Typed as Any: bodies are plain dicts, which the generated signatures do not admit.
        self.core: Any = client.CoreV1Api(api)
        self.custom: Any = client.CustomObjectsApi(api)
        self.rbac: Any = client.RbacAuthorizationV1Api(api)

    @classmethod
    def from_config(cls, kube: KubeConfig, instance: str = EVENT_COMPONENT) -> KubeClient:
        return cls(client.ApiClient(kube.configuration), instance)

    # -- CdcPipelines ------------------------------------------------------------------------------
    def get_pipeline(self, namespace: str, name: str) -> Obj | None:
        try:
            return _json(self.custom.get_namespaced_custom_object(
                GROUP, VERSION, namespace, PLURAL, name, _preload_content=False
            ))  # fmt: skip
        except ApiException as err:
            if err.status == 404:
                return None
            raise

    def pipeline_generation(self, namespace: str, name: str) -> int | None:
        """``metadata.generation`` of a CdcPipeline, read as metadata only: a cheap poll for spec
        changes however big the checkpoint in its status is (None: gone)."""
        try:
            response = self.custom.get_namespaced_custom_object(
                GROUP, VERSION, namespace, PLURAL, name,
                _preload_content=False, _headers={"Accept": METADATA_ONLY},
            )  # fmt: skip
        except ApiException as err:
            if err.status == 404:
                return None
            raise
        generation = (_json(response).get("metadata") or {}).get("generation")
        return None if generation is None else int(generation)

    def list_pipelines(self, namespace: str | None = None) -> list[Obj]:
        if namespace is None:
            response = self.custom.list_cluster_custom_object(GROUP, VERSION, PLURAL, _preload_content=False)
        else:
            response = self.custom.list_namespaced_custom_object(
                GROUP, VERSION, namespace, PLURAL, _preload_content=False
            )
        items: list[Obj] = _json(response).get("items", [])
        return items

    def patch_pipeline_status(
        self, namespace: str, name: str, status: Obj, resource_version: str | None
    ) -> Obj:
        """JSON merge patch of ``status``; with ``resource_version`` it applies only to that version."""
        body: Obj = {"status": status}
        if resource_version is not None:
            body["metadata"] = {"resourceVersion": resource_version}
        try:
            return _json(self.custom.patch_namespaced_custom_object_status(
                GROUP, VERSION, namespace, PLURAL, name, body,
                _content_type=MERGE_PATCH, _preload_content=False,
            ))  # fmt: skip
        except ApiException as err:
            if err.status == 409:
                raise ConflictError(f"CdcPipeline {namespace}/{name} changed since it was read") from err
            raise

    # -- pods and services -----------------------------------------------------------------------
    def list_pods(self, namespace: str, labels: dict[str, str]) -> list[Obj]:
        """The pods in ``namespace`` carrying every one of ``labels``."""
        selector = ",".join(f"{k}={v}" for k, v in labels.items())
        response = self.core.list_namespaced_pod(namespace, label_selector=selector, _preload_content=False)
        items: list[Obj] = _json(response).get("items", [])
        return items

    def create_pod(self, body: Obj) -> Obj | None:
        """The created pod, or None when one of that name exists already."""
        try:
            return _json(self.core.create_namespaced_pod(
                body["metadata"]["namespace"], body, _preload_content=False
            ))  # fmt: skip
        except ApiException as err:
            if err.status == 409:
                return None
            raise

    def delete_pod(self, namespace: str, name: str, grace_seconds: int | None = None) -> None:
        options: Obj = {"propagationPolicy": "Background"}
        if grace_seconds is not None:
            options["gracePeriodSeconds"] = grace_seconds
        try:
            self.core.delete_namespaced_pod(name, namespace, body=options, _preload_content=False)
        except ApiException as err:
            if err.status != 404:
                raise

    def service_exists(self, namespace: str, name: str) -> bool:
        try:
            self.core.read_namespaced_service(name, namespace, _preload_content=False)
        except ApiException as err:
            if err.status in _ABSENT:
                return False
            raise
        return True

    def create_service(self, body: Obj) -> None:
        try:
            self.core.create_namespaced_service(body["metadata"]["namespace"], body, _preload_content=False)
        except ApiException as err:
            if err.status != 409:
                raise

    # -- the driver's own ServiceAccount, Role and RoleBinding ------------------------------------
    def get_service_account(self, namespace: str, name: str) -> Obj | None:
        """The account, or None when it is missing or the operator may not read it there (403:
        a namespace outside the ones the chart binds its rights in, where drivers may not run)."""
        try:
            return _json(self.core.read_namespaced_service_account(name, namespace, _preload_content=False))
        except ApiException as err:
            if err.status in _ABSENT:
                return None
            raise

    def apply_driver_rbac(self, body: Obj) -> None:
        """Create a ServiceAccount, Role or RoleBinding, or merge ``body`` into the existing one
        (its rules, subjects, labels and annotations become ``body``'s; a token the API server
        added to a ServiceAccount stays)."""
        create, patch = {
            "ServiceAccount": (
                self.core.create_namespaced_service_account,
                self.core.patch_namespaced_service_account,
            ),
            "Role": (self.rbac.create_namespaced_role, self.rbac.patch_namespaced_role),
            "RoleBinding": (
                self.rbac.create_namespaced_role_binding,
                self.rbac.patch_namespaced_role_binding,
            ),
        }[body["kind"]]
        namespace, name = body["metadata"]["namespace"], body["metadata"]["name"]
        try:
            create(namespace, body, _preload_content=False)
        except ApiException as err:
            if err.status != 409:
                raise
            patch(name, namespace, body, _content_type=MERGE_PATCH, _preload_content=False)

    def create_secret(self, body: Obj) -> None:
        """Create a Secret unless one of that name exists (the operator never reads Secrets)."""
        try:
            self.core.create_namespaced_secret(body["metadata"]["namespace"], body, _preload_content=False)
        except ApiException as err:
            if err.status != 409:
                raise

    # -- config maps (retained state) ------------------------------------------------------------
    def get_config_map(self, namespace: str, name: str) -> Obj | None:
        try:
            return _json(self.core.read_namespaced_config_map(name, namespace, _preload_content=False))
        except ApiException as err:
            if err.status in _ABSENT:
                return None
            raise

    def create_config_map(self, body: Obj) -> None:
        """Create, unless one of that name exists already."""
        try:
            self.core.create_namespaced_config_map(
                body["metadata"]["namespace"], body, _preload_content=False
            )
        except ApiException as err:
            if err.status != 409:
                raise

    def put_config_map(self, body: Obj) -> None:
        """Create, or replace when it exists."""
        namespace, name = body["metadata"]["namespace"], body["metadata"]["name"]
        try:
            self.core.create_namespaced_config_map(namespace, body, _preload_content=False)
        except ApiException as err:
            if err.status != 409:
                raise
            self.core.replace_namespaced_config_map(name, namespace, body, _preload_content=False)

    def delete_config_map(self, namespace: str, name: str) -> None:
        try:
            self.core.delete_namespaced_config_map(name, namespace, _preload_content=False)
        except ApiException as err:
            if err.status != 404:
                raise

    # -- events ------------------------------------------------------------------------------------
    def post_event(self, obj: Obj, type_: str, reason: str, message: str, *, now: str) -> None:
        """A core/v1 Event about ``obj`` (shown by ``kubectl describe``)."""
        md = obj["metadata"]
        event = {
            "metadata": {"generateName": f"{md['name']}.", "namespace": md["namespace"]},
            "involvedObject": {
                "apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "name": md["name"],
                "namespace": md["namespace"], "uid": md.get("uid"),
                "resourceVersion": md.get("resourceVersion"),
            },
            "type": type_, "reason": reason, "message": message[:1024],
            "source": {"component": EVENT_COMPONENT}, "reportingComponent": EVENT_COMPONENT,
            "reportingInstance": self.instance,
            "firstTimestamp": now, "lastTimestamp": now, "count": 1,
        }  # fmt: skip
        self.core.create_namespaced_event(md["namespace"], event, _preload_content=False)
