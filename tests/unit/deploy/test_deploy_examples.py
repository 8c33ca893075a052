"""examples/: every pipeline passes `sparkcdc validate`; the Argo CD example points at real paths."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from deploy_support import CHART, EXAMPLES, REPO, schema, schema_problems

from sparkcdc.api.manifest import load_manifests
from sparkcdc.cli import main

PIPELINE_FILES = sorted(EXAMPLES.glob("*.yaml"))


@pytest.mark.parametrize("path", PIPELINE_FILES, ids=lambda p: p.name)
def test_example_passes_sparkcdc_validate(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(path)]) == 0, capsys.readouterr().err
    assert "is valid" in capsys.readouterr().out


def test_all_examples_validate_together() -> None:
    """Applied to one namespace together they do not clash (same Secret names hold the same data)."""
    manifest = load_manifests([str(p) for p in PIPELINE_FILES])
    assert len(manifest.pipelines) == len(PIPELINE_FILES)


def test_examples_cover_minimal_postgresql_and_delta() -> None:
    sinks = {}
    for path in PIPELINE_FILES:
        for loaded in load_manifests([str(path)]).pipelines:
            sink = loaded.pipeline.spec.sink
            sinks[path.name] = (sink.type, getattr(sink, "url", ""))
    assert sinks["minimal.yaml"][0] == "console"
    assert sinks["mysql-to-postgresql.yaml"][0] == "jdbc"
    assert sinks["mysql-to-postgresql.yaml"][1].startswith("postgresql://")
    assert sinks["mysql-to-delta.yaml"][0] == "delta"


def argo_documents() -> list[Any]:
    return [d for d in yaml.safe_load_all((EXAMPLES / "argocd" / "sparkcdc.yaml").read_text()) if d]


def test_argocd_example_points_at_the_chart_and_the_examples() -> None:
    docs = argo_documents()
    apps = [d for d in docs if d["kind"] == "Application"]
    assert len(apps) == 2
    operator, pipelines = apps
    source = operator["spec"]["source"]
    assert (REPO / source["path"]) == CHART
    assert schema_problems(source["helm"]["valuesObject"], schema()) == []
    watched = source["helm"]["valuesObject"]["watchNamespaces"]
    namespaces = [d["metadata"]["name"] for d in docs if d["kind"] == "Namespace"]
    assert watched == namespaces == [pipelines["spec"]["destination"]["namespace"]]
    target = pipelines["spec"]["source"]
    assert (REPO / target["path"]) == EXAMPLES
    assert (EXAMPLES / target["directory"]["include"]).is_file()
