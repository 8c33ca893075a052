"""JSON building blocks for the checkpoint codec: exact key values, run-length lists, packing.

Everything produced here survives a JSON round trip through any parser, including Kubernetes'
(which keeps integers only up to int64 and may print ``1.0`` as ``1``) and JavaScript clients
(integers only up to 2**53): plain JSON numbers are used only for integers of magnitude below
2**53, anything else is a one-key object tagging a string payload.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import zlib
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

from sparkcdc.core.splits import Key, KeyValue

__all__ = [
    "CheckpointError",
    "decode_int",
    "decode_key",
    "decode_value",
    "deltas",
    "encode_int",
    "encode_key",
    "encode_value",
    "pack",
    "rle_decode",
    "rle_encode",
    "runs_decode",
    "runs_encode",
    "undeltas",
    "unpack",
]

MAX_SAFE_INT = 2**53 - 1
PACK_THRESHOLD = 16 * 1024


class CheckpointError(ValueError):
    """A checkpoint document that this version of sparkcdc cannot read."""


# --------------------------------------------------------------------------------------------
# Integers and key values
# --------------------------------------------------------------------------------------------


def encode_int(value: int) -> int | str:
    """A JSON-safe integer: a number below 2**53 in magnitude, else its decimal string."""
    return value if -MAX_SAFE_INT <= value <= MAX_SAFE_INT else str(value)


def decode_int(item: Any) -> int:
    if isinstance(item, bool) or not isinstance(item, (int, str)):
        raise CheckpointError(f"expected an integer, got {item!r}")
    return int(item)


def _td_micros(value: dt.timedelta) -> int:
    return value // dt.timedelta(microseconds=1)


# Tag -> (decoder). Encoding is by type in ``encode_value``.
_DECODERS: dict[str, Callable[[str], KeyValue]] = {
    "i": int,
    "d": Decimal,
    "f": float,
    "b": lambda s: base64.b64decode(s.encode("ascii"), validate=True),
    "dt": dt.datetime.fromisoformat,
    "da": dt.date.fromisoformat,
    "t": dt.time.fromisoformat,
    "td": lambda s: dt.timedelta(microseconds=int(s)),
}


def encode_value(value: KeyValue | None) -> Any:
    """One key value as JSON: safe ints and strings as themselves, ``None`` as null, anything
    else (big int, Decimal, float, bytes, datetime, date, time, timedelta) as ``{tag: text}``."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, int):  # bool is stored as int
        return int(value) if -MAX_SAFE_INT <= value <= MAX_SAFE_INT else {"i": str(value)}
    if isinstance(value, Decimal):
        return {"d": str(value)}
    if isinstance(value, float):
        return {"f": repr(value)}
    if isinstance(value, bytes):
        return {"b": base64.b64encode(value).decode("ascii")}
    if isinstance(value, dt.datetime):
        return {"dt": value.isoformat()}
    if isinstance(value, dt.date):
        return {"da": value.isoformat()}
    if isinstance(value, dt.time):
        return {"t": value.isoformat()}
    if isinstance(value, dt.timedelta):
        return {"td": str(_td_micros(value))}
    raise TypeError(f"cannot encode key value {value!r} of type {type(value).__name__}")


def decode_value(item: Any) -> KeyValue | None:
    if item is None or isinstance(item, str):
        return item
    if isinstance(item, int) and not isinstance(item, bool):
        return item
    if isinstance(item, dict) and len(item) == 1:
        ((tag, text),) = item.items()
        decoder = _DECODERS.get(tag)
        if decoder is not None and isinstance(text, str):
            try:
                return decoder(text)
            except (ValueError, ArithmeticError) as exc:
                raise CheckpointError(f"bad {tag!r} key value {text!r}: {exc}") from exc
    raise CheckpointError(f"unrecognised key value {item!r}")


def encode_key(key: Key) -> list[Any]:
    return [encode_value(v) for v in key]


def decode_key(item: Any) -> Key:
    if not isinstance(item, list):
        raise CheckpointError(f"expected a key (a list of values), got {item!r}")
    return tuple(decode_value(v) for v in item)  # type: ignore[misc]


# --------------------------------------------------------------------------------------------
# Run-length lists
# --------------------------------------------------------------------------------------------


def deltas(values: Sequence[int]) -> list[int]:
    """Differences from the previous value (the first from 0)."""
    return [b - a for a, b in zip([0, *values], values, strict=False)]


def undeltas(steps: Sequence[int]) -> list[int]:
    total = 0
    out: list[int] = []
    for step in steps:
        total += step
        out.append(total)
    return out


def rle_encode(values: Sequence[int]) -> list[Any]:
    """Run-length encode integers: a lone value as itself, a run as ``[value, count]``."""
    out: list[Any] = []
    i = 0
    while i < len(values):
        j = i + 1
        while j < len(values) and values[j] == values[i]:
            j += 1
        value = encode_int(values[i])
        out.append(value if j - i == 1 else [value, j - i])
        i = j
    return out


def rle_decode(items: Any) -> list[int]:
    if not isinstance(items, list):
        raise CheckpointError(f"expected a run-length list, got {items!r}")
    out: list[int] = []
    for item in items:
        if isinstance(item, list):
            if len(item) != 2:
                raise CheckpointError(f"bad run {item!r}")
            out.extend([decode_int(item[0])] * decode_int(item[1]))
        else:
            out.append(decode_int(item))
    return out


def runs_encode(indexes: Sequence[int]) -> list[int]:
    """A sorted set of non-negative indexes as alternating gap / run lengths:
    ``[0, 1, 2, 5, 6]`` -> ``[0, 3, 2, 2]`` (take 3 from 0, skip 2, take 2)."""
    out: list[int] = []
    cursor = 0
    i = 0
    while i < len(indexes):
        j = i + 1
        while j < len(indexes) and indexes[j] == indexes[j - 1] + 1:
            j += 1
        out += [indexes[i] - cursor, j - i]
        cursor = indexes[j - 1] + 1
        i = j
    return out


def runs_decode(items: Any) -> list[int]:
    if not isinstance(items, list) or len(items) % 2:
        raise CheckpointError(f"expected gap/run pairs, got {items!r}")
    out: list[int] = []
    cursor = 0
    for gap, count in zip(items[::2], items[1::2], strict=True):
        start = cursor + decode_int(gap)
        out.extend(range(start, start + decode_int(count)))
        cursor = start + decode_int(count)
    return out


# --------------------------------------------------------------------------------------------
# Packing big blocks
# --------------------------------------------------------------------------------------------


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def pack(obj: Any, threshold: int = PACK_THRESHOLD) -> Any:
    """``obj`` itself, or ``{"zlib": base64}`` of its JSON when that is big and it helps."""
    text = _dumps(obj)
    if len(text) <= threshold:
        return obj
    packed = base64.b64encode(zlib.compress(text.encode("utf-8"), 9)).decode("ascii")
    return {"zlib": packed} if len(packed) < len(text) else obj


def unpack(obj: Any) -> Any:
    if isinstance(obj, dict) and set(obj) == {"zlib"}:
        try:
            return json.loads(zlib.decompress(base64.b64decode(obj["zlib"], validate=True)))
        except (ValueError, zlib.error) as exc:
            raise CheckpointError(f"corrupt packed block: {exc}") from exc
    return obj
