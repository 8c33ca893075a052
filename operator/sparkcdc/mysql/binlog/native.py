"""A catch-up range decoded by ``sparkcdc-binlogdec`` (Go, go-mysql's parser; binlogdec/), and the
request and row conversion its follow mode shares (follow.py: the live path).

python-mysql-replication decodes row events one by one in Python, and that is the ceiling
of parallel catch-up on a small machine. The Go decoder reads a range as its own replica, reduces
it to the last image per key itself (the same rule as ``core.merge.collapse_events``, keyed by the
binlog's raw key values, which are equal exactly when the canonical values are) and hands back
only the surviving rows, which native_values.py converts to what ``types.canonical_value`` (the
function every other path uses) makes of them, so values are the same as the Python decoder's
(tests compare both on the type table).

Used only where it is exact: every captured column of a family it renders the way
``canonical_value`` expects (not GEOMETRY, not MySQL's binary JSON, not MariaDB's UUID/INET), and
ranges without the snapshot handoff's per-split filter. It connects with the source's TLS settings
(mode and CA, the same checks as PyMySQL's: binlogdec/tls.go), so TLS does not take it away. For
anything else in a range — a column count that differs from the current definition, a partial row
image, a DDL statement — it answers "unsupported" and the caller decodes the range in Python.
``EngineOptions.binlog_decoder`` chooses it.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from sparkcdc.core.image_columns import ImageColumns, LoadText
from sparkcdc.core.logged_columns import LoggedColumns
from sparkcdc.core.merge import BackfillChanges
from sparkcdc.core.microbatch import ChangelogRecord
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.binlog.native_values import Values, converted_columns, is_utf8_text
from sparkcdc.mysql.binlog.rendered import TEXT_TYPES, render_spec, rendered_log
from sparkcdc.mysql.columns import Column, Family
from sparkcdc.mysql.connection import SourceConfig
from sparkcdc.mysql.errors import SourceError
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.paths import BINLOGDEC_DIR

__all__ = [
    "NativeRange",
    "collector_paused",
    "decode_range",
    "decoder_path",
    "decoder_version",
    "logged_changes",
    "native_eligible",
    "native_request",
    "parse_answer",
    "reduced_changes",
]


@dataclass(frozen=True)
class NativeRange:
    events: int
    changes: dict[TableId, BackfillChanges]


def decoder_version() -> str | None:
    """The version of the decoder this code speaks to: ``binlogdec/VERSION``, which its build script
    reads too (it builds into ``<cache dir>/binlogdec/<version>/``); None outside a checkout."""
    try:
        return (BINLOGDEC_DIR / "VERSION").read_text().strip() or None
    except FileNotFoundError:
        return None


def decoder_path(choice: str, cache: Path) -> Path | None:
    """The decoder ``choice`` names (``EngineOptions.binlog_decoder``): for ``auto`` the one built
    under ``cache`` (``EngineOptions.cache_dir``), or None (not built, or ``python``)."""
    if choice == "python":
        return None
    if choice != "auto":
        return Path(choice)
    version = decoder_version()
    if version is None:
        return None
    found = cache / "binlogdec" / version / "sparkcdc-binlogdec"
    return found if os.access(found, os.X_OK) else None


def _column_ok(column: Column) -> bool:
    if column.family is Family.GEOMETRY:
        return False
    if column.family in (Family.STRING, Family.JSON):
        return column.data_type.lower() in TEXT_TYPES
    return True


def native_eligible(cfg: SourceConfig, schemas: Mapping[TableId, TableSchema]) -> bool:
    """Whether the Go decoder reproduces the Python decoder exactly for these tables (``cfg``: any
    TLS mode is fine, the decoder is given the same settings)."""
    return all(_column_ok(c) for s in schemas.values() for c in s.columns)


def _table_changes(
    schema: TableSchema, answer: Mapping[str, Any], read: Callable[[int], bytes] | None = None
) -> BackfillChanges:
    by_name = {c.name: i for i, c in enumerate(schema.columns)}
    at = [by_name[k] for k in schema.row_key]
    changes = BackfillChanges()
    if "load" in answer:
        # The load text, then the same rows as JSON, follow the batch's line (binlogdec/loadtext.go).
        load = LoadText(_read_exactly(read, int(answer["load"])), int(answer["rows"]))
        rows = _read_exactly(read, int(answer["json"]))
        if load.rows:
            changes.upserts = ImageColumns(schema.column_names, _later_columns(schema, rows), at, load)
    elif upserts := answer["upserts"]:
        # Kept as columns: the JDBC sink writes them so (core/image_columns.py).
        columns = converted_columns(schema.columns, upserts)
        changes.upserts = ImageColumns(schema.column_names, columns, at)
    if deletes := answer["deletes"]:
        key_columns = converted_columns([schema.columns[i] for i in at], deletes)
        changes.deletes.update(zip(*key_columns, strict=True))
    return changes


def _later_columns(schema: TableSchema, rows: bytes) -> Callable[[], list[Values]]:
    """The columns of the JSON ``rows`` (a JSON array's items), made when called."""

    def make() -> list[Values]:
        with collector_paused():
            return converted_columns(schema.columns, orjson.loads(b"[" + rows + b"]"))

    return make


@contextmanager
def collector_paused() -> Iterator[None]:
    """Without the cyclic garbage collector: the answer and its rows are millions of acyclic objects,
    over which it would otherwise run again and again while they are made (a third of the time)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def parse_answer(data: bytes) -> dict[str, Any]:
    """One JSON answer of the decoder (a range's, or a followed batch's line). orjson parses the
    same values as the json module (numbers exactly, 64-bit integers) at about twice its speed."""
    with collector_paused():
        answer: dict[str, Any] = orjson.loads(data)
    return answer


def native_request(
    cfg: SourceConfig,
    server_id: int,
    schemas: Mapping[TableId, TableSchema],
    start: BinlogOffset,
    flavor: str,
    lines: bool = False,
    load: bool = False,
) -> dict[str, Any]:
    """The decoder's request for these tables from ``start`` (a range adds "stop", the live path
    "follow": follow.py); ``lines``: the changelog's lines rendered by the decoder, ``load``: the
    upserts' LOAD DATA text beside them, for the tables it spells (rendered.py)."""
    tables = []
    for table, schema in schemas.items():
        positions = {c.name: i for i, c in enumerate(schema.columns)}
        key = [positions[k] for k in schema.row_key]
        text = [i for i, c in enumerate(schema.columns) if is_utf8_text(c)]
        columns = len(schema.columns)
        names = list(schema.column_names)  # the decoder refuses rows written under other columns
        part: dict[str, Any] = {"db": table.database, "table": table.table, "columns": columns}
        part.update(key=key, text=text, names=names)
        if lines and (render := render_spec(schema)) is not None:
            part["render"] = render
        elif load and (spec := render_spec(schema, load=True)) is not None:
            part["load"] = spec
        tables.append(part)
    return {
        "host": cfg.host,
        "port": cfg.port,
        "user": cfg.user,
        "password": cfg.password,
        "tls": cfg.tls.decoder_request(),
        "serverId": server_id,
        "flavor": flavor,
        "start": {"file": start.file, "pos": start.pos},
        "tables": tables,
    }


