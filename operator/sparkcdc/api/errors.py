"""Error types of the api package, and pydantic errors translated into messages a user can act on."""

from __future__ import annotations

import datetime as dt
import difflib
import types
from collections.abc import Sequence
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from sparkcdc.api.base import SpecError


class ManifestError(Exception):
    """Manifest files that can't be used; ``messages`` lists every problem found, one line each."""

    def __init__(self, messages: Sequence[str]) -> None:
        self.messages = list(messages)
        super().__init__("\n".join(self.messages))


class SecretRefError(LookupError):
    """A ``*SecretRef`` that names a missing Secret or key."""

    def __init__(self, message: str, *, field_path: str, secret: str, key: str) -> None:
        super().__init__(message)
        self.message = message
        self.field_path = field_path
        self.secret = secret
        self.key = key

    def __str__(self) -> str:
        return self.message


# Values under these names are credentials or may be; messages describe their type only.
_SENSITIVE = ("password", "secret", "token", "credential")
_MAX_SHOWN = 60


def show_value(value: object) -> str:
    """A short rendering of a user's input for an error message."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        text = value if len(value) <= _MAX_SHOWN else value[:_MAX_SHOWN] + "..."
        return repr(text)
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat()
    return describe_type(value)


def describe_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, (dt.datetime, dt.date)):
        return "a timestamp"
    return type(value).__name__


def _unwrap(tp: Any) -> Any:
    while True:
        origin = get_origin(tp)
        if origin is Annotated:
            tp = get_args(tp)[0]
            continue
        if origin in (Union, types.UnionType):
            args = [a for a in get_args(tp) if a is not type(None)]
            if len(args) == 1:
                tp = args[0]
                continue
        return tp


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _field_by_key(model: type[BaseModel], key: str) -> tuple[str, Any] | None:
    for name, info in model.model_fields.items():
        if key in (info.alias, name):
            return info.alias or name, info.annotation
    return None


def _union_variants(tp: Any) -> list[type[BaseModel]]:
    if get_origin(tp) in (Union, types.UnionType):
        return [a for a in get_args(tp) if _is_model(a)]
    return []


def _tag_of(model: type[BaseModel]) -> str | None:
    info = model.model_fields.get("type")
    if info is not None and get_origin(info.annotation) is Literal:
        return str(get_args(info.annotation)[0])
    return None


class _Located:
    """Where an error's location leads: display path, the type there, and the union passed through."""

    def __init__(self, path: str, tp: Any, union: list[type[BaseModel]]) -> None:
        self.path = path
        self.tp = tp
        self.union = union


def locate(root: type[BaseModel], loc: Sequence[str | int]) -> _Located:
    """Follow a pydantic location through the model types, rendering it as ``spec.source.tables[0]``.

    Discriminated-union tags in the location (``sink.jdbc.url``) are dropped from the path: the user
    wrote ``sink.url``.
    """
    path = ""
    tp: Any = root
    union: list[type[BaseModel]] = []
    for seg in loc:
        tp = _unwrap(tp)
        if seg == "[key]":
            # pydantic's marker for an error in a map's key rather than its value
            continue
        variants = _union_variants(tp)
        if variants and isinstance(seg, str):
            chosen = next((v for v in variants if _tag_of(v) == seg), None)
            if chosen is not None:
                union = variants
                tp = chosen
                continue
        origin = get_origin(tp)
        if _is_model(tp) and isinstance(seg, str):
            found = _field_by_key(tp, seg)
            name, tp = found if found is not None else (seg, None)
            path = f"{path}.{name}" if path else name
        elif origin in (list, tuple) and isinstance(seg, int):
            tp = get_args(tp)[0] if get_args(tp) else None
            path = f"{path}[{seg}]"
        elif origin is dict:
            tp = get_args(tp)[1] if get_args(tp) else None
            path = f"{path}[{seg}]"
        else:
            tp = None
            path = f"{path}[{seg}]" if isinstance(seg, int) else (f"{path}.{seg}" if path else str(seg))
    return _Located(path, tp, union)


def _aliases(model: type[BaseModel]) -> list[str]:
    return [info.alias or name for name, info in model.model_fields.items()]


def _literal_values(tp: Any) -> list[str]:
    tp = _unwrap(tp)
    if get_origin(tp) is Literal:
        return [str(v) for v in get_args(tp)]
    return []


