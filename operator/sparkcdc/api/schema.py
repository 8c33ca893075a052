"""pydantic JSON Schema -> Kubernetes structural OpenAPI v3 schema, and a checker for the result.

Kubernetes accepts a subset of OpenAPI v3 (https://kubernetes.io/docs/tasks/extend-kubernetes/
custom-resources/custom-resource-definitions/#specifying-a-structural-schema): every node has a
``type``, no ``$ref``, no ``oneOf``/``anyOf`` unions, no ``additionalProperties: false``, no
``const``, boolean ``exclusiveMinimum``. The conversion keeps the model's meaning and refuses
anything it can't express, so a model change can't silently weaken the CRD.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from typing import Any

from sparkcdc.api.base import cel

Schema = dict[str, Any]

# Output key order: what a reader of the CRD looks for first.
_KEY_ORDER = (
    "description",
    "type",
    "format",
    "enum",
    "pattern",
    "minimum",
    "exclusiveMinimum",
    "maximum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "items",
    "properties",
    "additionalProperties",
    "required",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-int-or-string",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
    "x-kubernetes-validations",
)
_ALLOWED = frozenset(_KEY_ORDER) | {"nullable"}
_TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean"})


class SchemaConversionError(ValueError):
    pass


def _ordered(node: Schema) -> Schema:
    unknown = set(node) - _ALLOWED
    if unknown:
        raise SchemaConversionError(f"schema keys Kubernetes does not support: {sorted(unknown)} in {node}")
    return {key: node[key] for key in _KEY_ORDER if key in node} | (
        {"nullable": node["nullable"]} if "nullable" in node else {}
    )


def _default_text(value: Any) -> str | None:
    if value is None or isinstance(value, (dict, list)):
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return json.dumps(value)


class _Converter:
    def __init__(self, defs: dict[str, Schema]) -> None:
        self.defs = defs

    def resolve(self, node: Schema) -> Schema:
        node = dict(node)
        while "$ref" in node:
            name = node.pop("$ref").rsplit("/", 1)[-1]
            # The referring node's keys win: its description and extras describe this use.
            node = {**copy.deepcopy(self.defs[name]), **node}
        return node

    def convert(self, node: Schema) -> Schema:
        node = self.resolve(node)
        if "anyOf" in node:
            # Optional[X]: absent and null are the same to the operator, and the apiserver drops
            # nulls of non-nullable fields, so X alone describes the field.
            branches = [b for b in node.pop("anyOf") if b != {"type": "null"}]
            if len(branches) != 1:
                raise SchemaConversionError(f"a union of several types can't be structural: {branches}")
            return self.convert({**self.resolve(branches[0]), **node})
        if "oneOf" in node:
            return self.flatten_union(node)
        return self.convert_plain(node)

    def convert_plain(self, node: Schema) -> Schema:
        node = dict(node)
        node.pop("title", None)
        node.pop("propertyNames", None)  # Kubernetes can't restrict map keys; the operator checks them
        default = node.pop("default", None)
        text = _default_text(default)
        if text is not None and "Defaults to" not in node.get("description", ""):
            description = node.get("description", "").rstrip()
            node["description"] = f"{description} Defaults to {text}.".strip()
        if "const" in node:
            node["enum"] = [node.pop("const")]
        for bound, plain in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
            if bound in node and not isinstance(node[bound], bool):
                node[plain] = node.pop(bound)
                node[bound] = True
        if node.get("type") == "string" and "enum" in node and "maxLength" not in node:
            node["maxLength"] = max(len(str(v)) for v in node["enum"])
        if "x-kubernetes-validations" in node:
            node["x-kubernetes-validations"] = [
                cel(rule["rule"], rule["message"]) for rule in node["x-kubernetes-validations"]
            ]
        if "properties" in node:
            node["properties"] = {k: self.convert(v) for k, v in node["properties"].items()}
            if node.get("additionalProperties") is False:
                del node["additionalProperties"]
        if "items" in node:
            node["items"] = self.convert(node["items"])
        extra = node.get("additionalProperties")
        if extra is True or extra == {}:
            del node["additionalProperties"]
            node["x-kubernetes-preserve-unknown-fields"] = True
        elif isinstance(extra, dict):
            node["additionalProperties"] = self.convert(extra)
        elif extra is False:
            del node["additionalProperties"]
        return _ordered(node)

    def flatten_union(self, node: Schema) -> Schema:
        """One object with every variant's properties, and CEL rules tying properties to the tag."""
        discriminator = node.pop("discriminator", {}).get("propertyName")
        if not discriminator:
            raise SchemaConversionError("only discriminated unions can be flattened")
        variants = [self.convert(branch) for branch in node.pop("oneOf")]
        tags: list[str] = []
        properties: Schema = {}
        owners: dict[str, list[str]] = {}
        required: dict[str, list[str]] = {}
        for variant in variants:
            tag = variant["properties"][discriminator]["enum"][0]
            tags.append(tag)
            required[tag] = [r for r in variant.get("required", []) if r != discriminator]
            for name, prop in variant["properties"].items():
                if name == discriminator:
                    continue
                owners.setdefault(name, []).append(tag)
                if name not in properties:
                    properties[name] = prop
                elif _without_description(properties[name]) != _without_description(prop):
                    raise SchemaConversionError(f"union variants disagree on property {name!r}")
        kind_text = variants[0]["properties"][discriminator].get("description", "Kind.").rstrip(".")
        tag_schema = {
            "description": f"{kind_text}: one of {', '.join(tags)}.",
            "type": "string",
            "enum": tags,
            "maxLength": max(len(t) for t in tags),
        }
        rules = []
        for tag in tags:
            if required[tag]:
                present = " && ".join(f"has(self.{r})" for r in required[tag])
                rules.append(
                    cel(
                        f"self.{discriminator} != '{tag}' || ({present})",
                        f"type {tag} needs {_and(required[tag])}",
                    )
                )
        groups: dict[tuple[str, ...], list[str]] = {}
        for prop_name, owner_tags in owners.items():
            if len(owner_tags) < len(tags):
                groups.setdefault(tuple(owner_tags), []).append(prop_name)
        for group_tags, group_props in groups.items():
            condition = (
                f"self.{discriminator} == '{group_tags[0]}'"
                if len(group_tags) == 1
                else f"self.{discriminator} in [{', '.join(repr(t) for t in group_tags)}]"
            )
            any_present = " || ".join(f"has(self.{p})" for p in group_props)
            rules.append(
                cel(
                    f"{condition} || !({any_present})",
                    f"{_and(group_props)} {'is' if len(group_props) == 1 else 'are'} only allowed when "
                    f"{discriminator} is {' or '.join(group_tags)}",
                )
            )
        flat: Schema = {
            "description": node.get("description", ""),
            "type": "object",
            "properties": {discriminator: tag_schema, **properties},
            "required": [discriminator],
            "x-kubernetes-validations": rules,
        }
        return _ordered(flat)


