"""The generated CRD: committed file in sync, structural, bounded, and its rules consistent."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkcdc.api import SpecError
from sparkcdc.api.crd import CRD_FILE, crd_document, open_api_schema, render_crd_yaml
from sparkcdc.api.reference import REFERENCE_FILE, render_reference_markdown
from sparkcdc.api.schema import Schema, structural_problems, to_structural, unbounded_problems, walk

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]


def test_committed_crd_matches_the_models() -> None:
    committed = (ROOT / CRD_FILE).read_text()
    assert committed == render_crd_yaml(), f"{CRD_FILE} is out of date with the models: run `make crd`"


def test_committed_reference_doc_matches_the_models() -> None:
    committed = (ROOT / REFERENCE_FILE).read_text()
    assert committed == render_reference_markdown(), (
        f"{REFERENCE_FILE} is out of date with the models: run "
        f"`.venv/bin/python -m sparkcdc.api.reference > {REFERENCE_FILE}`"
    )


def test_rendered_yaml_is_the_document() -> None:
    assert yaml.safe_load(render_crd_yaml()) == crd_document()


def test_crd_names_and_version() -> None:
    crd = crd_document()
    assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
    assert crd["kind"] == "CustomResourceDefinition"
    assert crd["metadata"]["name"] == "cdcpipelines.sparkcdc.io"
    spec = crd["spec"]
    assert spec["group"] == "sparkcdc.io"
    assert spec["scope"] == "Namespaced"
    assert spec["names"] == {
        "kind": "CdcPipeline",
        "listKind": "CdcPipelineList",
        "plural": "cdcpipelines",
        "singular": "cdcpipeline",
        "shortNames": ["cdcp"],
        "categories": ["sparkcdc"],
    }
    [version] = spec["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1alpha1", True, True)
    assert version["subresources"] == {"status": {}}
    columns = {
        c["name"]: (c["type"], c["jsonPath"], c.get("priority", 0))
        for c in version["additionalPrinterColumns"]
    }
    assert columns == {
        "Ready": ("string", '.status.conditions[?(@.type=="Ready")].status', 0),
        # Why Ready is what it is, right next to it (CamelCase: test_controller_reconcile_property.py).
        "Reason": ("string", '.status.conditions[?(@.type=="Ready")].reason', 0),
        "Phase": ("string", ".status.phase", 0),
        "Tables": ("integer", ".status.progress.tables", 0),
        "Splits": ("string", ".status.progress.splitsDisplay", 0),
        "Lag": ("number", ".status.progress.lagSeconds", 0),
        "Restarts": ("integer", ".status.driver.restarts", 0),
        "Age": ("date", ".metadata.creationTimestamp", 0),
        # The Verified condition's reason, in kubectl get -o wide only (most pipelines never verify).
        "Verified": ("string", '.status.conditions[?(@.type=="Verified")].reason', 1),
    }
    assert list(columns)[:3] == ["Ready", "Reason", "Phase"]


_FILTER = re.compile(r'(\w+)\[\?\(@\.(\w+)=="[^"]*"\)\]')


def _at(schema: Schema, json_path: str) -> Schema:
    """The schema of the field a printer column's JSONPath names; a filtered list step
    (``conditions[?(@.type=="X")]``) steps into the list's items, whose filter field must exist."""
    node = schema
    for part in re.findall(r"\w+(?:\[[^\]]*\])?", json_path):  # a filter has dots of its own
        match = _FILTER.fullmatch(part)
        if match is None:
            node = node["properties"][part]
            continue
        field, key = match.groups()
        assert node["properties"][field]["type"] == "array"
        node = node["properties"][field]["items"]
        assert key in node["properties"], f"{json_path}: the items have no field {key!r}"
    return node


def test_printer_columns_point_at_schema_fields() -> None:
    schema = open_api_schema()
    [version] = crd_document()["spec"]["versions"]
    for column in version["additionalPrinterColumns"]:
        if column["jsonPath"].startswith(".status"):
            assert _at(schema, column["jsonPath"])["type"] == column["type"], column["name"]


