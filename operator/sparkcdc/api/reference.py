"""docs/reference.md: the CdcPipeline field reference, generated from the models.

Regenerate with ``.venv/bin/python -m sparkcdc.api.reference > docs/reference.md``.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

from sparkcdc.api.reference_notes import KEYS_AND_REFERENCES_MARKDOWN
from sparkcdc.api.resource import API_VERSION, KIND, SHORT_NAMES
from sparkcdc.api.spec import CdcPipelineSpec
from sparkcdc.api.status import CdcPipelineStatus
from sparkcdc.api.type_mapping import TYPE_MAPPING_MARKDOWN

REFERENCE_FILE = "docs/reference.md"
Schema = dict[str, Any]


def _anchor(title: str) -> str:
    # GitHub's heading anchors: lower case, punctuation other than '-' and ' ' dropped, spaces to '-'.
    return re.sub(r"[^a-z0-9 _-]", "", title.lower()).replace(" ", "-")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


class _Writer:
    def __init__(self, defs: dict[str, Schema]) -> None:
        self.defs = defs
        self.sections: list[str] = []

    def resolve(self, node: Schema) -> Schema:
        node = dict(node)
        while "$ref" in node:
            name = node.pop("$ref").rsplit("/", 1)[-1]
            node = {**self.defs[name], **node}
        if "anyOf" in node:
            branches = [b for b in node.pop("anyOf") if b != {"type": "null"}]
            if len(branches) == 1:
                node = {**self.resolve(branches[0]), **node}
        return node

    def type_text(self, node: Schema, path: str) -> str:
        """The field's type with its constraints, and a link when it has its own section."""
        node = self.resolve(node)
        if "oneOf" in node:
            tags = [self.resolve(v)["properties"]["type"]["const"] for v in node["oneOf"]]
            links = ", ".join(f"[{t}](#{_anchor(f'{path} (type: {t})')})" for t in tags)
            return f"object, by `type`: {links}"
        if "const" in node:
            return f"`{node['const']}`"
        if "enum" in node:
            return "one of " + ", ".join(f"`{v}`" for v in node["enum"])
        kind = node.get("type", "any")
        bounds = []
        if "minimum" in node:
            bounds.append(f"≥ {node['minimum']}")
        if "exclusiveMinimum" in node:
            bounds.append(f"> {node['exclusiveMinimum']}")
        if "maximum" in node:
            bounds.append(f"≤ {node['maximum']}")
        if "minLength" in node and node["minLength"] > 0:
            bounds.append("non-empty")
        if "maxLength" in node:
            bounds.append(f"≤ {node['maxLength']} chars")
        if "minItems" in node:
            bounds.append(f"≥ {node['minItems']} items")
        if "maxItems" in node:
            bounds.append(f"≤ {node['maxItems']} items")
        if "maxProperties" in node:
            bounds.append(f"≤ {node['maxProperties']} entries")
        if "format" in node:
            bounds.append(node["format"])
        suffix = f" ({', '.join(bounds)})" if bounds else ""
        if kind == "array":
            return f"list{suffix} of {self.type_text(node['items'], path + '[]')}"
        if kind == "object" and "properties" in node:
            return f"object ([{path}](#{_anchor(path)}))"
        if kind == "object":
            values = node.get("additionalProperties")
            if isinstance(values, dict) and values:
                return f"map{suffix} of string to {self.type_text(values, path + '[]')}"
            return "object (free form)"
        return f"{kind}{suffix}"

    def section(self, title: str, node: Schema, *, skip: tuple[str, ...] = ()) -> None:
        node = self.resolve(node)
        lines = [f"### {title}", ""]
        if node.get("description"):
            lines += [node["description"], ""]
        lines += ["| Field | Type | Default | Description |", "|---|---|---|---|"]
        required = set(node.get("required", []))
        children: list[tuple[str, Schema]] = []
        for name, prop in node.get("properties", {}).items():
            if name in skip:
                continue
            path = f"{title.split(' ')[0]}.{name}"
            resolved = self.resolve(prop)
            if "default" in prop or "default" in resolved:
                default = prop.get("default", resolved.get("default"))
                shown = "" if default is None or default in ({}, []) else f"`{json.dumps(default)}`"
                if isinstance(default, dict) and default:
                    shown = "see below"
            else:
                shown = "**required**" if name in required else ""
            description = _cell(resolved.get("description", ""))
            lines.append(f"| `{name}` | {_cell(self.type_text(prop, path))} | {shown} | {description} |")
            children.append((path, resolved))
        rules = [rule["message"] for rule in node.get("x-kubernetes-validations", [])]
        if rules:
            lines += ["", "Rules:", ""] + [f"- {rule}" for rule in rules]
        self.sections.append("\n".join(lines))
        for path, child in children:
            self.descend(path, child)

    def descend(self, path: str, node: Schema) -> None:
        if "oneOf" in node:
            for variant in node["oneOf"]:
                resolved = self.resolve(variant)
                tag = resolved["properties"]["type"]["const"]
                self.section(f"{path} (type: {tag})", resolved)
        elif node.get("type") == "object" and "properties" in node:
            self.section(path, node)
        elif node.get("type") == "array" and isinstance(node.get("items"), dict):
            items = self.resolve(node["items"])
            if "properties" in items:
                self.section(f"{path}[]", items)


def render_reference_markdown() -> str:
    """The field reference of CdcPipeline spec and status, as Markdown."""
    header = [
        f"# {KIND} reference",
        "",
        "<!-- Generated from the pydantic models in operator/sparkcdc/api by",
        "     `.venv/bin/python -m sparkcdc.api.reference > docs/reference.md`; do not edit. -->",
        "",
        f"`apiVersion: {API_VERSION}`, `kind: {KIND}` (short name `{SHORT_NAMES[0]}`), namespaced. "
        "Field names are camelCase. Defaults are applied by the operator, not stored by the API server.",
        "",
        "## Spec",
        "",
    ]
    out: list[str] = []
    for title, model in (("spec", CdcPipelineSpec), ("status", CdcPipelineStatus)):
        schema = model.model_json_schema(by_alias=True)
        writer = _Writer(schema.pop("$defs", {}))
        writer.section(title, schema)
        if title == "status":
            out += ["## Status", ""]
        out.append("\n\n".join(writer.sections))
        out.append("")
    out.append(TYPE_MAPPING_MARKDOWN)
    out.append(KEYS_AND_REFERENCES_MARKDOWN)
    return "\n".join(header + out).rstrip() + "\n"


if __name__ == "__main__":
    sys.stdout.write(render_reference_markdown())
