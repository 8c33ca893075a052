"""Which tables a pipeline captures, how each is written, and the replication ids it uses.

Discovery runs before anything is read or written, at every start (and for verify): it lists
the source's tables, applies ``source.tables`` and ``excludeTables``, resolves each table's sink
target (core/routing.py) and refuses two tables in one target by accident, then loads the
schemas. Tables an online schema-change tool works with beside a captured one are left out.
Anything wrong with the input stops the pipeline here, with a message naming the table.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from sparkcdc.core.checkpoint import Checkpoint
from sparkcdc.core.routing import CaptureRules, captures, find_collisions
from sparkcdc.core.tables import TableId, is_table_pattern, select_tables
from sparkcdc.engine.runtime import PipelineRuntime
from sparkcdc.mysql.connection import SourceError
from sparkcdc.mysql.queries import list_tables
from sparkcdc.mysql.schema import TableSchema, load_table_schema
from sparkcdc.mysql.zero_dates import keep_zero_dates, keeps_zero_dates
from sparkcdc.sinks.targets import sink_schemas

if TYPE_CHECKING:
    from sparkcdc.api.spec import CdcPipelineSpec


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


def capture_rules(spec: CdcPipelineSpec) -> CaptureRules:
    """The spec's capture and naming rules, which each discovered table's target carries so that
    the stream can follow its rename or drop (engine/schema_changes.py)."""
    on_drop = str(getattr(spec.sink, "on_table_drop", "keep"))
    return CaptureRules(tuple(spec.source.tables), tuple(spec.source.exclude_tables), spec.routing(), on_drop)


def captures_table(spec: CdcPipelineSpec, table: TableId, available: Iterable[TableId] | None = None) -> bool:
    """Whether ``spec`` captures ``table`` by name, with the rules of :func:`discover_tables`:
    ``source.tables`` names it exactly or matches it, ``excludeTables`` does not, and it is not an
    online schema-change tool's table (core/shadow_tables.py) unless named exactly. Without
    ``available`` (the source's tables now, which discovery knows) any name that reads as such a
    tool's table counts as one: a table appearing while streaming (a rename's new name) is then
    left out rather than captured half-built."""
    return captures(spec.source.tables, spec.source.exclude_tables, table, available)


def follows_vanished(spec: CdcPipelineSpec, table: TableId) -> bool:
    """Whether a captured table gone from the source at a start (renamed or dropped after the
    checkpoint) may be kept for the stream to follow its statement (``fail_vanished_tables``):
    captured by a pattern, since a name listed exactly makes discovery refuse a start without it."""
    rules = capture_rules(spec)
    return rules.captures(table) and not rules.names(table)


def discover_tables(runtime: PipelineRuntime, conn: Any) -> dict[TableId, TableSchema]:
    """The captured tables and their schemas, each with its sink target (core/routing.py); fails
    before anything is read or written, also when two tables would share a target by accident."""
    spec = runtime.pipeline.spec
    available = list_tables(conn)
    # An online schema-change tool's copies (core/shadow_tables.py) are the table's rows again, half
    # built: a pattern never captures them (the swap is followed as an ALTER of the table instead).
    chosen = [t for t in select_tables(spec.source.tables, available) if captures_table(spec, t, available)]
    for entry in spec.source.tables:
        if not is_table_pattern(entry) and TableId.parse(entry) not in available:
            raise SourceError(
                f"table {entry} named in spec.source.tables does not exist on the source "
                f"{runtime.source.host}:{runtime.source.port} (or user {runtime.source.user!r} cannot see it)"
            )
        if is_table_pattern(entry) and not select_tables([entry], available):
            raise SourceError(f"spec.source.tables entry {entry!r} matches no table on the source")
    rules = capture_rules(spec)
    targets = {t: rules.target(t) for t in chosen}
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
