"""Paths and small readers shared by the deploy unit tests (chart, images, examples, docs)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import yaml

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the project's venv is 3.11+
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[3]
CHART = REPO / "charts" / "sparkcdc"
IMAGES = REPO / "spark_images"
EXAMPLES = REPO / "examples"
DOCS = REPO / "docs"

Obj = dict[str, Any]


def pyproject() -> Obj:
    data: Obj = tomllib.loads((REPO / "pyproject.toml").read_text())
    return data


def project_version() -> str:
    return str(pyproject()["project"]["version"])


def pyspark_pin() -> str:
    for dep in pyproject()["project"]["dependencies"]:
        match = re.fullmatch(r"pyspark==([0-9.]+)", dep.replace(" ", ""))
        if match:
            return match.group(1)
    raise AssertionError("pyproject.toml does not pin pyspark with ==")


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def chart_meta() -> Obj:
    meta: Obj = load_yaml(CHART / "Chart.yaml")
    return meta


def values() -> Obj:
    data: Obj = load_yaml(CHART / "values.yaml")
    return data


def schema() -> Obj:
    data: Obj = json.loads((CHART / "values.schema.json").read_text())
    return data


_TYPES: dict[str, type | tuple[type, ...]] = {
    "object": dict,
    "array": list,
    "string": str,
    "boolean": bool,
    "integer": int,
    "number": (int, float),
    "null": type(None),
}


def schema_problems(value: Any, node: Obj, path: str = "") -> list[str]:
    """A small subset of JSON Schema (type, enum, properties, additionalProperties, items), enough to
    catch a values file naming a key the schema does not know. helm applies the full schema (e2e)."""
    problems: list[str] = []
    types = node.get("type")
    if types is not None:
        allowed = [types] if isinstance(types, str) else types
        ok = any(
            isinstance(value, _TYPES[t]) and not (t in ("integer", "number") and isinstance(value, bool))
            for t in allowed
        )
        if not ok:
            return [f"{path or '/'}: {type(value).__name__} is not {types}"]
    if "enum" in node and value not in node["enum"]:
        problems.append(f"{path}: {value!r} not in {node['enum']}")
    if isinstance(value, dict):
        props = node.get("properties", {})
        for key, item in value.items():
            if key in props:
                problems += schema_problems(item, props[key], f"{path}/{key}")
            elif node.get("additionalProperties") is False:
                problems.append(f"{path}/{key}: not in the schema")
            elif isinstance(node.get("additionalProperties"), dict):
                problems += schema_problems(item, node["additionalProperties"], f"{path}/{key}")
    if isinstance(value, list) and isinstance(node.get("items"), dict):
        for i, item in enumerate(value):
            problems += schema_problems(item, node["items"], f"{path}/{i}")
    return problems
