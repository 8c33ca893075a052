"""The CdcPipeline CustomResourceDefinition, generated from the pydantic models."""

from __future__ import annotations

from typing import Any

import yaml

from sparkcdc.api.base import DNS1123_LABEL
from sparkcdc.api.resource import (
    GROUP,
    KIND,
    MAX_NAME_LENGTH,
    PLURAL,
    SHORT_NAMES,
    SINGULAR,
    VERSION,
    CdcPipeline,
)
from sparkcdc.api.schema import Schema, to_structural
from sparkcdc.api.spec import CdcPipelineSpec
from sparkcdc.api.status import CdcPipelineStatus

CRD_FILE = "crds/cdcpipelines.sparkcdc.io.yaml"
_HEADER = (
    "# Generated from the pydantic models in operator/sparkcdc/api by `sparkcdc crd` (make crd).\n"
    "# Do not edit: a unit test fails when this file differs from the models.\n"
)

PRINTER_COLUMNS: list[dict[str, str | int]] = [
    {
        "name": "Ready",
        "type": "string",
        "description": "The Ready condition (kstatus): True while the pipeline runs and keeps up",
        "jsonPath": '.status.conditions[?(@.type=="Ready")].status',
    },
    {
        "name": "Reason",
        "type": "string",
        "description": "Why Ready is what it is (CamelCase): Streaming, DriverStarting, NoProgress, ...",
        "jsonPath": '.status.conditions[?(@.type=="Ready")].reason',
    },
    {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
    {"name": "Tables", "type": "integer", "jsonPath": ".status.progress.tables"},
    {
        "name": "Splits",
        "type": "string",
        "description": "Snapshot splits finished/total",
        "jsonPath": ".status.progress.splitsDisplay",
    },
    {
        "name": "Lag",
        "type": "number",
        "description": "Seconds behind the source",
        "jsonPath": ".status.progress.lagSeconds",
    },
    {"name": "Restarts", "type": "integer", "jsonPath": ".status.driver.restarts"},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    # The Verified condition's reason says more than its status (Differs, Unsettled and Failed
    # are all False). Most pipelines are never verified, so the column is in -o wide only.
    {
        "name": "Verified",
        "type": "string",
        "description": "Last verification: Matched, Repaired, Differs, Unsettled, Failed, Running, ...",
        "jsonPath": '.status.conditions[?(@.type=="Verified")].reason',
        "priority": 1,
    },
]


def spec_schema() -> Schema:
    return to_structural(CdcPipelineSpec.model_json_schema(by_alias=True))


def status_schema() -> Schema:
    return to_structural(CdcPipelineStatus.model_json_schema(by_alias=True))


def open_api_schema() -> Schema:
    """The version's ``openAPIV3Schema``."""
    return {
        "description": CdcPipeline.__doc__,
        "type": "object",
        "properties": {
            "apiVersion": {
                "description": "APIVersion of the object: sparkcdc.io/v1alpha1.",
                "type": "string",
            },
            "kind": {"description": f"Kind of the object: {KIND}.", "type": "string"},
            # Kubernetes validates metadata itself; a CRD may only restrict the name. Pipeline names
            # become pod and service names, hence a DNS-1123 label.
            "metadata": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "maxLength": MAX_NAME_LENGTH, "pattern": DNS1123_LABEL}
                },
            },
            "spec": spec_schema(),
            "status": status_schema(),
        },
        "required": ["spec"],
    }


def crd_document() -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{PLURAL}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "names": {
                "kind": KIND,
                "listKind": f"{KIND}List",
                "plural": PLURAL,
                "singular": SINGULAR,
                "shortNames": list(SHORT_NAMES),
                # `kubectl get sparkcdc` lists the pipelines of a namespace with this category.
                "categories": ["sparkcdc"],
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": PRINTER_COLUMNS,
                    "schema": {"openAPIV3Schema": open_api_schema()},
                }
            ],
        },
    }


def render_crd_yaml() -> str:
    body = yaml.safe_dump(crd_document(), sort_keys=False, width=100, allow_unicode=True)
    return _HEADER + body
