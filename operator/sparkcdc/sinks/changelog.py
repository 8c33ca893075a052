"""Changelog sink: JSON lines, one change per line, one directory per table (DESIGN §2).

Every file is written to a temporary name and renamed into place, so a file is either whole
or absent. A snapshot split always rewrites its own file, and a binlog batch's file is named
by the offset it starts at, so a replay after a crash overwrites instead of duplicating.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.splits import SnapshotSplit
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks.base import ChangelogRecord, Sink, SinkError, TableChanges
from sparkcdc.sinks.values import dumps, json_value


def event_id(*parts: object) -> str:
    """A short deterministic id: the same change always gets the same id."""
    digest = hashlib.blake2b("|".join(str(p) for p in parts).encode(), digest_size=12)
    return digest.hexdigest()


@dataclass(frozen=True)
class ChangelogSinkConfig:
    path: str

    def open(self) -> ChangelogSink:
        return ChangelogSink(Path(self.path))

    def describe(self) -> str:
        return f"changelog at {self.path}"


class ChangelogSink(Sink):
    def __init__(self, root: Path) -> None:
        self._root = root

    def table_dir(self, table: TableId) -> Path:
        return self._root / str(table)

    def prepare(self, schemas: Sequence[TableSchema]) -> None:
        for schema in schemas:
            try:
                self.table_dir(schema.table).mkdir(parents=True, exist_ok=True)
            except OSError as err:
                raise SinkError(
                    f"cannot create the changelog directory for {schema.table} under {self._root}: "
                    f"{err.strerror}; check spec.sink.path"
                ) from err

    def write_split(
        self, schema: TableSchema, split: SnapshotSplit, data: pa.Table, hw: BinlogOffset
    ) -> None:
        source = {"file": hw.file, "pos": hw.pos, "ts_ms": 0, "snapshot": True}
        table = str(schema.table)
        keys = schema.chunk_key

        def lines() -> Iterable[str]:
            for row in data.to_pylist():
                key = [json_value(row[k]) for k in keys]
                record = {
                    "op": "+I",
                    "table": table,
                    "data": row,
                    "source": source,
                    "id": event_id(table, "snapshot", dumps(key)),
                }
                yield dumps(record)

        self._write_file(self.table_dir(schema.table) / f"snapshot-{split.index:06d}.jsonl", lines())

    def apply_changes(self, schema: TableSchema, changes: TableChanges) -> None:
        if not changes.changelog:
            return
        table = str(schema.table)
        first = changes.changelog[0].offset
        name = f"binlog-{first.file}-{first.pos:012d}.jsonl"
        self._write_file(
            self.table_dir(schema.table) / name, (self._render(table, r) for r in changes.changelog)
        )

    @staticmethod
    def _render(table: str, record: ChangelogRecord) -> str:
        source = {"file": record.offset.file, "pos": record.offset.pos, "ts_ms": record.ts_ms}
        rid = event_id(table, record.offset.file, record.offset.pos, record.index, record.op)
        return dumps({"op": record.op, "table": table, "data": record.data, "source": source, "id": rid})

    def _write_file(self, target: Path, lines: Iterable[str]) -> None:
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with tmp.open("w", encoding="utf-8") as out:
                for line in lines:
                    out.write(line)
                    out.write("\n")
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, target)
        except OSError as err:
            tmp.unlink(missing_ok=True)
            raise SinkError(
                f"cannot write {target}: {err.strerror}; check free space and spec.sink.path"
            ) from err

    def close(self) -> None:
        return None
