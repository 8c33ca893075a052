"""Metadata columns (``spec.sink.metadataColumns``) and soft deletes (``spec.sink.deleteMode``).

A target row can carry where its current image came from: the operation (``r`` read by the
snapshot, ``c`` inserted, ``u`` updated, ``d`` deleted — Debezium's letters), the source time,
the binlog file and position and the GTID of the change (for a snapshot row, the split's high
watermark: the position its image is valid at), and the source database and table. In soft
delete mode a deleted row stays with its last image and ``_deleted`` set; a later insert of the
key revives it.

A micro-batch collapses to the last image per key (core/microbatch.py); the metadata of that
image comes from the batch's changelog, whose last record per key is the change that produced
it. A key whose last record is a ``-U`` lost its row to an update that changed the key: for the
target that key was deleted, as Debezium reports it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from sparkcdc.core.microbatch import ChangelogRecord
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.splits import Key

METADATA_FIELDS = ("op", "ts_ms", "binlog_file", "binlog_pos", "gtid", "source_db", "source_table")
DELETED_COLUMN = "_deleted"
_OPS = {"+I": "c", "+U": "u", "-U": "d", "-D": "d"}


def metadata_column(field: str) -> str:
    """The target column of a metadata field: ``op`` -> ``_op``."""
    return f"_{field}"


@dataclass(frozen=True)
class RowOrigin:
    """Where a target row's image came from."""

    op: str
    ts_ms: int
    offset: BinlogOffset

    @property
    def deleted(self) -> bool:
        return self.op == "d"

    def values(self, fields: Iterable[str], database: str, table: str) -> dict[str, Any]:
        """The metadata columns' values, by column name."""
        known = {
            "op": self.op,
            "ts_ms": self.ts_ms,
            "binlog_file": self.offset.file,
            "binlog_pos": self.offset.pos,
            "gtid": self.offset.gtid_set or None,
            "source_db": database,
            "source_table": table,
        }
        return {metadata_column(f): known[f] for f in fields}


def snapshot_origin(high: BinlogOffset, ts_ms: int) -> RowOrigin:
    return RowOrigin("r", ts_ms, high)


def last_origins(
    records: Iterable[ChangelogRecord], key_of: Callable[[ChangelogRecord], Key]
) -> dict[Key, tuple[RowOrigin, ChangelogRecord]]:
    """Per key, the origin of its last change in the batch and that change's record (whose
    ``data`` is the last image: the deleted row's for a delete)."""
    last: dict[Key, tuple[RowOrigin, ChangelogRecord]] = {}
    for record in records:
        last[key_of(record)] = (RowOrigin(_OPS[record.op], record.ts_ms, record.offset), record)
    return last