def test_the_column_path_reaches_into_conditions() -> None:
    assert _at(open_api_schema(), '.status.conditions[?(@.type=="Verified")].reason')["type"] == "string"
    with pytest.raises(AssertionError, match="no field 'kind'"):
        _at(open_api_schema(), '.status.conditions[?(@.kind=="Verified")].reason')


def test_schema_is_structural() -> None:
    assert structural_problems(open_api_schema()) == []


def test_spec_is_bounded_for_cel_cost_estimates() -> None:
    assert unbounded_problems(open_api_schema()["properties"]["spec"]) == []


def test_checker_finds_what_kubernetes_refuses() -> None:
    bad: Schema = {
        "type": "object",
        "properties": {
            "a": {"description": "no type"},
            "b": {"type": "array"},
            "c": {
                "type": "object",
                "properties": {"x": {"type": "string"}},
                "additionalProperties": {"type": "string"},
            },
            "d": {"$ref": "#/$defs/D"},
            "e": {"type": "integer", "exclusiveMinimum": 0},
            "f": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "g": {
                "type": "object",
                "properties": {},
                "x-kubernetes-validations": [{"rule": "has(self.y)", "message": "m"}],
            },
        },
    }
    assert structural_problems(bad) == [
        ".a: no type",
        ".b: array without items",
        ".c: both properties and additionalProperties",
        ".d: $ref is not allowed",
        ".d: no type",
        ".e: exclusiveMinimum must be a boolean",
        ".g: rule 'has(self.y)' names unknown field 'y'",
    ]


def test_no_json_schema_leftovers() -> None:
    leftovers: list[str] = []

    def visit(path: str, node: Schema) -> None:
        for key in ("$ref", "$defs", "anyOf", "oneOf", "allOf", "const", "title", "default", "discriminator"):
            if key in node:
                leftovers.append(f"{path}: {key}")
        if node.get("additionalProperties") is False:
            leftovers.append(f"{path}: additionalProperties: false")

    walk(open_api_schema(), visit)
    assert leftovers == []


def test_optional_fields_are_not_required_and_required_fields_are() -> None:
    spec = open_api_schema()["properties"]["spec"]
    assert spec["required"] == ["source", "sink"]
    assert spec["properties"]["source"]["required"] == ["host", "user", "passwordSecretRef", "tables"]
    assert open_api_schema()["required"] == ["spec"]


def test_metadata_restricts_only_the_name() -> None:
    metadata = open_api_schema()["properties"]["metadata"]
    assert metadata == {
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 63, "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"}
        },
    }


def test_sink_union_is_flattened_with_rules_per_type() -> None:
    sink = open_api_schema()["properties"]["spec"]["properties"]["sink"]
    assert sink["type"] == "object"
    assert sink["required"] == ["type"]
    assert sink["properties"]["type"]["enum"] == ["jdbc", "delta", "changelog", "console"]
    assert {"url", "user", "passwordSecretRef", "batchRows", "path", "partitionBy", "maxRowsPerTable"} <= set(
        sink["properties"]
    )
    rules = {r["message"]: r["rule"] for r in sink["x-kubernetes-validations"]}
    assert rules["type jdbc needs url, user and passwordSecretRef"] == (
        "self.type != 'jdbc' || (has(self.url) && has(self.user) && has(self.passwordSecretRef))"
    )
    assert rules["path is only allowed when type is delta or changelog"] == (
        "self.type in ['delta', 'changelog'] || !(has(self.path))"
    )
    assert rules["maxRowsPerTable is only allowed when type is console"] == (
        "self.type == 'console' || !(has(self.maxRowsPerTable))"
    )


def _rules(schema: Schema) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}

    def visit(path: str, node: Schema) -> None:
        for rule in node.get("x-kubernetes-validations", []):
            found.setdefault(path, []).append(rule["rule"])

    walk(schema, visit)
    return found


