"""The chart's files without helm: the CRD copy, versions, values against the schema, ci/ value sets.

helm itself (lint, template, schema enforcement, install) runs in tests/e2e/test_chart.py.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from deploy_support import (
    CHART,
    REPO,
    chart_meta,
    load_yaml,
    project_version,
    schema,
    schema_problems,
    values,
)

import sparkcdc

CRD_NAME = "cdcpipelines.sparkcdc.io.yaml"


def test_chart_crd_is_identical_to_the_generated_one() -> None:
    chart_crd = (CHART / "crds" / CRD_NAME).read_bytes()
    # crds/ against the models is tests/unit/api's drift test; this one is the chart's copy of crds/.
    assert chart_crd == (REPO / "crds" / CRD_NAME).read_bytes(), "run hack/sync-chart-crd.sh"
    assert sorted(p.name for p in (CHART / "crds").iterdir()) == [CRD_NAME]


def test_sync_script_check_mode_agrees() -> None:
    res = subprocess.run(["bash", str(REPO / "hack" / "sync-chart-crd.sh"), "--check"], capture_output=True)
    assert res.returncode == 0, res.stderr


def test_chart_versions_follow_the_project() -> None:
    meta = chart_meta()
    assert meta["apiVersion"] == "v2"
    assert meta["name"] == "sparkcdc"
    assert meta["version"] == project_version() == sparkcdc.__version__
    assert meta["appVersion"] == project_version()


def test_values_yaml_satisfies_the_schema() -> None:
    assert schema_problems(values(), schema()) == []


def test_schema_describes_every_top_level_value_and_refuses_unknown_keys() -> None:
    node = schema()
    assert node["additionalProperties"] is False
    assert set(values()) <= set(node["properties"])


@pytest.mark.parametrize("path", sorted((CHART / "ci").glob("*.yaml")), ids=lambda p: p.name)
def test_ci_value_sets_name_only_known_values(path: Path) -> None:
    assert path.name.endswith("-values.yaml")  # helm's chart-testing convention
    data = load_yaml(path) or {}
    assert isinstance(data, dict)
    assert schema_problems(data, schema()) == []


def test_defaults_are_safe() -> None:
    v = values()
    assert v["image"]["repository"] == "ghcr.io/sparkcdc/sparkcdc-operator"
    assert v["image"]["tag"] == ""  # -> appVersion
    assert v["watchNamespaces"] == []
    assert v["securityContext"]["readOnlyRootFilesystem"] is True
    assert v["securityContext"]["allowPrivilegeEscalation"] is False
    assert v["securityContext"]["capabilities"]["drop"] == ["ALL"]
    assert v["podSecurityContext"]["runAsNonRoot"] is True
    assert v["podSecurityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    assert v["metrics"]["port"] != v["health"]["port"]
    assert v["driver"]["serviceAccount"]["name"] == "sparkcdc-driver"
    assert v["resources"]["requests"] and v["resources"]["limits"]["memory"]
    assert not v["serviceMonitor"]["enabled"] and not v["podMonitor"]["enabled"]


def test_every_value_is_documented_in_values_yaml() -> None:
    """Each top-level key of values.yaml is preceded by a comment (helm-docs style)."""
    lines = (CHART / "values.yaml").read_text().splitlines()
    for i, line in enumerate(lines):
        if line and not line.startswith((" ", "#")) and ":" in line:
            previous = lines[i - 1].strip() if i else ""
            assert previous.startswith("#"), f"values.yaml: {line.split(':')[0]} has no comment"


def test_health_check_is_packaged_with_the_chart() -> None:
    ignored = (CHART / ".helmignore").read_text()
    assert "argocd" not in ignored and "ci/" not in ignored
    assert (CHART / "argocd" / "health.lua").is_file()
