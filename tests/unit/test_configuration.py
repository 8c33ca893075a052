"""docs/configuration.md: generated from the declarations, committed up to date, and naming every
``SPARKCDC_*`` variable the product reads; the operator's flags keep their variables and defaults."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sparkcdc.configuration import GENERATE_COMMAND, configuration_markdown
from sparkcdc.controller.builders import DRIVER_POD_VARIABLES, secret_env_name
from sparkcdc.controller.settings import FLAG_VARIABLES, OperatorSettings, build_parser, parse_settings

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "configuration.md"
SOURCE = ROOT / "operator" / "sparkcdc"
TESTING = SOURCE / "testing"  # the test harness's own variables are not the product's
VARIABLE = re.compile(r"SPARKCDC_[A-Z_]+")


def _source_variables() -> dict[str, Path]:
    """Every ``SPARKCDC_*`` name in the product's source, with a file that has it."""
    found: dict[str, Path] = {}
    for path in sorted(SOURCE.rglob("*.py")):
        if not path.is_relative_to(TESTING):
            found.update({name: path for name in VARIABLE.findall(path.read_text())})
    return found


def test_docs_configuration_is_generated() -> None:
    assert DOC.read_text() == configuration_markdown(), f"run: {GENERATE_COMMAND}"


def test_every_variable_in_the_source_is_documented() -> None:
    page = configuration_markdown()
    documented = set(VARIABLE.findall(page))
    # A row like `SPARKCDC_SECRET_<FIELD PATH>` documents every name that starts with its prefix.
    patterns = re.findall(r"(SPARKCDC_[A-Z_]+)<", page)
    found = _source_variables()
    assert len(found) > 15, "the scan found too few variables: has the source moved?"
    missing = {
        f"{name} ({path.relative_to(ROOT)})"
        for name, path in found.items()
        if name not in documented and not any(name.startswith(prefix) for prefix in patterns)
    }
    assert not missing, f"undocumented: {sorted(missing)}; declare them (see sparkcdc/configuration.py)"


def test_the_secret_pattern_row_covers_secret_env_name() -> None:
    (pattern,) = [variable for variable in DRIVER_POD_VARIABLES if "<" in variable]
    assert secret_env_name("spec.sink.passwordSecretRef").startswith(pattern.split("<")[0])


def test_every_flag_variable_reaches_its_setting() -> None:
    env = {
        "SPARKCDC_WATCH_NAMESPACES": "a,,b",
        "SPARKCDC_ALLOWED_IMAGES": "ghcr.io/sparkcdc/, registry.local/spark",
        "SPARKCDC_SPARK_MASTER": "local[2]",
        "SPARKCDC_DRIVER_SERVICE_ACCOUNT": "drivers",
        "SPARKCDC_SCHEDULER_NAME": "test-scheduler",
        "SPARKCDC_METRICS_PORT": "0",
        "SPARKCDC_DRIVER_METRICS_PORT": "9000",
        "SPARKCDC_LIVENESS_PORT": "8081",
        "SPARKCDC_RESYNC_SECONDS": "5",
        "SPARKCDC_STALL_SECONDS": "60.5",
        "SPARKCDC_BINLOG_EXPIRY_MARGIN_SECONDS": "3600",
        "SPARKCDC_BINLOG_EXPIRY_MARGIN_FILES": "2",
        "SPARKCDC_LEADER_ELECTION": "true",
        "SPARKCDC_LEADER_ELECTION_NAME": "rel-sparkcdc",
        "SPARKCDC_LEADER_ELECTION_NAMESPACE": "ops",
        "SPARKCDC_LEADER_ELECTION_LEASE_DURATION": "30",
        "SPARKCDC_LEADER_ELECTION_RENEW_DEADLINE": "20",
        "SPARKCDC_LEADER_ELECTION_RETRY_PERIOD": "4",
        "HOSTNAME": "sparkcdc-operator-7d9f",
    }
    assert set(env) - {"HOSTNAME"} == set(FLAG_VARIABLES.values())
    assert parse_settings([], env) == OperatorSettings(
        namespaces=("a", "b"),
        allowed_images=("ghcr.io/sparkcdc/", "registry.local/spark"),
        spark_master="local[2]",
        driver_service_account="drivers",
        scheduler_name="test-scheduler",
        metrics_port=0,
        driver_metrics_port=9000,
        liveness_port=8081,
        resync_seconds=5.0,
        stall_seconds=60.5,
        binlog_expiry_margin_seconds=3600.0,
        binlog_expiry_margin_files=2,
        instance="sparkcdc-operator-7d9f",
        leader_election=True,
        leader_election_name="rel-sparkcdc",
        leader_election_namespace="ops",
        lease_duration=30.0,
        renew_deadline=20.0,
        retry_period=4.0,
    )


def test_flags_win_over_variables_and_empty_ones_are_defaults() -> None:
    env = {"SPARKCDC_WATCH_NAMESPACES": "a", "SPARKCDC_METRICS_PORT": "1", "SPARKCDC_SCHEDULER_NAME": ""}
    settings = parse_settings(["-n", "b", "--metrics-port", "2", "--stall-seconds", "7"], env)
    assert (settings.namespaces, settings.metrics_port, settings.stall_seconds) == (("b",), 2, 7.0)
    assert settings.scheduler_name is None
    assert parse_settings([], {"HOSTNAME": ""}).instance == OperatorSettings.instance


def test_without_variables_the_defaults_are_the_settings_defaults() -> None:
    assert parse_settings([], {}) == OperatorSettings()
    parser = build_parser({})
    for dest in FLAG_VARIABLES:
        expected = [] if dest in ("namespace", "allowed_image") else getattr(OperatorSettings, dest)
        assert parser.get_default(dest) == expected, dest


@pytest.mark.parametrize("dest", list(FLAG_VARIABLES))
def test_every_flag_has_help_and_a_row_with_its_variable(dest: str) -> None:
    (action,) = [a for a in build_parser({})._actions if a.dest == dest]
    assert action.help
    rows = [
        line
        for line in configuration_markdown().splitlines()
        if line.startswith(f"| `{action.option_strings[0]}`")
    ]
    assert len(rows) == 1 and f"| `{FLAG_VARIABLES[dest]}` |" in rows[0]
