"""Multi-document YAML that reports duplicate keys and never echoes file content in errors."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode


@dataclass(frozen=True)
class DuplicateKey:
    """A key given twice in one mapping. PyYAML keeps the last value silently; users rarely mean that."""

    path: str
    key: str
    line: int
    first_line: int


@dataclass(frozen=True)
class YamlDocument:
    """One document of a file; ``index`` counts from 1 as in ``pipeline.yaml#2``."""

    index: int
    line: int
    data: Any
    duplicates: list[DuplicateKey] = field(default_factory=list)


class YamlSyntaxError(Exception):
    """A file that is not valid YAML. ``documents`` holds those parsed before the error."""

    def __init__(self, message: str, documents: list[YamlDocument]) -> None:
        super().__init__(message)
        self.message = message
        self.documents = documents


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _find_duplicates(node: Node, path: str, found: list[DuplicateKey], seen: set[int]) -> None:
    if id(node) in seen:  # an alias refers to a node already checked
        return
    seen.add(id(node))
    if isinstance(node, MappingNode):
        first: dict[tuple[str, str], int] = {}
        for key_node, value_node in node.value:
            if isinstance(key_node, ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                ident = (key_node.tag, key_node.value)
                line = key_node.start_mark.line + 1
                if ident in first:
                    found.append(
                        DuplicateKey(_join(path, key_node.value), key_node.value, line, first[ident])
                    )
                else:
                    first[ident] = line
                child = _join(path, key_node.value)
            else:
                child = path
            _find_duplicates(value_node, child, found, seen)
    elif isinstance(node, SequenceNode):
        for index, item in enumerate(node.value):
            _find_duplicates(item, f"{path}[{index}]", found, seen)


def _describe(err: yaml.YAMLError) -> str:
    # str(err) would include a snippet of the offending line, which may hold a password.
    if isinstance(err, yaml.MarkedYAMLError):
        mark = err.problem_mark or err.context_mark
        what = "; ".join(part for part in (err.context, err.problem) if part)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        return f"{where}invalid YAML: {what}"
    return "invalid YAML"


def load_documents(text: str) -> list[YamlDocument]:
    """Parse every document of ``text``. Raises YamlSyntaxError with the documents read so far."""
    documents: list[YamlDocument] = []
    loader = yaml.SafeLoader(text)
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                break
            duplicates: list[DuplicateKey] = []
            _find_duplicates(node, "", duplicates, set())
            data = loader.construct_document(node)
            documents.append(YamlDocument(len(documents) + 1, node.start_mark.line + 1, data, duplicates))
    except yaml.YAMLError as err:
        raise YamlSyntaxError(_describe(err), documents) from None
    finally:
        loader.dispose()
    return documents
