"""The Spark task of parallel catch-up: one binlog range decoded and reduced on an executor.

``read_range`` runs inside a Spark task (or on a thread of the driver while Spark is not worth
starting, engine/catchup.py): with the Go decoder where it reproduces the tables exactly, else
with python-mysql-replication, filtered exactly as the live reader filters and reduced to the last
image per key (core/catchup.py).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from sparkcdc.core.catchup import CatchupRange, RangeReducer
from sparkcdc.core.event_filter import BinlogSplitFilter
from sparkcdc.core.events import ChangeEvent
from sparkcdc.core.merge import BackfillChanges
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.binlog.native import decode_range
from sparkcdc.mysql.binlog.reader import DdlStatement
from sparkcdc.mysql.binlog.stream import SchemaInUse, StreamingChangeReader, UndecodableRows
from sparkcdc.mysql.connection import SourceConfig
from sparkcdc.mysql.errors import SourceError
from sparkcdc.mysql.schema import TableSchema

__all__ = ["RangeContext", "RangeResult", "read_range"]


@dataclass(frozen=True)
class RangeContext:
    """What every range task needs, shipped inside the task closure (it holds the password)."""

    source: SourceConfig
    schemas: dict[TableId, TableSchema]
    event_filter: BinlogSplitFilter
    flavor: str = "mariadb"
    # The Go decoder, when it reproduces these tables exactly (mysql/binlog/native.py).
    decoder: Path | None = None


@dataclass(frozen=True)
class RangeResult:
    index: int
    events: int
    changes: dict[TableId, BackfillChanges]
    schemas: dict[TableId, TableSchema]  # the definition each table's rows were decoded with
    seconds: float = 0.0  # the task's own time for the range (the log tells it from Spark's)
    # Tables with a row event that could not be decoded: offset and detail (table_failures.py).
    undecodable: dict[TableId, UndecodableRows] = field(default_factory=dict)


def read_range(context: RangeContext, window: CatchupRange, server_id: int) -> RangeResult:
    """Decode ``(window.start, window.stop]`` and reduce it (runs in a Spark task): with the Go
    decoder where it is exact, else with python-mysql-replication."""
    began = time.monotonic()
    result = _read_native(context, window, server_id) or _read_python(context, window, server_id)
    return replace(result, seconds=time.monotonic() - began)


def _read_native(context: RangeContext, window: CatchupRange, server_id: int) -> RangeResult | None:
    binary = context.decoder
    event_filter = context.event_filter
    captured = {t: s for t, s in context.schemas.items() if event_filter.is_captured(t)}
    # Past every table's maximum high watermark the filter passes every captured table's events;
    # before that it decides per split, which only the Python path does.
    pure = all((w := event_filter.max_watermark(t)) is None or w <= window.start for t in captured)
    if binary is None or not pure or not captured:
        return None
    found = decode_range(
        binary, context.source, server_id, captured, window.start, window.stop, context.flavor
    )
    return None if found is None else RangeResult(window.index, found.events, found.changes, {})


def _read_python(context: RangeContext, window: CatchupRange, server_id: int) -> RangeResult:
    reader = StreamingChangeReader(context.source, server_id, context.schemas, blocking=False)
    reducer = RangeReducer({t: s.row_key for t, s in context.schemas.items()})
    in_use: dict[TableId, TableSchema] = {}
    undecodable: dict[TableId, UndecodableRows] = {}
    event_filter = context.event_filter  # the task's own copy
    for item in reader.stream(window.start):
        if isinstance(item, ChangeEvent):
            for event in event_filter.filter_event(item):
                reducer.add(event)
        elif isinstance(item, SchemaInUse):
            if in_use.setdefault(item.table, item.schema) != item.schema:
                raise SourceError(f"table {item.table} changed definition inside catch-up range {window}")
        elif isinstance(item, DdlStatement):
            raise SourceError(f"a DDL statement at {item.offset} inside catch-up range {window}")
        elif isinstance(item, UndecodableRows):
            undecodable.setdefault(item.table, item)
        elif isinstance(item, BinlogOffset):
            event_filter.advance_to(item)
            if item >= window.stop:
                return RangeResult(window.index, reducer.events, reducer.result(), in_use, 0.0, undecodable)
    raise SourceError(f"the binlog ended at {reader.position} before catch-up range {window} ended")
