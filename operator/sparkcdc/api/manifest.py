"""Manifest files: CdcPipeline and v1 Secret documents, validated together.

Every problem in every document is collected before anything is reported, so one run of
``sparkcdc validate`` shows all of them. Messages read
``<file>#<document> (<Kind> <name>): <field.path>: <what is wrong and what is expected>``.
Secret values never appear in a message or a repr.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import SecretStr, ValidationError

from sparkcdc.api.base import SecretKeyRef, SpecError, check_secret_key, check_secret_name
from sparkcdc.api.errors import ManifestError, SecretRefError, describe_type, show_value, translate_errors
from sparkcdc.api.resource import API_VERSION, KIND, CdcPipeline
from sparkcdc.api.yamlload import YamlDocument, YamlSyntaxError, load_documents

__all__ = [
    "LoadedPipeline",
    "LoadedSecret",
    "Manifest",
    "ManifestError",
    "SecretRefError",
    "load_manifests",
    "resolve_secret",
]

_SECRET_FIELDS = ("apiVersion", "kind", "metadata", "type", "data", "stringData", "immutable")


@dataclass(frozen=True)
class LoadedPipeline:
    """A valid pipeline and the document it came from (``pipeline.yaml#2``)."""

    location: str
    pipeline: CdcPipeline

    @property
    def name(self) -> str:
        return self.pipeline.metadata.name


@dataclass(frozen=True)
class LoadedSecret:
    """A v1 Secret document; ``data`` merges base64 ``data`` and ``stringData`` (which wins)."""

    location: str
    name: str
    namespace: str | None
    data: Mapping[str, SecretStr]


@dataclass(frozen=True)
class Manifest:
    """Everything valid that manifest files define."""

    pipelines: list[LoadedPipeline] = field(default_factory=list)
    secrets: dict[str, LoadedSecret] = field(default_factory=dict)

    def resolve_secret(
        self, ref: SecretKeyRef, field_path: str, *, namespace: str | None = None
    ) -> SecretStr:
        return resolve_secret(self, ref, field_path, namespace=namespace)


# A Manifest, or Secrets by name: LoadedSecrets or plain {key: value} mappings (e.g. mounted files).
SecretSource = Manifest | Mapping[str, LoadedSecret | Mapping[str, str | SecretStr]]


def resolve_secret(
    source: SecretSource, ref: SecretKeyRef, field_path: str, *, namespace: str | None = None
) -> SecretStr:
    """The value ``ref`` points at. ``source`` is a Manifest or Secrets by name (``{name: {key: value}}``).

    Raises SecretRefError naming the field, the Secret and the key. ``namespace``, when given, is the
    referring pipeline's; a Secret of another namespace does not count.
    """
    secrets = source.secrets if isinstance(source, Manifest) else source
    leaf = field_path.rsplit(".", 1)[-1]
    entry = secrets.get(ref.name)
    if (
        isinstance(entry, LoadedSecret)
        and namespace is not None
        and entry.namespace is not None
        and entry.namespace != namespace
    ):
        entry = None
    if entry is None:
        known = ", ".join(sorted(secrets)) or "none"
        raise SecretRefError(
            f"{field_path}: Secret {ref.name!r} not found (Secrets defined: {known}); define a v1 Secret "
            f"named {ref.name!r} with key {ref.key!r}, or fix {leaf}.name",
            field_path=field_path,
            secret=ref.name,
            key=ref.key,
        )
    data = entry.data if isinstance(entry, LoadedSecret) else entry
    if ref.key not in data:
        keys = ", ".join(sorted(data)) or "none"
        raise SecretRefError(
            f"{field_path}: Secret {ref.name!r} has no key {ref.key!r} (keys: {keys}); add key "
            f"{ref.key!r} to the Secret, or fix {leaf}.key",
            field_path=field_path,
            secret=ref.name,
            key=ref.key,
        )
    value = data[ref.key]
    return value if isinstance(value, SecretStr) else SecretStr(value)


class _Collector:
    """Errors sorted by where they are, whichever pass found them."""

    def __init__(self) -> None:
        self._errors: list[tuple[int, int, int, str]] = []

    def add(self, file_no: int, doc_no: int, message: str) -> None:
        self._errors.append((file_no, doc_no, len(self._errors), message))

    def messages(self) -> list[str]:
        return [message for *_, message in sorted(self._errors)]


def _label(location: str, data: Mapping[str, Any]) -> str:
    kind = data.get("kind")
    metadata = data.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    if not isinstance(kind, str):
        return location
    if isinstance(name, str) and name:
        return f"{location} ({kind} {name})"
    return f"{location} ({kind})"


def _load_secret(data: Mapping[str, Any], location: str) -> tuple[LoadedSecret | None, list[str]]:
    problems: list[str] = []
    for key in data:
        if key not in _SECRET_FIELDS:
            problems.append(f"{key}: unknown field; allowed fields here: {', '.join(_SECRET_FIELDS)}")
    metadata = data.get("metadata")
    name: str | None = None
    namespace: str | None = None
    if not isinstance(metadata, dict):
        problems.append(f"metadata: expected a mapping with name, got {describe_type(metadata)}")
    else:
        raw_name, raw_namespace = metadata.get("name"), metadata.get("namespace")
        if not isinstance(raw_name, str):
            problems.append("metadata.name: required field is missing")
        else:
            try:
                check_secret_name(raw_name)
                name = raw_name
            except SpecError as err:
                problems.append(f"metadata.name: {err.message}")
        if raw_namespace is not None and not isinstance(raw_namespace, str):
            problems.append(f"metadata.namespace: expected a string, got {show_value(raw_namespace)}")
        namespace = raw_namespace if isinstance(raw_namespace, str) else None
    values: dict[str, SecretStr] = {}
    for section in ("data", "stringData"):
        entries = data.get(section)
        if entries is None:
            continue
        if not isinstance(entries, dict):
            problems.append(f"{section}: expected a mapping of keys to values, got {describe_type(entries)}")
            continue
        for key, value in entries.items():
            path = f"{section}.{key}"
            try:
                check_secret_key(str(key))
            except SpecError as err:
                problems.append(f"{path}: {err.message}")
                continue
            # A key with a bad value still counts as present, so references to it report nothing
            # more; the manifest is refused anyway. Only the value's type is named: it is a secret.
            values[str(key)] = SecretStr("")
            if not isinstance(value, str):
                hint = "base64 text" if section == "data" else "a string (quote the value in YAML)"
                problems.append(f"{path}: expected {hint}, got {describe_type(value)}")
            elif section == "data":
                try:
                    decoded = base64.b64decode("".join(value.split()), validate=True)
                    values[str(key)] = SecretStr(decoded.decode("utf-8"))
                except (binascii.Error, ValueError):
                    problems.append(f"{path}: not valid base64; put plain text under stringData instead")
            else:
                values[str(key)] = SecretStr(value)
    if "type" in data and not isinstance(data["type"], str):
        problems.append(f"type: expected a string, got {show_value(data['type'])}")
    if "immutable" in data and not isinstance(data["immutable"], bool):
        problems.append(f"immutable: expected true or false, got {show_value(data['immutable'])}")
    if name is None:
        return None, problems
    return LoadedSecret(location=location, name=name, namespace=namespace, data=values), problems


def _reveal(secret: LoadedSecret) -> dict[str, str]:
    return {key: value.get_secret_value() for key, value in secret.data.items()}


def _document_errors(doc: YamlDocument, label: str) -> list[str]:
    return [
        f"{label}: {dup.path}: duplicate key {dup.key!r} at line {dup.line} (first at line "
        f"{dup.first_line}); each key may appear once"
        for dup in doc.duplicates
    ]


class _Loader:
    def __init__(self) -> None:
        self.errors = _Collector()
        self.pipelines: list[tuple[int, int, str, LoadedPipeline]] = []
        self.secrets: dict[str, LoadedSecret] = {}

    def load_file(self, file_no: int, path: str) -> None:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as err:
            self.errors.add(file_no, 0, f"{path}: cannot read: {err.strerror or err}")
            return
        except UnicodeDecodeError:
            self.errors.add(file_no, 0, f"{path}: not UTF-8 text")
            return
        syntax_error: str | None = None
        try:
            documents = load_documents(text)
        except YamlSyntaxError as err:
            documents, syntax_error = err.documents, err.message
        for doc in documents:
            self.load_document(file_no, f"{path}#{doc.index}", doc)
        if syntax_error is not None:
            self.errors.add(file_no, len(documents) + 1, f"{path}: {syntax_error}")

    def load_document(self, file_no: int, location: str, doc: YamlDocument) -> None:
        def error(message: str) -> None:
            self.errors.add(file_no, doc.index, message)

        data = doc.data
        if data is None:
            return
        if not isinstance(data, dict):
            error(
                f"{location}: expected a Kubernetes object (a mapping with apiVersion and kind), "
                f"got {describe_type(data)}"
            )
            return
        label = _label(location, data)
        for message in _document_errors(doc, label):
            error(message)
        api_version, kind = data.get("apiVersion"), data.get("kind")
        if kind == KIND:
            if "apiVersion" not in data:  # the model defaults it; a manifest must say it
                error(f"{label}: apiVersion: required field is missing; expected {API_VERSION}")
            try:
                pipeline = CdcPipeline.from_k8s(data)
            except ValidationError as err:
                for line in translate_errors(err, CdcPipeline):
                    error(f"{label}: {line}")
                return
            self.pipelines.append((file_no, doc.index, label, LoadedPipeline(location, pipeline)))
        elif kind == "Secret" and api_version == "v1":
            secret, problems = _load_secret(data, location)
            for problem in problems:
                error(f"{label}: {problem}")
            if secret is None:
                return
            earlier = self.secrets.setdefault(secret.name, secret)
            # The same Secret repeated in several files (one per pipeline) is fine.
            if earlier is not secret and _reveal(earlier) != _reveal(secret):
                error(
                    f"{label}: metadata.name: another Secret named {secret.name!r} has different data "
                    f"({earlier.location})"
                )
        elif kind == "Secret":
            error(f"{label}: apiVersion: must be v1, got {show_value(api_version)}")
        elif not isinstance(kind, str):
            error(f"{label}: kind: required field is missing; expected {KIND} or Secret")
        else:
            error(
                f"{label}: unsupported kind {api_version}/{kind}; manifest files hold "
                f"{API_VERSION}/{KIND} and v1/Secret documents"
            )

    def check_pipelines(self, *, check_secrets: bool) -> None:
        """Names unique per namespace; every secret reference resolves (Secrets may come later),
        unless ``check_secrets`` is false."""
        seen: dict[tuple[str | None, str], str] = {}
        for file_no, doc_no, label, loaded in self.pipelines:
            meta = loaded.pipeline.metadata
            other = seen.setdefault((meta.namespace, meta.name), loaded.location)
            if other != loaded.location:
                self.errors.add(
                    file_no,
                    doc_no,
                    f"{label}: metadata.name: another CdcPipeline is named {meta.name!r} ({other})",
                )
            if not check_secrets:
                continue
            for field_path, ref in loaded.pipeline.secret_refs():
                try:
                    resolve_secret(self.secrets, ref, field_path, namespace=meta.namespace)
                except SecretRefError as err:
                    self.errors.add(file_no, doc_no, f"{label}: {err.message}")


def load_manifests(paths: Sequence[str], *, check_secrets: bool = True) -> Manifest:
    """Load and validate manifest files; raises ManifestError listing every problem in all of them.

    ``check_secrets=False`` leaves secret references unresolved: a GitOps repository keeps its
    Secrets sealed, external or elsewhere, and ``sparkcdc validate --secrets=skip`` still checks
    everything else. Secret documents that are present are validated either way. Commands that
    use the values (run, verify) always check.
    """
    loader = _Loader()
    for file_no, path in enumerate(paths):
        loader.load_file(file_no, path)
    loader.check_pipelines(check_secrets=check_secrets)
    if not loader.pipelines and not loader.errors.messages():
        loader.errors.add(len(paths), 0, f"{', '.join(paths)}: no {KIND} document found")
    messages = loader.errors.messages()
    if messages:
        raise ManifestError(messages)
    return Manifest(pipelines=[loaded for *_, loaded in loader.pipelines], secrets=loader.secrets)
