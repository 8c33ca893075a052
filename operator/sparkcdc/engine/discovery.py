"""Which tables a pipeline captures, how each is written, and the replication ids it uses.

Discovery runs before anything is read or written, at every start (and for verify): it lists
the source's tables, applies ``source.tables`` and ``excludeTables``, resolves each table's sink
target (core/routing.py) and refuses two tables in one target by accident, then loads the
schemas. Tables an online schema-change tool works with beside a captured one are left out.
Anything wrong with the input stops the pipeline here, with a message naming the table.
"""

from __future__ import annotations

import zlib
from dataclasses import replace
from typing import Any

from sparkcdc.core.checkpoint import Checkpoint
from sparkcdc.core.routing import excluded, find_collisions
from sparkcdc.core.shadow_tables import shadow_tables
from sparkcdc.core.tables import TableId, is_table_pattern, select_tables
from sparkcdc.engine.runtime import PipelineRuntime
from sparkcdc.mysql.connection import SourceError
from sparkcdc.mysql.queries import list_tables
from sparkcdc.mysql.schema import TableSchema, load_table_schema
from sparkcdc.mysql.zero_dates import keep_zero_dates, keeps_zero_dates
from sparkcdc.sinks.targets import sink_schemas


def default_server_ids(namespace: str, name: str, size: int) -> tuple[int, int]:
    """A stable id range for a pipeline whose spec names none, away from common replica ids."""
    slot = zlib.crc32(f"{namespace}/{name}".encode()) % 100_000
    start = 1_000_000 + slot * 64
    return start, start + max(1, size) - 1


def server_id_range(runtime: PipelineRuntime, checkpoint: Checkpoint | None) -> tuple[int, int]:
    spec = runtime.pipeline.spec
    configured = spec.source.server_id_range()
    if configured is not None:
        return configured
    if checkpoint is not None and checkpoint.server_ids is not None:
        return checkpoint.server_ids
    meta = runtime.pipeline.metadata
    return default_server_ids(meta.namespace or "default", meta.name, spec.snapshot.parallelism + 1)


def discover_tables(runtime: PipelineRuntime, conn: Any) -> dict[TableId, TableSchema]:
    """The captured tables and their schemas, each with its sink target (core/routing.py); fails
    before anything is read or written, also when two tables would share a target by accident."""
    spec = runtime.pipeline.spec
    available = list_tables(conn)
    chosen = [
        t for t in select_tables(spec.source.tables, available) if not excluded(t, spec.source.exclude_tables)
    ]
    # An online schema-change tool's copies (core/shadow_tables.py) are the table's rows again, half
    # built: a pattern never captures them (the swap is followed as an ALTER of the table instead).
    named = {TableId.parse(e) for e in spec.source.tables if not is_table_pattern(e)}
    shadows = shadow_tables(available) - named
    chosen = [t for t in chosen if t not in shadows]
    for entry in spec.source.tables:
        if not is_table_pattern(entry) and TableId.parse(entry) not in available:
            raise SourceError(
                f"table {entry} named in spec.source.tables does not exist on the source "
                f"{runtime.source.host}:{runtime.source.port} (or user {runtime.source.user!r} cannot see it)"
            )
        if is_table_pattern(entry) and not select_tables([entry], available):
            raise SourceError(f"spec.source.tables entry {entry!r} matches no table on the source")
    targets = spec.routing().targets(chosen)
    collisions = find_collisions(targets)
    if collisions:
        raise SourceError(collisions[0].message())
    overrides, sink_keys = spec.snapshot.chunk_key_columns, spec.snapshot.sink_key_columns
    schemas = {
        t: replace(
            load_table_schema(conn, t, overrides.get(str(t)), sink_keys.get(str(t))), target=targets[t]
        )
        for t in chosen
    }
    if keeps_zero_dates(spec.sink.type, getattr(spec.sink, "scheme", None)):
        schemas = {t: keep_zero_dates(s) for t, s in schemas.items()}
    sink_schemas(schemas.values())  # merged tables must agree on their columns
    return schemas
