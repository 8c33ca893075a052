"""Compact blocks of the checkpoint document: offsets, the watermark table, boundaries, and
finished-split lists. ``checkpoint.py`` assembles them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sparkcdc.core.jsoncodec import (
    CheckpointError,
    decode_int,
    decode_key,
    deltas,
    encode_int,
    encode_key,
    rle_decode,
    rle_encode,
    runs_decode,
    runs_encode,
    undeltas,
)
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.splits import FinishedSplitInfo, Key, SnapshotSplit

__all__ = [
    "WatermarkTable",
    "decode_boundaries",
    "decode_finished",
    "decode_offset",
    "encode_boundaries",
    "encode_finished",
    "encode_offset",
]


# --------------------------------------------------------------------------------------------
# Single offsets
# --------------------------------------------------------------------------------------------


def encode_offset(offset: BinlogOffset | None) -> dict[str, Any] | None:
    if offset is None:
        return None
    doc: dict[str, Any] = {"file": offset.file, "pos": encode_int(offset.pos)}
    if offset.gtid_set:
        doc["gtid"] = offset.gtid_set
    return doc


def decode_offset(doc: Any) -> BinlogOffset | None:
    if doc is None:
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("file"), str):
        raise CheckpointError(f"bad binlog offset {doc!r}")
    return BinlogOffset(doc["file"], decode_int(doc.get("pos")), str(doc.get("gtid", "")))


# --------------------------------------------------------------------------------------------
# The table of distinct high watermarks
# --------------------------------------------------------------------------------------------


def _offset_order(offset: BinlogOffset) -> tuple[tuple[int, int], str, str]:
    return offset.sort_key(), offset.file, offset.gtid_set


def _common_base(files: Sequence[str]) -> str:
    """The shared ``name.`` prefix of binlog file names, or "" when they do not share one."""
    bases = {f.rpartition(".")[0] + "." for f in files if "." in f}
    if len(bases) == 1 and all("." in f for f in files):
        return bases.pop()
    return ""


@dataclass
class WatermarkTable:
    """Distinct offsets, sorted; finished splits refer to them by position."""

    offsets: list[BinlogOffset] = field(default_factory=list)
    _positions: dict[BinlogOffset, int] = field(default_factory=dict, repr=False)

    @classmethod
    def build(cls, offsets: Iterable[BinlogOffset]) -> WatermarkTable:
        distinct = sorted(set(offsets), key=_offset_order)
        return cls(distinct, {o: i for i, o in enumerate(distinct)})

    def position(self, offset: BinlogOffset) -> int:
        return self._positions[offset]

    def encode(self) -> dict[str, Any]:
        """``{"base", "files", "offsets", "gtids"?}``: each offset is ``[file_ref, pos]`` when
        its file differs from the previous offset's, else the position delta from it."""
        files = list(dict.fromkeys(o.file for o in self.offsets))
        base = _common_base(files)
        refs = {f: i for i, f in enumerate(files)}
        entries: list[Any] = []
        previous: BinlogOffset | None = None
        for offset in self.offsets:
            if previous is not None and previous.file == offset.file:
                entries.append(encode_int(offset.pos - previous.pos))
            else:
                entries.append([refs[offset.file], encode_int(offset.pos)])
            previous = offset
        doc: dict[str, Any] = {"base": base, "files": [f[len(base) :] for f in files], "offsets": entries}
        gtids = [[i, o.gtid_set] for i, o in enumerate(self.offsets) if o.gtid_set]
        if gtids:
            doc["gtids"] = gtids
        return doc

    @staticmethod
    def decode(doc: Any) -> list[BinlogOffset]:
        if not doc:
            return []
        base = str(doc.get("base", ""))
        files = [base + str(f) for f in doc.get("files", [])]
        gtids = {int(i): str(g) for i, g in doc.get("gtids", [])}
        offsets: list[BinlogOffset] = []
        file, pos = "", 0
        for i, entry in enumerate(doc.get("offsets", [])):
            if isinstance(entry, list):
                file, pos = files[int(entry[0])], decode_int(entry[1])
            elif offsets:
                pos += decode_int(entry)
            else:
                raise CheckpointError("the first watermark must name its file")
            offsets.append(BinlogOffset(file, pos, gtids.get(i, "")))
        return offsets


# --------------------------------------------------------------------------------------------
# Plan boundaries
# --------------------------------------------------------------------------------------------


def _int_values(boundaries: Sequence[Key]) -> list[int] | None:
    """The values of single-column integer keys (not bools), or None for any other keys."""
    values: list[int] = []
    for key in boundaries:
        if len(key) != 1 or type(key[0]) is not int:
            return None
        values.append(key[0])
    return values


def encode_boundaries(boundaries: Sequence[Key]) -> dict[str, Any]:
    """Single-column integer boundaries as run-length encoded deltas (``{"ints": [...]}``: an
    even plan is ``[first, [step, count]]``); anything else as tagged keys (``{"keys": ...}``)."""
    values = _int_values(boundaries)
    if values is not None:
        return {"ints": rle_encode(deltas(values))}
    return {"keys": [encode_key(k) for k in boundaries]}


def decode_boundaries(doc: Any) -> list[Key]:
    if isinstance(doc, dict) and "ints" in doc:
        return [(value,) for value in undeltas(rle_decode(doc["ints"]))]
    if isinstance(doc, dict) and isinstance(doc.get("keys"), list):
        return [decode_key(k) for k in doc["keys"]]
    raise CheckpointError(f"bad boundaries block {doc!r}")


# --------------------------------------------------------------------------------------------
# Finished splits of one table
# --------------------------------------------------------------------------------------------


def encode_finished(infos: Sequence[FinishedSplitInfo], table: WatermarkTable) -> dict[str, Any]:
    """``{"splits": gap/run list of finished indexes, "watermarks": run-length list of
    watermark-position deltas, "rows": run-length list of row counts}``, in index order."""
    ordered = sorted(infos, key=lambda i: i.split.index)
    indexes = [i.split.index for i in ordered]
    if len(set(indexes)) != len(indexes):
        raise ValueError(f"{ordered[0].split.table} has duplicate finished split indexes")
    positions = [table.position(i.high_watermark) for i in ordered]
    return {
        "splits": runs_encode(indexes),
        "watermarks": rle_encode(deltas(positions)),
        "rows": rle_encode([i.rows for i in ordered]),
    }


def decode_finished(
    doc: Any, splits: Sequence[SnapshotSplit], watermarks: Sequence[BinlogOffset]
) -> list[FinishedSplitInfo]:
    if not isinstance(doc, dict):
        raise CheckpointError(f"bad finished-splits block {doc!r}")
    indexes = runs_decode(doc.get("splits", []))
    positions = undeltas(rle_decode(doc.get("watermarks", [])))
    rows = rle_decode(doc.get("rows", []))
    if not len(indexes) == len(positions) == len(rows):
        raise CheckpointError("finished-splits block has lists of different lengths")
    infos: list[FinishedSplitInfo] = []
    for index, position, count in zip(indexes, positions, rows, strict=True):
        if not 0 <= index < len(splits) or not 0 <= position < len(watermarks):
            raise CheckpointError(f"finished split {index} or watermark {position} out of range")
        infos.append(FinishedSplitInfo(splits[index], watermarks[position], count))
    return infos
