"""The pipeline checkpoint and its compact JSON codec (kept in ``status.checkpoint``).

The checkpoint is the driver's whole progress: each table's phase, its planned splits, every
finished split with its high watermark, whether the snapshot is complete, the committed binlog
offset, the source position observed when the snapshot finished (``--exit-when-caught-up``),
the pipeline's server-id range, the source server that wrote those offsets, and the definition of
each streamed table in force at the binlog offset (``definitions``: opaque JSON documents of
mysql/schema_codec.py, version 2 on; engine/schema_history.py). It must stay
small enough for a Kubernetes object even for tables with tens of thousands of splits, so the
encoding is compact:

* a plan is stored as its boundary list (splits are contiguous), integer keys delta- and
  run-length encoded — an even plan is a handful of numbers;
* distinct high watermarks are stored once, in one sorted, delta-encoded table per checkpoint,
  with the binlog file name base stored once; finished splits refer to them by index, as a
  run-length list of index deltas, next to a gap/run list of which splits are finished;
* blocks that are still large are zlib-compressed (``jsoncodec.pack``).

Key values are tagged so every ``KeyValue`` type round-trips exactly (``jsoncodec``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

from sparkcdc.core.checkpoint_blocks import (
    WatermarkTable,
    decode_boundaries,
    decode_finished,
    decode_offset,
    encode_boundaries,
    encode_finished,
    encode_offset,
)
from sparkcdc.core.chunking import boundaries_of, splits_from_boundaries
from sparkcdc.core.jsoncodec import CheckpointError, pack, unpack
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.source_identity import SourceIdentity
from sparkcdc.core.splits import FinishedSplitInfo, Key, SnapshotSplit
from sparkcdc.core.tables import TableId

__all__ = [
    "CHECKPOINT_VERSION",
    "Checkpoint",
    "CheckpointError",
    "Phase",
    "TablePlan",
    "TableState",
    "collapse_pure_tables",
    "collapse_table",
    "decode",
    "encode",
    "move_table",
    "without_table",
]

CHECKPOINT_VERSION = 2
# Version 1 lacks ``definitions``: read as a checkpoint without any (the stream then starts with
# the source's current definitions, as that release did).
_READABLE = (1, CHECKPOINT_VERSION)


class Phase(str, Enum):
    SNAPSHOT = "snapshot"
    BINLOG = "binlog"
    FAILED = "failed"


@dataclass(frozen=True)
class TableState:
    phase: Phase = Phase.SNAPSHOT
    error: str = ""


@dataclass(frozen=True)
class TablePlan:
    """A table's planned splits as boundaries: ``[None, b0), [b0, b1), ..., [bn-1, None)``.

    ``complete=False`` while planning is still in progress: then only the splits ending at a
    boundary are known (the open tail ``[bn-1, ...)`` is not).
    """

    boundaries: tuple[Key, ...] = ()
    complete: bool = True
    key_columns: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "boundaries", tuple(tuple(b) for b in self.boundaries))
        object.__setattr__(self, "key_columns", tuple(self.key_columns))

    def splits(self, table: TableId) -> list[SnapshotSplit]:
        return splits_from_boundaries(table, self.boundaries, complete=self.complete)

    def split_count(self) -> int:
        return len(self.boundaries) + (1 if self.complete else 0)

    @classmethod
    def from_splits(
        cls, splits: Sequence[SnapshotSplit], *, complete: bool = True, key_columns: Sequence[str] = ()
    ) -> TablePlan:
        if complete and (not splits or splits[-1].end is not None):
            raise ValueError("a complete plan must end with an unbounded split")
        if not complete and splits and splits[-1].end is None:
            raise ValueError("an incomplete plan cannot end with an unbounded split")
        return cls(tuple(boundaries_of(splits)), complete, tuple(key_columns))


@dataclass(frozen=True)
class Checkpoint:
    version: int = CHECKPOINT_VERSION
    tables: Mapping[TableId, TableState] = field(default_factory=dict)
    plans: Mapping[TableId, TablePlan] = field(default_factory=dict)
    finished: Mapping[TableId, Sequence[FinishedSplitInfo]] = field(default_factory=dict)
    snapshot_done: bool = False
    binlog_offset: BinlogOffset | None = None
    # The source's binlog position observed when the snapshot finished.
    snapshot_end_offset: BinlogOffset | None = None
    server_ids: tuple[int, int] | None = None  # inclusive range
    # The server that wrote the offsets above (core/source_identity.py); None in checkpoints
    # written before it was recorded.
    source: SourceIdentity | None = None
    # Per streamed table, the definition its events are decoded with at ``binlog_offset`` (JSON,
    # encoded by mysql/schema_codec.py, which core does not interpret).
    definitions: Mapping[TableId, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # plain dicts and tuples, so that equal checkpoints compare equal however they were built
        object.__setattr__(self, "tables", dict(self.tables))
        object.__setattr__(self, "definitions", dict(self.definitions))
        object.__setattr__(self, "plans", dict(self.plans))
        object.__setattr__(self, "finished", {t: tuple(i) for t, i in self.finished.items()})
        if self.server_ids is not None:
            object.__setattr__(self, "server_ids", tuple(self.server_ids))

    def all_finished_infos(self) -> list[FinishedSplitInfo]:
        return [info for infos in self.finished.values() for info in infos]

    def max_watermark(self, table: TableId) -> BinlogOffset | None:
        infos = self.finished.get(table, ())
        return max((i.high_watermark for i in infos), key=BinlogOffset.sort_key, default=None)


# --------------------------------------------------------------------------------------------
# Collapsing tables in the pure binlog phase (rule 4)
# --------------------------------------------------------------------------------------------


def _collapsible(checkpoint: Checkpoint, table: TableId) -> str | None:
    """Why ``table`` cannot be collapsed, or None when it can."""
    plan = checkpoint.plans.get(table)
    infos = checkpoint.finished.get(table, ())
    if plan is None or not plan.complete:
        return "its plan is not complete"
    if len({i.split.index for i in infos}) != plan.split_count():
        return "not all of its splits are finished"
    top = checkpoint.max_watermark(table)
    offset = checkpoint.binlog_offset
    if top is None or offset is None or offset < top:
        return f"the committed binlog offset {offset} has not reached its maximum high watermark {top}"
    return None


def collapse_table(checkpoint: Checkpoint, table: TableId) -> Checkpoint:
    """Replace a pure-binlog table's splits by one split ``[None, None)`` at its maximum high
    watermark, and mark the table in the binlog phase.

    Only valid once the committed binlog offset is at or past the table's maximum high
    watermark: a resume then starts past every split's watermark, so the per-split filter can
    no longer make a difference. Raises ``ValueError`` otherwise.
    """
    reason = _collapsible(checkpoint, table)
    if reason is not None:
        raise ValueError(f"cannot collapse {table}: {reason}")
    top = checkpoint.max_watermark(table)
    assert top is not None
    rows = sum(i.rows for i in checkpoint.finished[table])
    plan = checkpoint.plans[table]
    single = FinishedSplitInfo(SnapshotSplit(table, 0, None, None), top, rows)
    return replace(
        checkpoint,
        tables={**checkpoint.tables, table: TableState(Phase.BINLOG)},
        plans={**checkpoint.plans, table: TablePlan((), True, plan.key_columns)},
        finished={**checkpoint.finished, table: (single,)},
    )


def collapse_pure_tables(checkpoint: Checkpoint) -> Checkpoint:
    """``collapse_table`` for every table that qualifies (and is not collapsed already)."""
    for table, plan in checkpoint.plans.items():
        if plan.boundaries and _collapsible(checkpoint, table) is None:
            checkpoint = collapse_table(checkpoint, table)
    return checkpoint


# --------------------------------------------------------------------------------------------
# A table renamed or dropped at the source while streaming (engine/schema_apply.py)
# --------------------------------------------------------------------------------------------


def without_table(checkpoint: Checkpoint, table: TableId) -> Checkpoint:
    """``checkpoint`` without any entry of ``table`` (phase, plan, finished splits, definition): a
    dropped table is forgotten, so a table created later under its name is captured anew."""
    return replace(
        checkpoint,
        tables={t: s for t, s in checkpoint.tables.items() if t != table},
        plans={t: p for t, p in checkpoint.plans.items() if t != table},
        finished={t: i for t, i in checkpoint.finished.items() if t != table},
        definitions={t: d for t, d in checkpoint.definitions.items() if t != table},
    )


def move_table(checkpoint: Checkpoint, old: TableId, new: TableId) -> Checkpoint:
    """``checkpoint`` with ``old``'s entries under ``new`` (a followed ``RENAME TABLE``): its phase,
    plan, finished splits (each split renamed, watermarks and row counts kept) and definition;
    entries ``new`` had are replaced. The same checkpoint when ``old`` has none (a repeat)."""
    held = (checkpoint.tables, checkpoint.plans, checkpoint.finished, checkpoint.definitions)
    if old == new or not any(old in entries for entries in held):
        return checkpoint
    finished = tuple(replace(i, split=replace(i.split, table=new)) for i in checkpoint.finished.get(old, ()))
    gone = without_table(without_table(checkpoint, old), new)
    return replace(
        gone,
        tables=_put(gone.tables, new, checkpoint.tables.get(old)),
        plans=_put(gone.plans, new, checkpoint.plans.get(old)),
        finished=_put(gone.finished, new, finished or None),
        definitions=_put(gone.definitions, new, checkpoint.definitions.get(old)),
    )


def _put(entries: Mapping[TableId, Any], table: TableId, value: Any) -> dict[TableId, Any]:
    return {**entries, table: value} if value is not None else dict(entries)


# --------------------------------------------------------------------------------------------
# Encoding
# --------------------------------------------------------------------------------------------


def _all_tables(checkpoint: Checkpoint) -> list[TableId]:
    return sorted(set(checkpoint.tables) | set(checkpoint.plans) | set(checkpoint.finished))


def _check_finished(table: TableId, plan: TablePlan | None, infos: Sequence[FinishedSplitInfo]) -> None:
    if not infos:
        return
    if plan is None:
        raise ValueError(f"{table} has finished splits but no plan")
    splits = plan.splits(table)
    for info in infos:
        split = info.split
        i = split.index
        if not 0 <= i < len(splits) or (splits[i].start, splits[i].end) != (split.start, split.end):
            raise ValueError(
                f"finished split {split.split_id} [{split.start!r}, {split.end!r}) "
                f"is not in the plan of {table}"
            )


def _encode_table(checkpoint: Checkpoint, table: TableId, wm: WatermarkTable) -> dict[str, Any]:
    state = checkpoint.tables.get(table, TableState())
    doc: dict[str, Any] = {"db": table.database, "table": table.table, "phase": state.phase.value}
    if state.error:
        doc["error"] = state.error
    plan = checkpoint.plans.get(table)
    infos = checkpoint.finished.get(table, ())
    _check_finished(table, plan, infos)
    if plan is not None:
        doc["plan"] = {
            "keyColumns": list(plan.key_columns),
            "complete": plan.complete,
            "boundaries": pack(encode_boundaries(plan.boundaries)),
        }
    if infos:
        doc["finished"] = pack(encode_finished(infos, wm))
    return doc


def encode(checkpoint: Checkpoint) -> dict[str, Any]:
    """The checkpoint as a JSON-serialisable document (see the module docstring)."""
    if checkpoint.version != CHECKPOINT_VERSION:
        raise ValueError(f"cannot encode checkpoint version {checkpoint.version}")
    wm = WatermarkTable.build(i.high_watermark for i in checkpoint.all_finished_infos())
    tables = [_encode_table(checkpoint, t, wm) for t in _all_tables(checkpoint)]
    return {
        "version": CHECKPOINT_VERSION,
        "snapshotDone": checkpoint.snapshot_done,
        "binlogOffset": encode_offset(checkpoint.binlog_offset),
        "snapshotEndOffset": encode_offset(checkpoint.snapshot_end_offset),
        "serverIds": list(checkpoint.server_ids) if checkpoint.server_ids else None,
        **({"source": checkpoint.source.encode()} if checkpoint.source is not None else {}),
        "watermarks": pack(wm.encode()),
        "tables": tables,
        **({"definitions": pack(_encode_definitions(checkpoint))} if checkpoint.definitions else {}),
    }


def _encode_definitions(checkpoint: Checkpoint) -> list[Any]:
    return [[t.database, t.table, checkpoint.definitions[t]] for t in sorted(checkpoint.definitions)]


def _decode_definitions(doc: Any) -> dict[TableId, Any]:
    entries = unpack(doc) if doc is not None else []
    if not isinstance(entries, list):
        raise CheckpointError(f"bad definitions block {entries!r:.200}")
    return {TableId(str(db), str(table)): definition for db, table, definition in entries}


# --------------------------------------------------------------------------------------------
# Decoding
# --------------------------------------------------------------------------------------------


def _decode_plan(doc: Any) -> TablePlan:
    if not isinstance(doc, dict):
        raise CheckpointError(f"bad plan {doc!r}")
    boundaries = decode_boundaries(unpack(doc.get("boundaries", {"ints": []})))
    return TablePlan(tuple(boundaries), bool(doc.get("complete", True)), tuple(doc.get("keyColumns", ())))


def _decode_table(doc: Any, watermarks: Sequence[BinlogOffset], checkpoint: dict[str, Any]) -> None:
    if not isinstance(doc, dict):
        raise CheckpointError(f"bad table entry {doc!r}")
    table = TableId(str(doc["db"]), str(doc["table"]))
    try:
        phase = Phase(doc.get("phase", Phase.SNAPSHOT.value))
    except ValueError as exc:
        raise CheckpointError(f"{table}: unknown phase {doc.get('phase')!r}") from exc
    checkpoint["tables"][table] = TableState(phase, str(doc.get("error", "")))
    if "plan" in doc:
        plan = _decode_plan(doc["plan"])
        checkpoint["plans"][table] = plan
        if "finished" in doc:
            splits = plan.splits(table)
            infos = decode_finished(unpack(doc["finished"]), splits, watermarks)
            checkpoint["finished"][table] = tuple(infos)
    elif "finished" in doc:
        raise CheckpointError(f"{table} has finished splits but no plan")


def _check_version(doc: Any) -> None:
    if not isinstance(doc, dict):
        raise CheckpointError(f"a checkpoint is a JSON object, got {type(doc).__name__}")
    version = doc.get("version")
    if version not in _READABLE:
        raise CheckpointError(
            f"checkpoint version {version!r} is not supported: this sparkcdc reads versions "
            f"{', '.join(map(str, _READABLE))} only (was the checkpoint written by a different release?)"
        )


def decode(doc: Any) -> Checkpoint:
    """Read a document produced by ``encode``; raises ``CheckpointError`` (a ``ValueError``)
    for unknown versions and malformed documents."""
    _check_version(doc)
    try:
        watermarks = WatermarkTable.decode(unpack(doc.get("watermarks", {})))
        parts: dict[str, Any] = {"tables": {}, "plans": {}, "finished": {}}
        for table_doc in doc.get("tables", []):
            _decode_table(table_doc, watermarks, parts)
        server_ids = doc.get("serverIds")
        return Checkpoint(
            version=CHECKPOINT_VERSION,
            tables=parts["tables"],
            plans=parts["plans"],
            finished=parts["finished"],
            snapshot_done=bool(doc.get("snapshotDone", False)),
            binlog_offset=decode_offset(doc.get("binlogOffset")),
            snapshot_end_offset=decode_offset(doc.get("snapshotEndOffset")),
            server_ids=(int(server_ids[0]), int(server_ids[1])) if server_ids else None,
            source=SourceIdentity.decode(doc.get("source")),
            definitions=_decode_definitions(doc.get("definitions")),
        )
    except CheckpointError:
        raise
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise CheckpointError(f"malformed checkpoint: {exc!r}") from exc
