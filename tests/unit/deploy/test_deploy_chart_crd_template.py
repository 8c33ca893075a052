"""The chart's templated CRD (crds.templated) and its leader-election defaults, without helm.

templates/crd.yaml renders the file in crds/ itself (``.Files.Get``), so the two copies cannot
drift as long as it names that file: these tests fail when the file is renamed, a second CRD
appears, or the template stops reading it. What helm renders from it (the same CRD plus
``helm.sh/resource-policy: keep``) and a real ``helm upgrade`` of it: tests/e2e/test_chart_ha.py.
"""

from __future__ import annotations

import re

from deploy_support import CHART, values

from sparkcdc.controller.leader import LeaseTiming

TEMPLATE = CHART / "templates" / "crd.yaml"


def test_the_crd_template_reads_the_one_crd_of_crds() -> None:
    (crd,) = (CHART / "crds").iterdir()
    text = TEMPLATE.read_text()
    assert re.findall(r'\.Files\.Get "([^"]+)"', text) == [f"crds/{crd.name}"]
    assert "{{- if .Values.crds.templated }}" in text
    assert '"helm.sh/resource-policy" "keep"' in text
    assert values()["crds"] == {"templated": False}  # opt-in: by default Helm installs crds/ once


def test_chart_defaults_run_two_replicas_on_a_safe_lease() -> None:
    v = values()
    election = v["leaderElection"]
    assert v["replicaCount"] == 2 and election["enabled"] is True
    timing = LeaseTiming(
        float(election["leaseDurationSeconds"]),
        float(election["renewDeadlineSeconds"]),
        float(election["retryPeriodSeconds"]),
    )
    assert timing.problems() == []
    assert timing == LeaseTiming()  # the chart's defaults are the operator's (client-go's)
