"""``sparkcdc validate`` and ``sparkcdc crd`` end to end through the CLI's main()."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from sparkcdc.api.crd import render_crd_yaml
from sparkcdc.cli import main

pytestmark = pytest.mark.unit

MANIFESTS = Path(__file__).parent / "manifests"


def test_validate_reference_manifest(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(MANIFESTS / "reference.yaml")
    assert main(["validate", path]) == 0
    out, err = capsys.readouterr()
    assert out == f"{path}#2: CdcPipeline shop-replica is valid\n"
    assert err == ""


def test_validate_reports_every_problem_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    bad = str(MANIFESTS / "bad" / "negative_chunk_size.yaml")
    two = str(MANIFESTS / "bad" / "two_sinks.yaml")
    assert main(["validate", bad, two]) == 2  # bad input: the same code as run and verify
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        f"{bad}#2 (CdcPipeline shop-replica): spec.snapshot.chunkSize: must be greater than 0, got -5\n"
        f"{two}#2 (CdcPipeline shop-replica): spec.sink: duplicate key 'sink' at line 21 (first at line 19); "
        "each key may appear once\n"
    )


def test_crd_prints_the_generated_crd(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["crd"]) == 0
    out, _ = capsys.readouterr()
    assert out == render_crd_yaml()
    crd = yaml.safe_load(out)
    assert crd["metadata"]["name"] == "cdcpipelines.sparkcdc.io"
