"""Changelog sink: JSON lines, one change per line, one directory per table (architecture §2).

Every file is written to a temporary name and renamed into place, so a file is either whole
or absent. A snapshot split always rewrites its own file, and a binlog batch's file is named
by the offset it starts at, so a replay after a crash overwrites instead of duplicating.

A followed schema change (engine/schema_changes.py) is one record in a file of its own, named by
the statement's offset like a batch's: ``{"op": "schema", "table", "data": {}, "source",
"id", "statement", "columns": [names after it], "renamed": {old: new}, "added", "dropped",
"altered": {name: new type}}`` (the last four when non-empty), after which records use the
new names; a TRUNCATE is ``{"op": "truncate", ..., "statement"}``: a consumer drops every row of
that table it holds (in a directory merged by a route, of that ``table`` only). A source table
renamed is ``{"op": "rename", "table": old, "to": new, ...}``, written in the old name's directory
and, when it differs, in the new one's too, whose records carry the new name from then on; a table
dropped (or renamed to a name not captured) is ``{"op": "drop", ...}``, whatever
``spec.sink.onTableDrop`` says: no file is removed.

A process killed while writing leaves its temporary file behind. ``prepare`` (on the driver,
before any task of the run writes) removes those of the tables it prepares: a temporary file is
never a committed one, and whatever it was to hold is written again by the replay.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import cast

import numpy as np
import pyarrow as pa

from sparkcdc.core.logged_columns import LoggedColumns
from sparkcdc.core.microbatch import HeldRecords
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.rendered_log import RenderedLog
from sparkcdc.core.splits import SnapshotSplit
from sparkcdc.mysql.columns import Family
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks.arrow_json import join_text, json_parts, text_bytes
from sparkcdc.sinks.base import ChangelogRecord, ColumnChanges, Sink, SinkError, TableChanges
from sparkcdc.sinks.changelog_columns import logged_text
from sparkcdc.sinks.geometry import row_with_geometry_fields, with_geometry_structs
from sparkcdc.sinks.values import dumps, json_value


def event_id(*parts: object) -> str:
    """A short deterministic id: the same change always gets the same id."""
    digest = hashlib.blake2b("|".join(str(p) for p in parts).encode(), digest_size=12)
    return digest.hexdigest()


# The temporary name ``_write_bytes`` gives a file: ``.<final name>.<pid>.tmp``. Only names of
# this exact shape are removed, never other files a user keeps in the directory.
_TEMPORARY = re.compile(r"\.(?:snapshot-(?:.+-)?\d{6,}|binlog-.+-\d{12,})\.jsonl\.\d+\.tmp")


def _merged_prefix(schema: TableSchema) -> str:
    """Tables merged into one directory by a route name their files apart (``db.table-``)."""
    return f"{schema.table}-" if schema.scope else ""


def _temporary_name(final: str) -> str:
    return f".{final}.{os.getpid()}.tmp"


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

    def table_dir(self, schema: TableSchema) -> Path:
        """The directory of ``schema``'s target (``spec.sink.tableName``, ``{db}.{table}``)."""
        return self._root / (str(schema.table) if schema.target is None else schema.target.name)

    def prepare(self, schemas: Sequence[TableSchema]) -> None:
        for schema in schemas:
            directory = self.table_dir(schema)
            try:
                directory.mkdir(parents=True, exist_ok=True)
                remove_stale_temporaries(directory)
            except OSError as err:
                raise SinkError(
                    f"cannot prepare the changelog directory for {schema.table} under {self._root}: "
                    f"{err.strerror}; check spec.sink.path"
                ) from err

    def write_split(
        self, schema: TableSchema, split: SnapshotSplit, data: pa.Table, hw: BinlogOffset
    ) -> None:
        source = {"file": hw.file, "pos": hw.pos, "ts_ms": 0, "snapshot": True}
        target = self.table_dir(schema) / f"snapshot-{_merged_prefix(schema)}{split.index:06d}.jsonl"
        data = with_geometry_structs(schema, data)  # {srid, wkb} fields (sinks/geometry.py)
        self._write_bytes(target, _snapshot_text(str(schema.table), schema.chunk_key, data, source))

    def apply_changes(self, schema: TableSchema, changes: TableChanges) -> None:
        if not changes.changelog:
            return
        table = str(schema.table)
        records = changes.changelog
        logged = isinstance(records, LoggedColumns) and records.names == schema.column_names
        first = records.first_offset() if isinstance(records, HeldRecords) else records[0].offset
        target = (
            self.table_dir(schema) / f"binlog-{_merged_prefix(schema)}{first.file}-{first.pos:012d}.jsonl"
        )
        if isinstance(records, RenderedLog) and (records.table, records.names) == (
            table,
            schema.column_names,
        ):
            self._write_bytes(target, [records.text])  # the decoder's lines (mysql/binlog/rendered.py)
            return
        if any(c.family is Family.GEOMETRY for c in schema.columns):
            records = [replace(r, data=row_with_geometry_fields(schema, r.data)) for r in records]
        elif logged:  # column by column (changelog_columns.py): the same lines
            self._write_bytes(target, logged_text(schema, cast(LoggedColumns, records)))
            return
        self._write_file(target, (self._render(table, r) for r in records))

    def evolve_table(self, schema: TableSchema, changes: ColumnChanges) -> list[str]:
        """A ``schema`` record at the statement's place: later records use the new names."""
        extra: dict[str, object] = {"columns": list(schema.column_names)}
        if changes.added:
            extra["added"] = [a.column.name for a in changes.added]
        if changes.dropped:
            extra["dropped"] = list(changes.dropped)
        if changes.renamed:
            extra["renamed"] = dict(changes.renamed)
        if changes.altered:
            extra["altered"] = {c.name: c.column_type for c in changes.altered}
        return self._statement_record(schema, "schema", changes.offset, changes.statement, extra)

    def truncate_table(self, schema: TableSchema, offset: BinlogOffset, statement: str) -> list[str]:
        """A ``truncate`` record: a consumer drops every row of the table it holds."""
        return self._statement_record(schema, "truncate", offset, statement, {})

    def rename_table(
        self, old: TableSchema, new: TableSchema, offset: BinlogOffset, statement: str
    ) -> list[str]:
        """A ``rename`` record ending the old name's directory and, when another, starting the new's."""
        extra: dict[str, object] = {"to": str(new.table)}
        done = self._statement_record(old, "rename", offset, statement, extra)
        if self.table_dir(new) != self.table_dir(old):
            done += self._statement_record(replace(new, table=old.table), "rename", offset, statement, extra)
        return done

    def drop_table(self, schema: TableSchema, drop: bool, offset: BinlogOffset, statement: str) -> list[str]:
        """A ``drop`` record: a consumer forgets the table; its files stay either way."""
        return self._statement_record(schema, "drop", offset, statement, {})

    def _statement_record(
        self,
        schema: TableSchema,
        op: str,
        offset: BinlogOffset | None,
        statement: str,
        extra: dict[str, object],
    ) -> list[str]:
        # Its own file, named by the statement's offset like a batch's: a replay rewrites it.
        if offset is None:
            raise SinkError(f"a schema change of {schema.table} has no offset; cannot record it exactly once")
        table = str(schema.table)
        source = {"file": offset.file, "pos": offset.pos, "ts_ms": 0}
        rid = event_id(table, offset.file, offset.pos, 0, op)
        record = {"op": op, "table": table, "data": {}, "source": source, "id": rid, "statement": statement}
        name = f"binlog-{_merged_prefix(schema)}{offset.file}-{offset.pos:012d}.jsonl"
        target = self.table_dir(schema) / name
        self._write_file(target, [dumps({**record, **extra})])
        return [f"wrote a {op} record to {target}"]

    @staticmethod
    def _render(table: str, record: ChangelogRecord) -> str:
        source = {"file": record.offset.file, "pos": record.offset.pos, "ts_ms": record.ts_ms}
        rid = event_id(table, record.offset.file, record.offset.pos, record.index, record.op)
        return dumps({"op": record.op, "table": table, "data": record.data, "source": source, "id": rid})

    def _write_file(self, target: Path, lines: Iterable[str]) -> None:
        self._write_bytes(target, ((line + "\n").encode("utf-8") for line in lines))

    def _write_bytes(self, target: Path, chunks: Iterable[bytes | memoryview]) -> None:
        tmp = target.with_name(_temporary_name(target.name))
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with tmp.open("wb") as out:
                for chunk in chunks:
                    out.write(chunk)
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


