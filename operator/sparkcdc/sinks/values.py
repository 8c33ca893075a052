"""Canonical JSON rendering of row values, shared by the changelog and console sinks."""

from __future__ import annotations

import base64
import datetime as dt
import json
from decimal import Decimal
from typing import Any


def json_value(value: Any) -> Any:
    """A JSON-safe value that loses nothing: exact decimals as strings, bytes as base64."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return format_duration(value)
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    return str(value)


def format_duration(value: dt.timedelta) -> str:
    """MySQL TIME text (``-838:59:59.000000`` … ``838:59:59.000000``)."""
    micros = (value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds
    sign = "-" if micros < 0 else ""
    micros = abs(micros)
    seconds, frac = divmod(micros, 1_000_000)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{sign}{hours:02d}:{minutes:02d}:{secs:02d}.{frac:06d}"


def dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=json_value)
