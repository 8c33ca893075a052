"""The changelog's lines rendered by the Go decoder (binlogdec/linelog.go), and the records they
stand for (core/rendered_log.py).

The changelog sink writes ``dumps`` of each record (sinks/changelog.py ``_render``); converting
every value to its canonical Python value and rendering it again costs the live path most of its
time. For a table whose columns are all of the kinds below, the decoder spells the lines itself,
as Python would spell the canonical values (its tests hold the spellings to Python's, and the
integration tests hold its lines to the Python reader's, byte for byte). Every other table, and
every table with a non-plain target (transforms, routes that merge, metadata columns: the lines
would carry the source's values), gets the decoder's values as before (native.py).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

import orjson

from sparkcdc.core.microbatch import ChangelogRecord
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.rendered_log import RenderedLog
from sparkcdc.mysql.columns import Column, Family
from sparkcdc.mysql.schema import TableSchema

__all__ = ["render_spec", "rendered_log"]

# The character sets the decoder sends as text, and the types it reads text of (native.py shares
# them: MariaDB's JSON is a longtext).
UTF8_CHARSETS = frozenset({"utf8mb4", "utf8mb3", "utf8"})
TEXT_TYPES = frozenset({"char", "varchar", "tinytext", "text", "mediumtext", "longtext"})
_SIMPLE = {
    Family.DECIMAL: "decimal",
    Family.FLOAT: "float",
    Family.DOUBLE: "float",
    Family.DATE: "date",
    Family.DATETIME: "datetime",
    Family.TIMESTAMP: "timestamp",
}


def _kind(column: Column, load: bool = False) -> str | None:
    """How the decoder spells the column (linelog.go; with ``load``, loadtext.go), or None: it
    does not."""
    family = column.family
    if column.zero_dates:  # MySQL's text (zero_dates.py), which only a MySQL target's load reads
        if not load:
            return None
        return "mysqldate" if family is Family.DATE else "mysqldatetime"
    if family is Family.INTEGER:
        if not column.unsigned:
            return "int"
        return "uint64" if column.integer_bits == 64 else "uint"
    if family in (Family.STRING, Family.JSON) and column.data_type.lower() in TEXT_TYPES:
        charset = (column.charset or "").lower()
        if charset in UTF8_CHARSETS:
            return "text"
        return "latin1" if charset == "latin1" and family is Family.STRING else None  # core/charsets.py
    return _SIMPLE.get(family)


def render_spec(schema: TableSchema, load: bool = False) -> dict[str, Any] | None:
    """The decoder's "render" for the table's lines (with ``load``: its "load", for the upserts'
    LOAD DATA text), or None when it cannot spell them all."""
    if schema.target is not None and not schema.target.plain:
        return None
    columns = []
    for column in schema.columns:
        kind = _kind(column, load)
        if kind is None:
            return None
        bits = column.integer_bits if column.family is Family.INTEGER else 0
        scale = int(column.scale or 0)
        if kind == "mysqldatetime":  # the fractional digits MySQL prints
            scale = min(int(column.datetime_precision or 0), 6)
        columns.append({"name": column.name, "kind": kind, "bits": bits, "scale": scale})
    return {"table": str(schema.table), "columns": columns}


def rendered_log(schema: TableSchema, part: Mapping[str, Any], text: bytes) -> RenderedLog | None:
    """A table's part of a batch in rendered log mode (its ``text`` read after the batch's line),
    or None when it holds no record."""
    counts = {str(op): int(n) for op, n in part["ops"].items()}
    if not any(counts.values()):
        return None
    first = BinlogOffset(str(part["first"]["file"]), int(part["first"]["pos"]))
    return RenderedLog(str(schema.table), schema.column_names, text, counts, first, _parser(schema))


def _value_reader(column: Column) -> Callable[[Any], Any] | None:
    """The canonical value of a value as the line spells it (None: the JSON value is it)."""
    kind = _kind(column)
    if kind == "uint64" or kind == "decimal":
        return Decimal  # json_value wrote str() of a Decimal
    if kind == "date":
        return dt.date.fromisoformat
    if kind in ("datetime", "timestamp"):
        return dt.datetime.fromisoformat  # a timestamp's "+00:00" makes it UTC again
    return None


def _parser(schema: TableSchema) -> Callable[[bytes], tuple[ChangelogRecord, ...]]:
    readers = [(c.name, r) for c in schema.columns if (r := _value_reader(c)) is not None]

    def parse(text: bytes) -> tuple[ChangelogRecord, ...]:
        records: list[ChangelogRecord] = []
        offset, row = BinlogOffset("", 0), 0
        for line in text.splitlines():
            record = orjson.loads(line)
            source, data = record["source"], record["data"]
            if source["pos"] != offset.pos or source["file"] != offset.file:
                offset, row = BinlogOffset(source["file"], source["pos"]), 0
            for name, read in readers:
                if (value := data[name]) is not None:
                    data[name] = read(value)
            op = record["op"]
            # Two indexes per row of the event, as the Python reader numbers them (microbatch.py).
            records.append(ChangelogRecord(op, data, offset, 2 * row + (op == "+U"), source["ts_ms"]))
            row += op != "-U"
        return tuple(records)

    return parse