def remove_stale_temporaries(directory: Path) -> list[str]:
    """Remove the temporary files a killed writer left in a table directory; their names.

    Only safe while nothing writes to the directory: a writer's file would vanish before its
    rename (which then fails, so nothing half-written is committed either way)."""
    removed = []
    for entry in os.scandir(directory):
        if entry.is_file(follow_symlinks=False) and _TEMPORARY.fullmatch(entry.name):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry.path)
                removed.append(entry.name)
    return sorted(removed)


# -- snapshot files, column-wise ----------------------------------------------------------------------
#
# A snapshot line is ``dumps({"op": "+I", "table": t, "data": row, "source": s, "id": event_id(t,
# "snapshot", dumps(key))})``. The same text is assembled per batch from JSON-rendered columns
# (arrow_json.json_column), so no Python object is made per value; only the event id, a hash,
# is computed per row. ``_snapshot_lines`` is the reference the fast path is tested against.

# Rows per rendered batch, and the text it may hold: bounded memory, and 32-bit Arrow offsets.
_BATCH_ROWS = 65_536
_BATCH_BYTES = 64 * 1024 * 1024


def _snapshot_lines(
    table: str, keys: Sequence[str], data: pa.Table, source: dict[str, object]
) -> Iterable[str]:
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


def _event_ids(table: str, key_text: pa.Array) -> pa.Array:
    """``event_id(table, "snapshot", key)`` of every key text, as a string array."""
    base = hashlib.blake2b(f"{table}|snapshot|".encode(), digest_size=12)
    digests = []
    for key in key_text.cast(pa.binary()).to_pylist():
        h = base.copy()
        h.update(key)
        digests.append(h.digest())
    width = 2 * base.digest_size
    count = len(digests)
    offsets = pa.py_buffer(np.arange(0, width * (count + 1), width, dtype=np.int32).tobytes())
    text = pa.py_buffer(b"".join(digests).hex().encode("ascii"))
    return pa.StringArray.from_buffers(count, offsets, text)