def logged_changes(
    schemas: Mapping[TableId, TableSchema], tables: Any, read: Callable[[int], bytes] | None = None
) -> dict[TableId, Sequence[ChangelogRecord]]:
    """The decoder's "tables" of a batch in log mode (binlogdec/changelog.go): every table's row
    changes in binlog order, as the records the Python reader's events make (core/microbatch.py
    ``changelog_records``): the same offsets, row indexes, times and canonical images — held as
    columns (core/logged_columns.py), or as the changelog's lines where the decoder rendered them
    (rendered.py), whose bytes ``read`` takes from after the batch's line, table after table."""
    out: dict[TableId, Sequence[ChangelogRecord]] = {}
    with collector_paused():
        for part in tables or ():
            table = TableId(part["db"], part["table"])
            if "lines" in part:
                text = _read_exactly(read, int(part["lines"]))
                if (log := rendered_log(schemas[table], part, text)) is not None:
                    out[table] = log
            elif rows := part.get("changes"):
                out[table] = _logged(schemas[table], rows)
    return out


def _read_exactly(read: Callable[[int], bytes] | None, size: int) -> bytes:
    if read is None:
        raise SourceError("the binlog decoder answered rendered lines to a caller that did not ask for them")
    text = read(size) if size else b""
    if len(text) != size:
        raise SourceError(f"the binlog decoder ended within its rendered lines ({len(text)} of {size} bytes)")
    return text


