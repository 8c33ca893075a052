"""The chart's alert rules and dashboard as helm renders them, the rules checked and unit-tested by promtool.

* ``prometheusRule.enabled`` renders a PrometheusRule whose rule groups ``promtool check rules``
  accepts and whose expressions name only series the operator exports (harness/monitoring.py);
* ``promtool test rules`` plays scraped operator series (with the labels a ServiceMonitor scrape
  adds: job, instance, pod) through the rules: each alert fires when it should, with the labels and
  annotations an on-call reader gets, and stays quiet when it should not;
* ``grafanaDashboard.enabled`` renders a ConfigMap holding dashboards/sparkcdc.json unchanged, with
  the sidecar's label.

promtool is built from Go modules by hack/promtool.sh (cached outside the work tree), helm by
hack/k8s-bin.sh; no control plane is needed.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.monitoring import unknown_names
from sparkcdc.testing.kube import REPO_ROOT, ensure_binaries

CHART = REPO_ROOT / "charts" / "sparkcdc"
RELEASE_NS = "sparkcdc-system"
Obj = dict[str, Any]
# How the operator's pod looks to Prometheus once scraped through the chart's ServiceMonitor.
TARGET = 'job="sparkcdc", instance="10.0.0.5:8080", pod="rel-sparkcdc-7d9f-x2x"'


@pytest.fixture(scope="module")
def promtool() -> Path:
    override = os.environ.get("SPARKCDC_PROMTOOL")
    if override:
        return Path(override)
    out = subprocess.run(
        ["bash", str(REPO_ROOT / "hack" / "promtool.sh")], stdout=subprocess.PIPE, text=True, check=True
    )
    return Path(out.stdout.strip().splitlines()[-1])


def render(*values: str) -> list[Obj]:
    helm = ensure_binaries() / "helm"
    args = [str(helm), "template", "rel", str(CHART), "--namespace", RELEASE_NS]
    for value in values:
        args += ["--set", value]
    out = subprocess.run(args, capture_output=True, text=True, check=True, timeout=120).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def only(docs: list[Obj], kind: str) -> Obj:
    found = [d for d in docs if d["kind"] == kind]
    assert len(found) == 1, [d["kind"] for d in docs]
    return found[0]


@pytest.fixture(scope="module")
def rules_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rule = only(
        render("prometheusRule.enabled=true", "prometheusRule.alertLabels.team=data"), "PrometheusRule"
    )
    path = tmp_path_factory.mktemp("rules") / "rules.yaml"
    path.write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}, sort_keys=False))
    return path


def rules(path: Path) -> dict[str, Obj]:
    groups = yaml.safe_load(path.read_text())["groups"]
    return {r["alert"]: r for g in groups for r in g["rules"]}


def promtool_run(promtool: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(promtool), *args], capture_output=True, text=True, cwd=cwd, timeout=120)


def test_defaults_render_neither_rules_nor_dashboard() -> None:
    kinds = {d["kind"] for d in render()}
    assert "PrometheusRule" not in kinds
    assert not [d for d in render() if d["kind"] == "ConfigMap" and "dashboard" in d["metadata"]["name"]]


def test_the_rules_pass_promtool_check(promtool: Path, rules_file: Path) -> None:
    res = promtool_run(promtool, "check", "rules", rules_file.name, cwd=rules_file.parent)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "SUCCESS: 7 rules found" in res.stdout


def test_the_rules_query_only_series_the_operator_exports(rules_file: Path) -> None:
    by_alert = rules(rules_file)
    assert set(by_alert) == {
        "SparkcdcPipelineLagHigh", "SparkcdcPipelineStalled", "SparkcdcPipelineCrashLooping",
        "SparkcdcBinlogExpirySoon", "SparkcdcPipelineNotReady", "SparkcdcOperatorDown",
        "SparkcdcReconcileErrors",
    }  # fmt: skip
    down = by_alert.pop("SparkcdcOperatorDown")["expr"]
    assert down == f'absent(up{{job="sparkcdc", namespace="{RELEASE_NS}"}} == 1)'
    assert unknown_names(r["expr"] for r in by_alert.values()) == {}


def test_a_disabled_alert_is_left_out() -> None:
    rule = only(
        render("prometheusRule.enabled=true", "prometheusRule.notReady.enabled=false"), "PrometheusRule"
    )
    names = {r["alert"] for g in rule["spec"]["groups"] for r in g["rules"]}
    assert "SparkcdcPipelineNotReady" not in names and "SparkcdcPipelineStalled" in names


def series(name: str, labels: str, values: str) -> Obj:
    return {"series": f"{name}{{{labels}, {TARGET}}}", "values": values}


def quiet(alertname: str, at: str) -> Obj:
    return {"eval_time": at, "alertname": alertname, "exp_alerts": []}


def test_each_alert_fires_when_it_should_and_only_then(promtool: Path, rules_file: Path) -> None:
    descriptions = {name: r["annotations"]["description"] for name, r in rules(rules_file).items()}

    def fires(alertname: str, at: str, severity: str, summary: str, **labels: str) -> Obj:
        """One alert of ``alertname`` firing at ``at``, as an on-call reader gets it."""
        expected = {
            "exp_labels": {"severity": severity, "team": "data", **labels},
            "exp_annotations": {"summary": summary, "description": descriptions[alertname]},
        }
        return {"eval_time": at, "alertname": alertname, "exp_alerts": [expected]}

    orders, stock = 'namespace="shop", pipeline="orders"', 'namespace="shop", pipeline="stock"'
    paused = 'namespace="shop", pipeline="paused"'
    shop = {"namespace": "shop"}
    tests = [
        {  # 400 s behind for 20 minutes fires after the 10 minutes of "for"; 100 s never does.
            "interval": "1m",
            "input_series": [
                series("sparkcdc_operator_pipeline_lag_seconds", orders, "400x20"),
                series("sparkcdc_operator_pipeline_lag_seconds", stock, "100x20"),
            ],
            "alert_rule_test": [
                quiet("SparkcdcPipelineLagHigh", "9m"),
                fires(
                    "SparkcdcPipelineLagHigh",
                    "12m",
                    "warning",
                    "CdcPipeline shop/orders is 6m 40s behind its source",
                    pipeline="orders",
                    **shop,
                ),
            ],
        },
        {  # Stalled, and Not Ready for other reasons; a suspended pipeline and a stalled one do not
            # count as not ready (one alert per situation).
            "interval": "1m",
            "input_series": [
                series("sparkcdc_operator_pipeline_stalled", orders, "0x5 1x20"),
                series("sparkcdc_operator_pipeline_ready", orders, "1x5 0x20"),
                series("sparkcdc_operator_pipeline_stalled", stock, "0x25"),
                series("sparkcdc_operator_pipeline_ready", stock, "0x25"),
                series("sparkcdc_operator_pipeline_phase", f'{stock}, phase="Pending"', "1x25"),
                series("sparkcdc_operator_pipeline_stalled", paused, "0x25"),
                series("sparkcdc_operator_pipeline_ready", paused, "0x25"),
                series("sparkcdc_operator_pipeline_phase", f'{paused}, phase="Suspended"', "1x25"),
            ],
            "alert_rule_test": [
                quiet("SparkcdcPipelineStalled", "9m"),
                fires(
                    "SparkcdcPipelineStalled",
                    "12m",
                    "critical",
                    "CdcPipeline shop/orders is Stalled",
                    pipeline="orders",
                    **shop,
                ),
                fires(
                    "SparkcdcPipelineNotReady",
                    "20m",
                    "warning",
                    "CdcPipeline shop/stock has not been Ready for 15m",
                    pipeline="stock",
                    **shop,
                ),
            ],
        },
        {  # Three restarts within half an hour crash-loop; one restart an hour does not.
            "interval": "1m",
            "input_series": [
                series("sparkcdc_operator_pipeline_restarts", orders, "0x20 1x5 2x5 3x30"),
                series("sparkcdc_operator_pipeline_restarts", stock, "0x59 1x60 2x10"),
            ],
            "alert_rule_test": [
                quiet("SparkcdcPipelineCrashLooping", "25m"),
                fires(
                    "SparkcdcPipelineCrashLooping",
                    "35m",
                    "warning",
                    "CdcPipeline shop/orders restarted its driver 3 times or more in 30m",
                    pipeline="orders",
                    **shop,
                ),
                quiet("SparkcdcPipelineCrashLooping", "125m"),
            ],
        },
        {  # The lead's binlog expiry margin: under six hours for five minutes fires; a day does not.
            "interval": "1m",
            "input_series": [
                series("sparkcdc_operator_binlog_expiry_margin_seconds", orders, "30000x3 20000x10"),
                series("sparkcdc_operator_binlog_expiry_margin_seconds", stock, "86400x13"),
            ],
            "alert_rule_test": [
                quiet("SparkcdcBinlogExpirySoon", "6m"),
                fires(
                    "SparkcdcBinlogExpirySoon",
                    "10m",
                    "critical",
                    "The binlog CdcPipeline shop/orders resumes from is purged in 5h 33m 20s",
                    pipeline="orders",
                    **shop,
                ),
            ],
        },
        {  # The operator's scrape: down for five minutes, and reconciles failing all along.
            "interval": "1m",
            "input_series": [
                {"series": f'up{{{TARGET}, namespace="{RELEASE_NS}"}}', "values": "1x10 0x10"},
                series("sparkcdc_operator_reconcile_errors_total", f'namespace="{RELEASE_NS}"', "0+1x40"),
            ],
            "alert_rule_test": [
                quiet("SparkcdcOperatorDown", "10m"),
                fires(
                    "SparkcdcOperatorDown",
                    "17m",
                    "critical",
                    "The sparkcdc operator is not scraped as up",
                    namespace=RELEASE_NS,
                ),
                quiet("SparkcdcReconcileErrors", "10m"),
                fires(
                    "SparkcdcReconcileErrors",
                    "35m",
                    "warning",
                    "The sparkcdc operator failed more than 5 reconciles in 15m",
                ),
            ],
        },
    ]
    tests_file = rules_file.parent / "rules_test.yaml"
    tests_file.write_text(
        yaml.safe_dump({"rule_files": [rules_file.name], "evaluation_interval": "1m", "tests": tests})
    )
    res = promtool_run(promtool, "test", "rules", tests_file.name, cwd=rules_file.parent)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "SUCCESS" in res.stdout


def test_promtool_test_fails_an_alert_that_does_not_fire(promtool: Path, rules_file: Path) -> None:
    # The test above can fail: the same lag, expected to fire before its "for" has passed.
    tests_file = rules_file.parent / "wrong_test.yaml"
    early = {
        "interval": "1m",
        "input_series": [
            series("sparkcdc_operator_pipeline_lag_seconds", 'namespace="a", pipeline="b"', "400x20")
        ],
        "alert_rule_test": [
            {
                "eval_time": "5m",
                "alertname": "SparkcdcPipelineLagHigh",
                "exp_alerts": [
                    {"exp_labels": {"severity": "warning", "team": "data", "namespace": "a", "pipeline": "b"}}
                ],
            }
        ],
    }
    tests_file.write_text(yaml.safe_dump({"rule_files": [rules_file.name], "tests": [early]}))
    res = promtool_run(promtool, "test", "rules", tests_file.name, cwd=rules_file.parent)
    assert res.returncode != 0
    assert "SparkcdcPipelineLagHigh" in res.stdout + res.stderr


def test_the_dashboard_configmap_holds_the_dashboard_unchanged() -> None:
    docs = render(
        "grafanaDashboard.enabled=true",
        "grafanaDashboard.namespace=monitoring",
        "grafanaDashboard.annotations.grafana_folder=CDC",
    )
    configmap = only([d for d in docs if d["kind"] == "ConfigMap"], "ConfigMap")
    assert configmap["metadata"]["namespace"] == "monitoring"
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert configmap["metadata"]["annotations"] == {"grafana_folder": "CDC"}
    shipped = json.loads((CHART / "dashboards" / "sparkcdc.json").read_text())
    assert json.loads(configmap["data"]["sparkcdc.json"]) == shipped


def test_the_service_monitor_keeps_the_pipelines_namespace_label() -> None:
    monitor = only(render("serviceMonitor.enabled=true"), "ServiceMonitor")
    assert monitor["spec"]["endpoints"][0]["honorLabels"] is True
