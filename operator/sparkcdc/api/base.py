"""Shared building blocks of the CdcPipeline models: base classes, bounded strings, SpecError, CEL."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator
from pydantic.alias_generators import to_camel
from pydantic.config import JsonDict

# Every string, list and map in the spec is bounded: the apiserver estimates the cost of CEL rules
# from these bounds and refuses a CRD whose rules could be too expensive.
Str64 = Annotated[str, StringConstraints(max_length=64)]
Str253 = Annotated[str, StringConstraints(max_length=253)]
Str1024 = Annotated[str, StringConstraints(max_length=1024)]
Str4096 = Annotated[str, StringConstraints(max_length=4096)]
NonEmpty253 = Annotated[str, StringConstraints(min_length=1, max_length=253)]
NonEmpty256 = Annotated[str, StringConstraints(min_length=1, max_length=256)]
NonEmpty4096 = Annotated[str, StringConstraints(min_length=1, max_length=4096)]

# Kubernetes object names. Pipeline names become pod and service names, so they are DNS-1123 labels.
DNS1123_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DNS1123_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
SECRET_KEY = r"^[-._a-zA-Z0-9]+$"
_DNS1123_LABEL_RX = re.compile(DNS1123_LABEL)
_DNS1123_SUBDOMAIN_RX = re.compile(DNS1123_SUBDOMAIN)
_SECRET_KEY_RX = re.compile(SECRET_KEY)


class SpecError(ValueError):
    """A validation failure, optionally pointing at a field below the object being validated.

    Model validators see the whole object, but the user needs to know which field to change, so
    ``loc`` (camelCase field names, list indexes or map keys) is appended to the error's location.
    """

    def __init__(self, message: str, *, loc: Sequence[str | int] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.loc = tuple(loc)


def cel(rule: str, message: str) -> JsonDict:
    """One ``x-kubernetes-validations`` entry."""
    return {"rule": rule, "message": message}


def cel_or_default(field: str, default: str) -> str:
    """CEL for a field's value, or the model default when the field is absent.

    The CRD carries no defaults (the operator applies the defaults of its own version, so an
    upgrade changes behaviour of untouched fields), hence rules must not assume a field is set.
    """
    return f"(has(self.{field}) ? self.{field} : {default})"


def cel_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


class ApiModel(BaseModel):
    """Base of all spec models: camelCase in YAML, snake_case in Python, unknown fields refused.

    Strict so that the same inputs pass here and at the apiserver (which refuses ``"3306"`` for an
    integer field). Datetime fields opt out of strictness: JSON carries them as strings.
    """

    model_config = ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        frozen=True,
        strict=True,
    )

    def to_k8s(self) -> dict[str, Any]:
        """The object as Kubernetes JSON: camelCase keys, unset optional fields left out."""
        data: dict[str, Any] = self.model_dump(mode="json", by_alias=True, exclude_none=True)
        return data


class StatusModel(ApiModel):
    """Base of status models: permissive, so fields written by other driver versions never break reads."""

    model_config = ConfigDict(extra="ignore", strict=False)


class SecretKeyRef(ApiModel):
    """A key of a Secret in the pipeline's namespace."""

    name: Annotated[str, StringConstraints(min_length=1, max_length=253)] = Field(
        description="Name of the Secret.", json_schema_extra={"pattern": DNS1123_SUBDOMAIN}
    )
    key: Annotated[str, StringConstraints(min_length=1, max_length=253)] = Field(
        description="Key within the Secret.", json_schema_extra={"pattern": SECRET_KEY}
    )

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        check_secret_name(value)
        return value

    @field_validator("key")
    @classmethod
    def _check_key(cls, value: str) -> str:
        check_secret_key(value)
        return value


def check_dns1123_label(value: str, *, what: str, loc: Sequence[str | int] = ()) -> None:
    if len(value) > 63 or not _DNS1123_LABEL_RX.match(value):
        raise SpecError(
            f"{value!r} is not a valid {what}: use at most 63 lowercase letters, digits and '-', "
            "starting and ending with a letter or digit",
            loc=loc,
        )


# The two checks below don't repeat the value: a password pasted in the wrong place lands here.
def check_secret_name(value: str, *, loc: Sequence[str | int] = ()) -> None:
    if not _DNS1123_SUBDOMAIN_RX.match(value):
        raise SpecError(
            "not a valid Secret name: use lowercase letters, digits, '-' and '.', "
            "starting and ending with a letter or digit",
            loc=loc,
        )


def check_secret_key(value: str, *, loc: Sequence[str | int] = ()) -> None:
    if not _SECRET_KEY_RX.match(value):
        raise SpecError("not a valid Secret key: use letters, digits, '-', '_' and '.'", loc=loc)
