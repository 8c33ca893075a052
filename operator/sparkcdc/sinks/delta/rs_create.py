"""New Delta tables created by delta-rs, without Spark; deletion vectors turned on at the first MERGE.

Why: creating a table is the snapshot's first Delta action, and in Spark it is its most
expensive one on a fresh driver — the JVM loads and compiles Delta's classes for it, seconds
during which no split is written. delta-rs writes the same first commit (the schema as Spark
would store it: ``spark_struct``'s JSON, the partition columns, change data feed) in
milliseconds, after which the splits are appended by delta-rs too (arrow_append.py), so a
snapshot into a new local table runs without a Spark job.

Deletion vectors come later. delta-rs 1.6 adds the ``variantType`` reader feature to any table it
creates with ``delta.enableDeletionVectors`` (or sets it on), which readers without variant
support refuse. A table delta-rs creates therefore starts without them; its creation commit's
``userMetadata`` says they are wanted (``{"sparkcdc": {"phase": "create", "deletionVectors":
true}}``), and before Spark's first ``MERGE`` into it Spark sets the property, which upgrades the
protocol as a Spark-created table's is (``enable_awaited_deletion_vectors``). Appends and
delta-rs' own MERGEs (rs_merge.py) do not need them: only Spark marks rows with them.

An existing local table is read by delta-rs too (``table_state``): a pipeline that restarts
needs Spark only if the table lacks a configured property (tables.py ``prepared_without_spark``).

Only the plain case goes this way: a local path where no table (and no log) is yet, and no table
property but change data feed and the default deletion vectors (on). Anything else — configured
``tableProperties``, column mapping, an object store, a delta-rs error — is created by Spark as
before (tables.py).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks.delta.arrow_append import local_table_path
from sparkcdc.sinks.delta.config import commit_metadata, metadata
from sparkcdc.sinks.spark_types import spark_struct

__all__ = ["DELETION_VECTORS", "TableState", "awaits_deletion_vectors", "create_table", "table_state"]

log = logging.getLogger(__name__)

DELETION_VECTORS = "delta.enableDeletionVectors"
# Properties delta-rs sets as Spark does, with the protocol Spark would choose.
_RS_PROPERTIES = {"delta.enableChangeDataFeed": "true"}
_FIRST_COMMIT = "_delta_log/00000000000000000000.json"

# Paths whose deletion vectors were settled in this process (on, off, or not awaited).
_SETTLED: set[str] = set()
_LOCK = threading.Lock()


def create_table(
    path: str, schema: TableSchema, partitions: Sequence[str], properties: Mapping[str, str]
) -> bool:
    """Create the table at ``path`` with delta-rs when the plain case allows (module docstring);
    False when Spark must create it (or the table is already there)."""
    from deltalake import CommitProperties, DeltaTable, Schema
    from deltalake.exceptions import DeltaError

    local = local_table_path(path)
    if local is None or (Path(local) / "_delta_log").exists():
        return False  # a table, or a creation cut off: tables.py tells which
    wanted = dict(properties)
    if wanted.pop(DELETION_VECTORS, None) != "true" or any(
        _RS_PROPERTIES.get(key) != value for key, value in wanted.items()
    ):
        return False
    meta = metadata("create", schema.table, deletionVectors=True)
    try:
        DeltaTable.create(
            local,
            Schema.from_json(spark_struct(schema).json()),
            partition_by=list(partitions) or None,
            configuration=wanted or None,
            commit_properties=CommitProperties(custom_metadata={"userMetadata": meta}),
        )
    except DeltaError as err:  # e.g. another driver created it first: Spark's createIfNotExists
        log.info("delta-rs did not create %s (%s); Spark creates it", path, err)
        return False
    with _LOCK:
        _SETTLED.discard(path)
    return True


@dataclass(frozen=True)
class TableState:
    """What preparing an existing table checks: its partition columns, properties, columns."""

    partitions: tuple[str, ...]
    properties: dict[str, str]
    columns: set[str]  # lower case


def table_state(path: str) -> TableState | None:
    """The state of the local table at ``path`` read by delta-rs; None when it is not a local
    table delta-rs reads (none yet, a creation cut off, a protocol it refuses)."""
    from deltalake import DeltaTable
    from deltalake.exceptions import DeltaError

    local = local_table_path(path)
    if local is None or not (Path(local) / "_delta_log").is_dir():
        return None
    try:
        table = DeltaTable(local)
        meta = table.metadata()
        fields = pa.schema(table.schema().to_arrow())
    except DeltaError:
        return None
    return TableState(
        tuple(meta.partition_columns), dict(meta.configuration), {n.lower() for n in fields.names}
    )


def awaits_deletion_vectors(path: str) -> bool:
    """Whether the table at ``path`` was created by ``create_table`` wanting deletion vectors
    and does not have them set yet; asked once per path and process (the caller sets them)."""
    with _LOCK:
        if path in _SETTLED:
            return False
        _SETTLED.add(path)
    local = local_table_path(path)
    if local is None or not _created_wanting_them(Path(local) / _FIRST_COMMIT):
        return False
    from deltalake import DeltaTable

    return DELETION_VECTORS not in DeltaTable(local).metadata().configuration


def _created_wanting_them(first_commit: Path) -> bool:
    """Whether the table's first commit (kept unless the log was cleaned up, by which time
    Spark has long set the property) is ``create_table``'s, wanting deletion vectors."""
    try:
        lines = first_commit.read_text().splitlines()
    except OSError:
        return False
    for line in lines:
        info: dict[str, Any] = json.loads(line).get("commitInfo") or {}
        meta = commit_metadata(info.get("userMetadata"))
        if meta is not None:
            return meta.get("phase") == "create" and meta.get("deletionVectors") is True
    return False
