"""The chart's Grafana dashboard (charts/sparkcdc/dashboards/sparkcdc.json): valid, laid out, and
querying only series the driver and the operator export.

helm renders it into a ConfigMap in tests/e2e/test_chart_monitoring.py.
"""

from __future__ import annotations

import json
import re
from typing import Any

from deploy_support import CHART

from harness.monitoring import unknown_names

DASHBOARD = CHART / "dashboards" / "sparkcdc.json"
Obj = dict[str, Any]


def dashboard() -> Obj:
    data: Obj = json.loads(DASHBOARD.read_text())
    return data


def panels() -> list[Obj]:
    return [p for p in dashboard()["panels"] if p["type"] != "row"]


def expressions() -> list[str]:
    return [t["expr"] for p in panels() for t in p["targets"]]


def test_the_dashboard_parses_and_has_panels_with_queries() -> None:
    data = dashboard()
    assert data["uid"] and data["title"] and isinstance(data["schemaVersion"], int)
    assert len(panels()) >= 10
    for panel in panels():
        assert panel["title"] and panel["description"], panel
        assert panel["targets"], f"{panel['title']}: no query"
        refs = [t["refId"] for t in panel["targets"]]
        assert len(refs) == len(set(refs)), f"{panel['title']}: refIds repeat"
    ids = [p["id"] for p in data["panels"]]
    assert len(ids) == len(set(ids))


def test_every_query_names_series_the_driver_or_the_operator_export() -> None:
    queries = expressions()
    variables = [v["query"]["query"] for v in dashboard()["templating"]["list"] if v["type"] == "query"]
    assert unknown_names([*queries, *variables]) == {}


def test_the_known_names_come_from_the_registries() -> None:
    # The check above must be able to fail: a name neither registry exports, and a query naming none.
    assert unknown_names(["rate(sparkcdc_driver_no_such_series_total[5m])", "up"]) == {
        "rate(sparkcdc_driver_no_such_series_total[5m])": {"sparkcdc_driver_no_such_series_total"},
        "up": {""},
    }
    assert (
        unknown_names(["sparkcdc_driver_sink_commit_seconds_bucket", "sparkcdc_operator_reconciles_total"])
        == {}
    )


def test_queries_select_the_chosen_pipelines_and_the_chosen_data_source() -> None:
    names = {v["name"] for v in dashboard()["templating"]["list"]}
    assert {"datasource", "namespace", "pipeline"} <= names
    for panel in panels():
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
        for target in panel["targets"]:
            expr = target["expr"]
            # Per-pipeline series follow the namespace and pipeline variables; the operator's own
            # counters (reconciles, restarts in all, pipelines per phase) have no pipeline label.
            per_pipeline = re.search(r"sparkcdc_(driver_|operator_pipeline_|operator_binlog_)", expr)
            if per_pipeline:
                assert 'namespace=~"$namespace"' in expr and 'pipeline=~"$pipeline"' in expr, expr


def test_panels_do_not_overlap() -> None:
    taken: set[tuple[int, int]] = set()
    for panel in dashboard()["panels"]:
        g = panel["gridPos"]
        assert g["x"] >= 0 and g["x"] + g["w"] <= 24, panel["title"]
        cells = {(x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])}
        assert not cells & taken, f"{panel['title']} overlaps another panel"
        taken |= cells
