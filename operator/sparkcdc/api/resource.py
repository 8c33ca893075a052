"""The ``CdcPipeline`` resource: metadata, spec and status."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from sparkcdc.api.base import ApiModel, SecretKeyRef, check_dns1123_label
from sparkcdc.api.spec import CdcPipelineSpec
from sparkcdc.api.status import CdcPipelineStatus

GROUP = "sparkcdc.io"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "CdcPipeline"
PLURAL = "cdcpipelines"
SINGULAR = "cdcpipeline"
SHORT_NAMES = ("cdcp",)
CRD_NAME = f"{PLURAL}.{GROUP}"
MAX_NAME_LENGTH = 63


class ObjectMeta(ApiModel):
    """The Kubernetes metadata the operator reads; other metadata keys are accepted and ignored."""

    model_config = ConfigDict(extra="ignore", strict=False)

    name: str = Field(description="DNS-1123 label of at most 63 characters (it names the driver pod).")
    namespace: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    uid: str | None = None
    generation: int | None = None
    resource_version: str | None = None

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        check_dns1123_label(value, what="name")
        return value

    @field_validator("namespace")
    @classmethod
    def _check_namespace(cls, value: str | None) -> str | None:
        if value is not None:
            check_dns1123_label(value, what="namespace")
        return value


class CdcPipeline(ApiModel):
    """A MySQL change-data-capture pipeline run on Spark."""

    api_version: Literal["sparkcdc.io/v1alpha1"] = Field(
        default="sparkcdc.io/v1alpha1", description="sparkcdc.io/v1alpha1"
    )
    kind: Literal["CdcPipeline"] = Field(default="CdcPipeline", description="CdcPipeline")
    metadata: ObjectMeta
    spec: CdcPipelineSpec
    status: CdcPipelineStatus | None = None

    @classmethod
    def from_k8s(cls, obj: Mapping[str, Any]) -> CdcPipeline:
        """Validate a resource as read from the apiserver or a manifest (camelCase keys only)."""
        return cls.model_validate(obj, by_alias=True, by_name=False)

    def secret_refs(self) -> list[tuple[str, SecretKeyRef]]:
        """Every Secret key the spec refers to, with its camelCase path (``spec.source.passwordSecretRef``).

        The pods that need credentials mount exactly these.
        """
        return list(_walk_refs(self.spec, "spec"))


def _walk_refs(value: object, path: str) -> Iterator[tuple[str, SecretKeyRef]]:
    if isinstance(value, SecretKeyRef):
        yield path, value
    elif isinstance(value, BaseModel):
        for name, field in type(value).model_fields.items():
            yield from _walk_refs(getattr(value, name), f"{path}.{field.alias or name}")
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            yield from _walk_refs(item, f"{path}[{index}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _walk_refs(item, f"{path}[{key}]")