def _render_batch(table: str, keys: Sequence[str], batch: pa.Table, source: dict[str, object]) -> pa.Array:
    parts = {name: json_parts(batch.column(name)) for name in batch.column_names}
    # The key's JSON text (``dumps(key)``) is the key columns' texts in a list.
    key_pieces: list[pa.Array | str] = []
    text = "["
    for i, k in enumerate(keys):
        prefix, body, suffix = parts[k]
        key_pieces += [text + ("" if i == 0 else ",") + prefix, body]
        text = suffix
    key_text = join_text(*key_pieces, text + "]")
    pieces: list[pa.Array | str] = []
    text = '{"op":"+I","table":' + dumps(table) + ',"data":{'
    for i, name in enumerate(batch.column_names):
        prefix, body, suffix = parts[name]
        pieces += [text + ("" if i == 0 else ",") + dumps(name) + ":" + prefix, body]
        text = suffix
    pieces += [text + '},"source":' + dumps(source) + ',"id":"', _event_ids(table, key_text), '"}\n']
    return join_text(*pieces)


def _snapshot_text(
    table: str, keys: Sequence[str], data: pa.Table, source: dict[str, object]
) -> Iterator[bytes | memoryview]:
    """The snapshot file's bytes, batch by batch."""
    if data.num_rows == 0:
        return
    if data.num_columns == 0:
        yield from ((line + "\n").encode() for line in _snapshot_lines(table, keys, data, source))
        return
    per_row = max(1, data.nbytes // data.num_rows)
    step = max(1, min(_BATCH_ROWS, _BATCH_BYTES // per_row))
    for offset in range(0, data.num_rows, step):
        batch = data.slice(offset, step)
        try:
            text = _render_batch(table, keys, batch, source)
        except pa.ArrowCapacityError:  # more text than 32-bit offsets hold: the per-row path
            yield "".join(line + "\n" for line in _snapshot_lines(table, keys, batch, source)).encode()
            continue
        yield text_bytes(text)
