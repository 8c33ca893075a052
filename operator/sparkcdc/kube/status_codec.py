"""How a checkpoint document survives being a JSON merge patch into ``status.checkpoint``.

A merge patch (RFC 7386) deletes keys whose value is null and merges nested objects instead of
replacing them, and the apiserver keeps integers only as int64. So the stored form:

* encodes ``None`` as ``{"$null": 1}`` and integers beyond int64 as ``{"$int": "<digits>"}``;
  keys starting with ``$`` are escaped by one more ``$``, so the tags cannot collide with data;
* is written as the diff against what the server holds (keys that disappeared become null), so
  the merge result is exactly the new document.

A document too big for the object is stored zlib-compressed in ConfigMaps and the status holds a
``{"$spill": ...}`` pointer (reserved, as keys starting with ``$`` are escaped).
"""

from __future__ import annotations

import base64
import hashlib
import json
import zlib
from typing import Any

from sparkcdc.state.base import StateError

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
NULL_TAG, INT_TAG, SPILL_TAG = "$null", "$int", "$spill"
CHUNK_BYTES = 512 * 1024  # compressed bytes per ConfigMap; base64 keeps it well under 1 MiB


def encode_value(value: Any) -> Any:
    """``value`` with nulls, huge integers and ``$`` keys made safe for a merge patch."""
    if value is None:
        return {NULL_TAG: 1}
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and not INT64_MIN <= value <= INT64_MAX:
        return {INT_TAG: str(value)}
    if isinstance(value, dict):
        return {_escape(str(k)): encode_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode_value(v) for v in value]
    return value


def decode_value(value: Any) -> Any:
    if isinstance(value, dict):
        if len(value) == 1:
            ((key, item),) = value.items()
            if key == NULL_TAG:
                return None
            if key == INT_TAG:
                return int(item)
        return {_unescape(k): decode_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode_value(v) for v in value]
    return value


def _escape(key: str) -> str:
    return "$" + key if key.startswith("$") else key


def _unescape(key: str) -> str:
    return key[1:] if key.startswith("$$") else key


def merge_diff(old: Any, new: Any) -> Any:
    """The merge patch turning ``old`` into ``new`` (``new`` must hold no nulls)."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return new
    patch: dict[str, Any] = {key: None for key in old if key not in new}
    for key, value in new.items():
        if key not in old:
            patch[key] = value
        elif old[key] != value:
            patch[key] = merge_diff(old[key], value)
    return patch


def is_spill_pointer(stored: Any) -> bool:
    return isinstance(stored, dict) and set(stored) == {SPILL_TAG}


def spill_chunks(document: dict[str, Any]) -> tuple[str, list[bytes]]:
    """(sha256 of the JSON text, zlib-compressed chunks)."""
    text = json.dumps(document, separators=(",", ":"), sort_keys=True).encode()
    packed = zlib.compress(text, 6)
    chunks = [packed[i : i + CHUNK_BYTES] for i in range(0, len(packed), CHUNK_BYTES)] or [b""]
    return hashlib.sha256(text).hexdigest(), chunks


def chunk_data(chunk: bytes) -> dict[str, str]:
    """A ConfigMap's ``binaryData``."""
    return {"chunk": base64.b64encode(chunk).decode("ascii")}


def join_chunks(binary_data: list[dict[str, str]], sha256: str) -> dict[str, Any]:
    """The document back from the ConfigMaps' ``binaryData``; checks it is the one pointed at."""
    packed = b"".join(base64.b64decode(data.get("chunk", "")) for data in binary_data)
    try:
        text = zlib.decompress(packed)
    except zlib.error as err:
        raise StateError(f"the spilled checkpoint is corrupt: {err}") from err
    if hashlib.sha256(text).hexdigest() != sha256:
        raise StateError("the spilled checkpoint does not match its checksum in status.checkpoint")
    document: dict[str, Any] = json.loads(text)
    return document
