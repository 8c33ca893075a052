"""The chart's guardrails for pipeline authors, without a cluster: values, schema, and the default
image the admission policy assumes (rendering and the API server: tests/e2e/test_chart_security.py)."""

from __future__ import annotations

import re

import pytest
from deploy_support import CHART, chart_meta, schema, values

from sparkcdc.api.spec import DEFAULT_SPARK_IMAGE

pytestmark = pytest.mark.unit

POLICY = CHART / "templates" / "admission-policy.yaml"


def test_no_image_is_refused_and_the_roles_are_on_by_default() -> None:
    top = values()
    assert top["pipelines"] == {"allowedImages": [], "admissionPolicy": True}
    assert top["rbac"]["aggregatedRoles"] is True


def test_the_policy_assumes_the_default_image_the_operator_runs() -> None:
    """A pipeline without spec.spark.image runs DEFAULT_SPARK_IMAGE: the policy must check that one."""
    (template,) = re.findall(r'printf "([^"]+)" \.Chart\.AppVersion', POLICY.read_text())
    assert template % chart_meta()["appVersion"] == DEFAULT_SPARK_IMAGE


@pytest.mark.parametrize(
    ("entry", "ok"),
    [
        ("ghcr.io/sparkcdc/", True),
        ("registry.local:5000/spark@", True),
        ("has space/", False),
        ("quote'd/", False),
        ('dou"ble/', False),
        ("back\\slash/", False),
        ("", False),
    ],
)
def test_entries_the_policy_could_not_quote_are_refused_by_the_schema(entry: str, ok: bool) -> None:
    """The list is rendered into a CEL list literal: no quotes, backslashes or spaces in entries."""
    items = schema()["properties"]["pipelines"]["properties"]["allowedImages"]["items"]
    valid = len(entry) >= items["minLength"] and re.match(items["pattern"], entry) is not None
    assert valid is ok