def _logged(schema: TableSchema, rows: Sequence[Sequence[Any]]) -> LoggedColumns:
    befores = _image_columns(schema, [r[5] for r in rows if r[5] is not None])
    afters = _image_columns(schema, [r[6] for r in rows if r[6] is not None])
    shift = len(befores[0])
    before, after = 0, shift  # the next image of each kind, as a row of befores + afters
    picks: list[int] = []
    ops: list[str] = []
    files: list[str] = []
    positions: list[int] = []
    indexes: list[int] = []
    times: list[int] = []
    for op, file, pos, index, ts, _, _ in rows:
        at, ts_ms = index * 2, ts * 1000
        if op == "I":
            picks.append(after)
            ops.append("+I")
            after += 1
        elif op == "D":
            picks.append(before)
            ops.append("-D")
            before += 1
        else:
            picks += (before, after)
            ops += ("-U", "+U")
            before, after = before + 1, after + 1
            files.append(file)
            positions.append(pos)
            indexes.append(at)
            times.append(ts_ms)
            at += 1
        files.append(file)
        positions.append(pos)
        indexes.append(at)
        times.append(ts_ms)
    images = [[*b, *a] for b, a in zip(befores, afters, strict=True)]
    return LoggedColumns(schema.column_names, images, picks, ops, files, positions, indexes, times)


def _image_columns(schema: TableSchema, images: Sequence[Sequence[Any]]) -> list[Values]:
    if not images:
        return [[] for _ in schema.columns]
    return converted_columns(schema.columns, images)


def reduced_changes(
    schemas: Mapping[TableId, TableSchema], tables: Any, read: Callable[[int], bytes] | None = None
) -> dict[TableId, BackfillChanges]:
    """The decoder's "tables" of an answer as each table's net changes, in canonical values (the
    upserts' columns made when first asked for where the decoder rendered their load text, whose
    bytes ``read`` takes from after the batch's line)."""
    changes = {}
    with collector_paused():
        for part in tables or ():
            table = TableId(part["db"], part["table"])
            changes[table] = _table_changes(schemas[table], part, read)
    return changes


def decode_range(
    binary: Path,
    cfg: SourceConfig,
    server_id: int,
    schemas: Mapping[TableId, TableSchema],
    start: BinlogOffset,
    stop: BinlogOffset,
    flavor: str = "mariadb",
) -> NativeRange | None:
    """The range ``(start, stop]`` reduced per table, or None when the decoder does not handle it."""
    request = native_request(cfg, server_id, schemas, start, flavor)
    request["stop"] = {"file": stop.file, "pos": stop.pos}
    done = subprocess.run([str(binary)], input=json.dumps(request).encode(), capture_output=True, check=False)
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip()[-2000:]
        raise SourceError(f"decoding the binlog range {start} → {stop} failed: {message}")
    answer = parse_answer(done.stdout)
    if "unsupported" in answer:
        return None
    return NativeRange(int(answer["events"]), reduced_changes(schemas, answer["tables"]))
