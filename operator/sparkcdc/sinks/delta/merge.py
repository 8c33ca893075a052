"""Binlog batches into a Delta table: one ``MERGE`` per table and batch, exactly once (rules 5, 6).

Each table's part of a micro-batch is one ``MERGE`` on the row key of the collapsed last images
(upserts update or insert, deletes delete), and it carries Delta's idempotent-write marks:
application id ``sparkcdc`` and version ``txn_version(end)``, the batch's end offset as an
increasing integer. Delta records the pair in the same commit and skips any later write whose
version is not above it, so a batch replayed after a crash (sink committed, checkpoint not yet
written) is not applied twice — and more: a replay from an older offset never moves the table
back. Because the table then holds the source table's state as of the batch end, every such
version is consistent with a binlog position, which the commit's ``userMetadata`` records
(``{"sparkcdc": {"phase": "binlog", "offset": "file:pos", ...}}``) for time travel. (Versions
written while the binlog is still catching up to a table's last snapshot high watermark hold
each split's rows as of its own watermark.)

Where the table holds no row in the batch's key span (new keys past the table's end, as an
append-mostly table's stream brings, or a table that starts empty), the ``MERGE`` would only
insert: the batch's upserts are appended instead, with the same marks, in one commit. A ``MERGE``
costs several times an append per row (its join with the target, then the rewrite), and whether
the span is empty Delta answers from its files' statistics, mostly without reading a file. On the
local file system delta-rs reads those statistics and appends without a Spark job
(arrow_append.py), and where the files in the span hold few rows it runs the ``MERGE`` itself
(rs_merge.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from sparkcdc.core.image_columns import columns_of
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.mysql.columns import Family
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks.base import TableChanges
from sparkcdc.sinks.delta.arrow_append import append_batch
from sparkcdc.sinks.delta.config import APP_ID, CommitMarks, metadata, txn_version
from sparkcdc.sinks.delta.rs_merge import merge_batch_rs
from sparkcdc.sinks.delta.session import session_conf
from sparkcdc.sinks.delta.snapshot import scope_sql
from sparkcdc.sinks.delta.tables import enable_awaited_deletion_vectors
from sparkcdc.sinks.spark_types import quote_ident, spark_struct, sql_stored_literal, to_spark_arrow

__all__ = ["DELETE_FLAG", "AppendProbes", "changes_table", "key_span", "merge_batch", "merge_condition"]

DELETE_FLAG = "__sparkcdc_delete"
# Above the largest gathered batch (DELTA_BEHIND_BATCH_EVENTS plus one batch): a few tens of MB.
_BROADCAST_ROWS = 400_000


@dataclass
class AppendProbes:
    """When to ask whether a batch's key span is empty: the question costs a Spark job, which a
    stream of updates would pay for nothing on every batch. After a table's span held rows, its
    next ``rest`` batches MERGE without asking."""

    rest: int = 8
    skipped: dict[str, int] = field(default_factory=dict)

    def due(self, path: str) -> bool:
        left = self.skipped.get(path, 0)
        if left:
            self.skipped[path] = left - 1
        return not left

    def held(self, path: str) -> None:
        self.skipped[path] = self.rest


def merge_batch(
    session: Callable[[], Any],
    schema: TableSchema,
    path: str,
    changes: TableChanges,
    end: BinlogOffset,
    probe: bool = False,
) -> bool:
    """One idempotent commit of the batch's last images into the table at ``path``: a ``MERGE``,
    or, when ``probe`` is set, an append where the table holds no row in the batch's key span
    (module docstring). True when it appended. ``session`` gives the Spark session, asked for
    only when delta-rs does not write the batch."""
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F  # noqa: N812

    data = changes_table(schema, changes)
    marks = _commit_marks(schema, changes, end)
    if probe and changes.upserts:
        appended = _append_without_spark(path, schema, data, marks)
        if appended is not None:
            if appended:
                return True
            probe = False  # the files' statistics say the span holds rows
    bounds = key_bounds(schema, data)
    if bounds is not None and merge_batch_rs(path, schema, data, bounds, marks, DELETE_FLAG):
        return False
    spark = session()
    enable_awaited_deletion_vectors(spark, path)
    source = spark.createDataFrame(data, schema=_changes_struct(schema))
    if data.num_rows <= _BROADCAST_ROWS:
        # Spark cannot size an in-memory frame: without the hint the MERGE would shuffle
        # and sort the whole target table to join it with a batch of a few thousand rows.
        source = F.broadcast(source)
    assign: dict[str, str | Any] = {quote_ident(n): f"s.{quote_ident(n)}" for n in schema.column_names}
    flag = f"s.{quote_ident(DELETE_FLAG)}"
    app_id, version, user = marks.app_id, str(marks.version), marks.user_metadata
    conf = {
        "spark.databricks.delta.write.txnAppId": app_id,
        "spark.databricks.delta.write.txnVersion": version,
        "spark.databricks.delta.commitInfo.userMetadata": user,
    }
    with session_conf(spark, conf):
        if probe and changes.upserts and _new_keys_only(spark, schema, path, data, source):
            upserts = source.where(f"NOT {quote_ident(DELETE_FLAG)}").drop(DELETE_FLAG)
            writer = upserts.write.format("delta").mode("append").option("userMetadata", user)
            writer.option("txnAppId", app_id).option("txnVersion", version).save(path)
            return True
        (
            DeltaTable.forPath(spark, path)
            .alias("t")
            .merge(source.alias("s"), merge_condition(schema, data))
            .whenMatchedDelete(condition=flag)
            .whenMatchedUpdate(set=assign)
            .whenNotMatchedInsert(condition=f"NOT {flag}", values=assign)
            .execute()
        )
    return False


def _commit_marks(schema: TableSchema, changes: TableChanges, end: BinlogOffset) -> CommitMarks:
    # Tables merged into one target by a route each keep their own exactly-once version.
    app_id = f"{APP_ID}:{schema.table}" if schema.scope else APP_ID
    counts = {"upserts": len(changes.upserts), "deletes": len(changes.deletes)}
    return CommitMarks(app_id, txn_version(end), metadata("binlog", schema.table, offset=str(end), **counts))


def _append_without_spark(path: str, schema: TableSchema, data: pa.Table, marks: CommitMarks) -> bool | None:
    """The batch's upserts appended by delta-rs where the table holds no row of its key span
    (arrow_append.py): True appended, False the span holds rows, None Spark must tell."""
    bounds = key_bounds(schema, data)
    if bounds is None:
        return None
    upserts = data.filter(pc.invert(data.column(DELETE_FLAG))).drop_columns([DELETE_FLAG])
    return append_batch(path, schema, upserts, bounds, marks)


def _new_keys_only(spark: Any, schema: TableSchema, path: str, data: pa.Table, source: Any) -> bool:
    """Whether the table holds no row in the batch's key span (on the first key column; Delta
    skips the files outside it by their statistics) and stores the batch's columns as the batch
    has them: the ``MERGE`` would then only insert the upserts (its deletes find nothing), which
    an append does for a fraction of the cost."""
    span = key_span(schema, data)
    if span is None:
        return False
    target = spark.read.format("delta").load(path)
    stored = {field.name: field.dataType for field in target.schema.fields}
    batch = [field for field in source.schema.fields if field.name != DELETE_FLAG]
    if any(stored.get(field.name) != field.dataType for field in batch):
        return False  # a type the table widened, a column named otherwise: MERGE casts and maps
    return bool(target.where(scope_sql(schema, " AND ".join(span))).isEmpty())


def changes_table(schema: TableSchema, changes: TableChanges) -> pa.Table:
    """Upserts (full rows) and deletes (keys, other columns null) with the delete flag."""
    arrow = schema.arrow_schema()
    # Column by column (as the Go decoder's batches hold them): several times cheaper than a dict
    # per row (a batch gathered while the reader was behind holds a few hundred thousand rows).
    images = columns_of(changes.upserts, arrow.names)
    upserts = len(changes.upserts)
    deletes = changes.deletes
    at = {name: i for i, name in enumerate(schema.row_key)}
    columns = []
    for column, values in zip(arrow, images, strict=True):
        index = at.get(column.name)
        tail = [None] * len(deletes) if index is None else [key[index] for key in deletes]
        columns.append(pa.array([*values, *tail], type=column.type))
    canonical = pa.Table.from_arrays(columns, schema=arrow)
    flags = pa.array([False] * upserts + [True] * len(deletes), pa.bool_())
    return to_spark_arrow(schema, canonical).append_column(
        pa.field(DELETE_FLAG, pa.bool_(), nullable=False), flags
    )


def _changes_struct(schema: TableSchema) -> Any:
    from pyspark.sql import types as T  # noqa: N812

    return spark_struct(schema).add(DELETE_FLAG, T.BooleanType(), False)


def merge_condition(schema: TableSchema, data: pa.Table) -> str:
    """Key equality, plus the batch's key span on the first key column so Delta skips the files
    outside it (its min/max statistics): matches are equal values, so they lie in the span."""
    parts = [f"t.{quote_ident(k)} = s.{quote_ident(k)}" for k in schema.row_key]
    parts += [f"t.{bound}" for bound in key_span(schema, data) or ()]
    return " AND ".join(parts)


def key_bounds(schema: TableSchema, data: pa.Table) -> tuple[Any, Any] | None:
    """The lowest and highest stored value of the batch's first key column; None for an empty
    batch or a floating-point key (NaN sorts outside any span)."""
    first = schema.column(schema.row_key[0])
    if first.family in (Family.FLOAT, Family.DOUBLE):
        return None
    span = pc.min_max(data.column(first.name))
    low, high = span["min"].as_py(), span["max"].as_py()
    return None if low is None else (low, high)


def key_span(schema: TableSchema, data: pa.Table) -> list[str] | None:
    """``first_key >= low`` and ``first_key <= high`` over the batch's keys (``data`` holds the
    stored Spark values; ``key_bounds``)."""
    bounds = key_bounds(schema, data)
    if bounds is None:
        return None
    first = schema.column(schema.row_key[0])
    name = quote_ident(first.name)
    low, high = bounds
    return [f"{name} >= {sql_stored_literal(first, low)}", f"{name} <= {sql_stored_literal(first, high)}"]