def _and(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _without_description(node: Schema) -> Schema:
    return {k: v for k, v in node.items() if k != "description"}


def to_structural(json_schema: Schema) -> Schema:
    """Convert a ``model_json_schema()`` result; ``$defs`` are inlined."""
    schema = copy.deepcopy(json_schema)
    defs = schema.pop("$defs", {})
    return _Converter(defs).convert(schema)


def walk(schema: Schema, visit: Callable[[str, Schema], None], path: str = "") -> None:
    """Call ``visit(path, node)`` for every node, paths like ``.spec.source.tables[*]``."""
    visit(path, schema)
    for name, prop in schema.get("properties", {}).items():
        walk(prop, visit, f"{path}.{name}")
    if isinstance(schema.get("items"), dict):
        walk(schema["items"], visit, f"{path}[*]")
    if isinstance(schema.get("additionalProperties"), dict):
        walk(schema["additionalProperties"], visit, f"{path}[*]")


_SELF_FIELD = re.compile(r"\bself\.([A-Za-z_][A-Za-z0-9_]*)\b(?!\s*\()")


def structural_problems(schema: Schema) -> list[str]:
    """Violations of Kubernetes' structural-schema rules (and CEL rules naming unknown fields)."""
    problems: list[str] = []

    def visit(path: str, node: Schema) -> None:
        where = path or "<root>"
        for key in node:
            if key not in _ALLOWED:
                problems.append(f"{where}: {key} is not allowed")
        preserve = node.get("x-kubernetes-preserve-unknown-fields") is True
        int_or_string = node.get("x-kubernetes-int-or-string") is True
        if "type" not in node and not (preserve or int_or_string):
            problems.append(f"{where}: no type")
        if "type" in node and node["type"] not in _TYPES:
            problems.append(f"{where}: unknown type {node['type']!r}")
        if node.get("type") == "array" and not isinstance(node.get("items"), dict):
            problems.append(f"{where}: array without items")
        if "additionalProperties" in node:
            if not isinstance(node["additionalProperties"], dict):
                problems.append(f"{where}: additionalProperties must be a schema")
            if "properties" in node:
                problems.append(f"{where}: both properties and additionalProperties")
        if isinstance(node.get("exclusiveMinimum"), (int, float)) and not isinstance(
            node.get("exclusiveMinimum"), bool
        ):
            problems.append(f"{where}: exclusiveMinimum must be a boolean")
        for name in node.get("required", []):
            if name not in node.get("properties", {}):
                problems.append(f"{where}: required {name!r} is not a property")
        if node.get("type") == "object":
            for rule in node.get("x-kubernetes-validations", []):
                for name in _SELF_FIELD.findall(rule["rule"]):
                    if name not in node.get("properties", {}):
                        problems.append(f"{where}: rule {rule['rule']!r} names unknown field {name!r}")

    walk(schema, visit)
    return problems


def unbounded_problems(schema: Schema) -> list[str]:
    """Strings without maxLength, lists without maxItems, maps without maxProperties.

    The apiserver's CEL cost estimate multiplies by these bounds; unbounded ones make it refuse rules.
    """
    problems: list[str] = []

    def visit(path: str, node: Schema) -> None:
        kind = node.get("type")
        if kind == "string" and "maxLength" not in node:
            problems.append(f"{path}: string without maxLength")
        if kind == "array" and "maxItems" not in node:
            problems.append(f"{path}: list without maxItems")
        if kind == "object" and "additionalProperties" in node and "maxProperties" not in node:
            problems.append(f"{path}: map without maxProperties")

    walk(schema, visit)
    return problems