def _unknown_field(err: ErrorDetails, root: type[BaseModel]) -> str:
    loc = err["loc"]
    here = locate(root, loc[:-1])
    model = _unwrap(here.tp)
    key = str(loc[-1])
    if not _is_model(model):
        return "unknown field"
    allowed = _aliases(model)
    message = "unknown field"
    by_name = {name: info.alias or name for name, info in model.model_fields.items()}
    if key in by_name:
        message += f" (fields are camelCase: {by_name[key]})"
    else:
        close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.7)
        if close:
            message += f" (did you mean {close[0]}?)"
    message += "; allowed fields here: " + ", ".join(allowed)
    owners = [_tag_of(v) for v in here.union if v is not model and key in _aliases(v)]
    if owners:
        kinds = " or ".join(str(o) for o in owners)
        message += f" ({key} is a field of type {kinds})"
    return message


_EXPECTED = {
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "string_type": "a string",
    "list_type": "a list",
    "tuple_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "dataclass_type": "a mapping",
    "datetime_type": "an RFC 3339 timestamp like 2024-05-01T12:00:00Z",
    "datetime_parsing": "an RFC 3339 timestamp like 2024-05-01T12:00:00Z",
    "datetime_from_date_parsing": "an RFC 3339 timestamp like 2024-05-01T12:00:00Z",
}


def _plural(count: object, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _message(err: ErrorDetails, root: type[BaseModel], located: _Located, sensitive: bool) -> str:
    kind = err["type"]
    ctx: dict[str, Any] = dict(err.get("ctx") or {})
    value = err.get("input")
    got = describe_type(value) if sensitive else show_value(value)
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        return _unknown_field(err, root)
    if kind in _EXPECTED:
        return f"expected {_EXPECTED[kind]}, got {got}"
    if kind == "literal_error":
        allowed = _literal_values(located.tp)
        if len(allowed) == 1:
            return f"must be {allowed[0]}, got {got}"
        return f"must be one of {', '.join(allowed)}; got {got}"
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        tags = ", ".join(str(_tag_of(v)) for v in _union_variants(_unwrap(located.tp)))
        what = located.path.rsplit(".", 1)[-1]
        if kind == "union_tag_not_found":
            return f"required field is missing; must be one of {tags}"
        return f"unknown {what} type {show_value(ctx.get('tag'))}; must be one of {tags}"
    if kind == "greater_than":
        return f"must be greater than {ctx['gt']}, got {got}"
    if kind == "greater_than_equal":
        return f"must be at least {ctx['ge']}, got {got}"
    if kind == "less_than":
        return f"must be less than {ctx['lt']}, got {got}"
    if kind == "less_than_equal":
        return f"must be at most {ctx['le']}, got {got}"
    if kind == "string_too_short":
        if ctx.get("min_length") == 1:
            return "must not be empty"
        return f"must be at least {_plural(ctx.get('min_length'), 'character')} long"
    if kind == "string_too_long":
        return f"must be at most {_plural(ctx.get('max_length'), 'character')} long"
    if kind == "too_short":
        if ctx.get("min_length") == 1:
            return "must not be empty"
        return f"must have at least {_plural(ctx.get('min_length'), 'item')}"
    if kind == "too_long":
        return f"must have at most {_plural(ctx.get('max_length'), 'item')}, got {ctx.get('actual_length')}"
    if kind == "timezone_aware":
        return "must include a time zone offset, e.g. 2024-05-01T12:00:00Z"
    if kind == "value_error" and isinstance(ctx.get("error"), SpecError):
        return str(ctx["error"].message)
    message = str(err.get("msg", kind))
    return message.removeprefix("Value error, ").removeprefix("Assertion failed, ")


def translate_errors(error: ValidationError, root: type[BaseModel]) -> list[str]:
    """One ``<field.path>: <what is wrong and what is expected>`` line per pydantic error."""
    lines: list[str] = []
    for err in error.errors(include_url=False):
        loc: tuple[str | int, ...] = tuple(err["loc"])
        ctx_error = (err.get("ctx") or {}).get("error")
        if err["type"] == "value_error" and isinstance(ctx_error, SpecError):
            loc = loc + ctx_error.loc
        located = locate(root, loc)
        if err["type"] == "extra_forbidden" and loc:
            # The key as the user wrote it, not the field it may be mistaken for.
            parent = locate(root, loc[:-1]).path
            located = _Located(f"{parent}.{loc[-1]}" if parent else str(loc[-1]), None, [])
        sensitive = any(word in str(seg).lower() for seg in loc for word in _SENSITIVE)
        message = _message(err, root, located, sensitive)
        value = err.get("input")
        if sensitive and isinstance(value, str) and value:
            message = message.replace(value, "***")
        path = located.path
        if err["type"] in ("union_tag_invalid", "union_tag_not_found"):
            path = f"{path}.type" if path else "type"
        lines.append(f"{path}: {message}" if path else message)
    return lines