def test_cel_rules_cover_the_cross_field_checks() -> None:
    rules = _rules(open_api_schema())
    startup = " ".join(rules[".spec.startup"])
    assert "!= 'timestamp' || has(self.timestamp)" in startup
    assert "!= 'specific-offset' || (has(self.file) && has(self.position)) || has(self.gtidSet)" in startup
    server_id = " ".join(rules[".spec.source.serverId"])
    assert "int(self.split('-')[0]) <= int(self.split('-')[1])" in server_id
    assert rules[".spec.snapshot.evenDistributionFactor"] == [
        "(has(self.lower) ? self.lower : 0.05) <= (has(self.upper) ? self.upper : 1000.0)"
    ]
    assert ".spec.sink" in rules
    assert ".spec.source.tls" in rules


def test_cel_rule_defaults_match_the_models() -> None:
    """Rules fall back to the model default for absent fields (the CRD stores no defaults)."""
    from sparkcdc.api import DistributionFactor, RestartPolicy, StartupSpec, TlsSpec

    rules = " ".join(r for rs in _rules(open_api_schema()).values() for r in rs)
    assert f"self.mode : '{StartupSpec().mode}'" in rules
    assert f"self.mode : '{TlsSpec().mode}'" in rules
    assert f"self.lower : {DistributionFactor().lower}" in rules
    assert f"self.upper : {DistributionFactor().upper}" in rules
    assert f"self.initialBackoffSeconds : {RestartPolicy().initial_backoff_seconds}" in rules
    assert f"self.maxBackoffSeconds : {RestartPolicy().max_backoff_seconds}" in rules


def test_patterns_in_the_crd_accept_what_the_models_accept() -> None:
    """The CRD's regexes (Go RE2) are also valid Python regexes; check them on sample values."""
    schema = open_api_schema()["properties"]["spec"]["properties"]
    samples: dict[tuple[str, ...], tuple[list[str], list[str]]] = {
        ("source", "serverId"): (["5400", "5400-5404", "1-4294967295"], ["abc", "5400-", "-1", "1-2-3"]),
        ("spark", "driver", "memory"): (["512m", "1g", "2Gi", "4G"], ["2GB", "1.5g", "0g", "g"]),
        ("spark", "master"): (["local", "local[2]", "local[*]", "k8s://https://x"], ["yarn", "local[0]"]),
        ("startup", "file"): (["mysql-bin.000003"], ["mysql-bin", "a/b.000001"]),
        ("sink", "url"): (
            ["mysql://h:3306/db", "postgresql://h/db?sslmode=require"],
            ["mysql://u:p@h/db", "h/db"],
        ),
    }
    for path, (good, bad) in samples.items():
        node: Any = schema[path[0]]
        for part in path[1:]:
            node = node["properties"][part]
        pattern = re.compile(node["pattern"])
        assert all(pattern.search(v) for v in good), (path, good)
        assert not any(pattern.search(v) for v in bad), (path, bad)


def test_converter_refuses_plain_unions() -> None:
    from sparkcdc.api.schema import SchemaConversionError

    with pytest.raises(SchemaConversionError):
        to_structural(
            {"type": "object", "properties": {"x": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}}
        )


_TABLE_ALPHABET = "ab._*\\()[]|^$+?{}-"


@settings(max_examples=300)
@given(entry=st.text(alphabet=_TABLE_ALPHABET, min_size=1, max_size=8))
def test_table_entry_rule_agrees_with_the_model(entry: str) -> None:
    """The CRD rule on source.tables items accepts what the model accepts (bar regex syntax errors)."""
    from sparkcdc.api.source import PLAIN_TABLE_PATTERN, TABLE_PATTERN_CHARS, check_table_entry

    crd_accepts = bool(re.search(TABLE_PATTERN_CHARS, entry) or re.search(PLAIN_TABLE_PATTERN, entry))
    try:
        check_table_entry(entry)
        model_accepts = True
    except SpecError as err:
        model_accepts = False
        if "regular expression:" in err.message:
            return  # CEL can't compile-check a regex; the operator reports it
    assert crd_accepts == model_accepts, entry
