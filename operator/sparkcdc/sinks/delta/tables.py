"""Creating Delta tables and following the source's schema.

Layout and types. ``<path>/<database>/<table>`` holds the replica of ``database.table``, created
with the mapped schema (sinks/spark_types.py: DECIMAL wider than 38 digits as exact text, TIME
as microseconds), the configured partition columns and table properties, Delta's change data
feed when ``changeDataFeed`` is on, and deletion vectors unless the properties turn them off.
Column names Delta cannot store plainly (spaces, ``,;{}()=``) switch the table to column
mapping by name.

Schema evolution. During streaming ``evolve_table`` follows, at its place in the binlog,
RENAME COLUMN and widening MODIFY/CHANGE (follow.py), ADD COLUMN — in one commit, filling
existing rows with the column's literal default as MySQL does (an expression default such
as ``current_timestamp()`` leaves them null, and says so) — and
DROP COLUMN (after switching the table to column mapping by name, which Delta needs to drop a
column). A write whose rows have a column the table lacks adds it first (``mergeSchema``,
default on; off, it fails instead); ``prepare_table`` does not, so a pipeline resumed before an
ADD COLUMN still gets the statement, and the default, from the binlog.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any

from sparkcdc.mysql.schema import TableSchema
from sparkcdc.mysql.types import canonical_value
from sparkcdc.sinks.base import AddedColumn, ColumnChanges, SinkError
from sparkcdc.sinks.delta import follow, rs_create
from sparkcdc.sinks.delta.config import DeltaSinkConfig, metadata
from sparkcdc.sinks.spark_types import quote_ident, spark_struct, sql_literal

__all__ = [
    "default_value",
    "enable_awaited_deletion_vectors",
    "ensure_columns",
    "evolve_table",
    "partition_columns",
    "prepare_table",
    "prepared_without_spark",
    "properties_to_set",
    "table_columns",
]

log = logging.getLogger(__name__)

# A commit, a checkpoint (classic or multi-part or v2), the last-checkpoint pointer.
_COMMIT_FILE = re.compile(r"^(\d{20}\.(json|checkpoint.*\.parquet|checkpoint.*\.json)|_last_checkpoint)$")
_NUMBER = re.compile(r"^[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$")


def table_columns(spark: Any, path: str) -> set[str]:
    """The lower-cased column names of the Delta table at ``path``."""
    from delta.tables import DeltaTable

    return {f.name.lower() for f in DeltaTable.forPath(spark, path).toDF().schema.fields}


def partition_columns(config: DeltaSinkConfig, schema: TableSchema) -> tuple[str, ...]:
    """The table's configured partition columns, which the source table must have."""
    partitions = config.partition_columns(schema.table)
    unknown = [c for c in partitions if c not in schema.column_names]
    if unknown:
        raise SinkError(
            f"spec.sink.partitionBy[{schema.table}] names {unknown}, which {schema.table} does not have; "
            f"its columns are {list(schema.column_names)}"
        )
    return partitions


def prepare_table(spark: Any, config: DeltaSinkConfig, schema: TableSchema, path: str) -> set[str]:
    """Create the table with Spark, or check and update an existing one; returns its columns
    (lower case). (A new table on a local path is delta-rs' to create first: rs_create.py.)"""
    from delta.tables import DeltaTable

    partitions = partition_columns(config, schema)
    if not DeltaTable.isDeltaTable(spark, path):
        clear_unfinished_log(spark, path)
        builder = DeltaTable.createIfNotExists(spark).location(path).addColumns(spark_struct(schema))
        if partitions:
            builder = builder.partitionedBy(*partitions)
        for key, value in config.properties(schema, creating=True).items():
            builder = builder.property(key, value)
        builder.execute()
        return {c.lower() for c in schema.column_names}
    table = DeltaTable.forPath(spark, path)
    detail = table.detail().select("partitionColumns", "properties").collect()[0]
    existing = list(detail["partitionColumns"] or [])
    changed = properties_to_set(config, schema, path, existing, dict(detail["properties"] or {}))
    if changed:
        set_properties(spark, path, changed)
    # Columns the source has and the table lacks are not added here: when streaming resumes
    # before an ADD COLUMN, the binlog brings the statement and evolve_table adds the column
    # with its default for existing rows. Writes add what they need (ensure_columns).
    return {f.name.lower() for f in table.toDF().schema.fields}


def properties_to_set(
    config: DeltaSinkConfig,
    schema: TableSchema,
    path: str,
    existing: Sequence[str],
    current: Mapping[str, str],
) -> dict[str, str]:
    """The configured properties an existing table (partitioned by ``existing``, with properties
    ``current``) lacks; refused when its partitioning is not the configured one."""
    partitions = partition_columns(config, schema)
    if partitions and [c.lower() for c in existing] != [c.lower() for c in partitions]:
        raise SinkError(
            f"the Delta table {path} of {schema.table} is partitioned by {list(existing)}, but "
            f"spec.sink.partitionBy asks for {list(partitions)}; Delta cannot repartition a table in "
            "place — write to a new path"
        )
    return {k: v for k, v in config.properties(schema).items() if current.get(k) != v}


def prepared_without_spark(config: DeltaSinkConfig, schema: TableSchema, path: str) -> set[str] | None:
    """``prepare_table`` by delta-rs, no JVM: a new local table created (rs_create.py), or an
    existing one read that needs no property set; its columns (lower case). None: Spark's."""
    partitions = partition_columns(config, schema)
    if rs_create.create_table(path, schema, partitions, config.properties(schema, creating=True)):
        return {c.lower() for c in schema.column_names}
    state = rs_create.table_state(path)
    if state is None or properties_to_set(config, schema, path, state.partitions, state.properties):
        return None
    return state.columns


def clear_unfinished_log(spark: Any, path: str) -> None:
    """Remove a ``_delta_log`` that holds no commit: what a driver killed while creating the
    table leaves. Delta then calls the path no table, yet refuses to create one there because the
    log directory exists (DELTA_TABLE_NOT_FOUND). A log with any commit or checkpoint is left
    alone and reported: it is a table Delta could not read, not an unfinished one."""
    jvm = spark.sparkContext._jvm
    log_dir = jvm.org.apache.hadoop.fs.Path(f"{path.rstrip('/')}/_delta_log")
    fs = log_dir.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    if not fs.exists(log_dir):
        return
    names = [status.getPath().getName() for status in fs.listStatus(log_dir)]
    if any(_COMMIT_FILE.match(name) for name in names):
        raise SinkError(
            f"{path} has a Delta log with commits ({len(names)} entries) that Delta does not read as a "
            "table; check the files, or point spec.sink.path elsewhere"
        )
    log.warning("%s: removing the unfinished Delta log of a creation that was cut off: %s", path, names)
    fs.delete(log_dir, True)


def enable_awaited_deletion_vectors(spark: Any, path: str) -> None:
    """Set deletion vectors on a table delta-rs created without them (rs_create.py), before the
    first ``MERGE`` into it marks rows."""
    if rs_create.awaits_deletion_vectors(path):
        set_properties(spark, path, {rs_create.DELETION_VECTORS: "true"})
        log.info("%s: deletion vectors on (the table was created by delta-rs without them)", path)


def set_properties(spark: Any, path: str, props: Mapping[str, str]) -> None:
    pairs = ", ".join(f"{_sql_string(k)} = {_sql_string(v)}" for k, v in props.items())
    spark.sql(f"ALTER TABLE delta.{quote_ident(path)} SET TBLPROPERTIES ({pairs})")


def ensure_columns(
    spark: Any, config: DeltaSinkConfig, schema: TableSchema, path: str, have: set[str]
) -> set[str]:
    """Add columns the source has and the table lacks (``mergeSchema``), as nulls."""
    missing = [c.name for c in schema.columns if c.name.lower() not in have]
    if missing:
        if not config.merge_schema:
            raise SinkError(
                f"{schema.table} has columns {missing} that its Delta table {path} lacks; set "
                "spec.sink.mergeSchema: true to add them, or add them to the table yourself"
            )
        meta = metadata("schema", schema.table, added=missing)
        empty = spark.createDataFrame([], spark_struct(schema))
        (
            empty.write.format("delta")
            .mode("append")
            .option("mergeSchema", "true")
            .option("userMetadata", meta)
            .save(path)
        )
        log.info("%s: added columns %s to %s", schema.table, missing, path)
    return have | {c.lower() for c in schema.column_names}


def evolve_table(
    spark: Any, config: DeltaSinkConfig, schema: TableSchema, changes: ColumnChanges
) -> tuple[list[str], set[str]]:
    """Follow a source column change (drops, renames, adds, widenings; follow.py for the last
    two); idempotent on replay: a column already there (added with its default in one commit),
    already gone, already renamed or already widened is skipped. Returns what was done and the
    table's columns (lower case)."""
    from delta.tables import DeltaTable

    path = config.table_path(schema)
    table = DeltaTable.forPath(spark, path)
    current = table.toDF().schema
    props = dict(table.detail().select("properties").collect()[0][0] or {})
    names = [f.name for f in current.fields]
    # Refused (TableSchemaError) before anything is changed.
    widen = follow.widen_columns(spark, schema, path, current, changes.altered, changes.renamed)
    done: list[str] = []
    have = {n.lower(): n for n in names}
    gone = [have[n.lower()] for n in changes.dropped if n.lower() in have and n not in schema.row_key]
    gone = [n for n in gone if n not in config.partition_columns(schema.table)]
    if gone:
        if follow.enable_column_mapping(spark, path, props):
            props["delta.columnMapping.mode"] = "name"
        names_sql = ", ".join(quote_ident(n) for n in gone)
        spark.sql(f"ALTER TABLE delta.{quote_ident(path)} DROP COLUMNS ({names_sql})")
        done.append(f"dropped columns {gone} from {path}")
        names = [n for n in names if n not in gone]
    done += follow.rename_columns(spark, config, schema, path, names, changes.renamed, props)
    renamed = dict(changes.renamed)
    names = [renamed.get(n, n) for n in names]
    new = [a for a in changes.added if a.column.name.lower() not in {n.lower() for n in names}]
    if new:
        done += _add_columns(spark, schema, path, names, new)
    done += follow.apply_widening(spark, path, widen, props)
    columns = {c.lower() for c in schema.column_names} | {n.lower() for n in names}
    return done, columns


def _add_columns(
    spark: Any, schema: TableSchema, path: str, existing: list[str], new: Sequence[AddedColumn]
) -> list[str]:
    """Rewrite the table with ``new`` columns filled with their defaults, in one commit."""
    from pyspark.sql import functions as F  # noqa: N812

    done = []
    frame = spark.read.format("delta").load(path)
    for add in new:
        value, note = default_value(add)
        frame = frame.withColumn(add.column.name, F.expr(sql_literal(add.column, value)))
        done.append(f"added column {add.column.name} to {path}{note}")
    frame = frame.select(*[F.col(quote_ident(n)) for n in [*existing, *(a.column.name for a in new)]])
    target = spark_struct(schema)
    for add in new:  # the exact type, with its metadata
        frame = frame.withColumn(
            add.column.name, F.col(quote_ident(add.column.name)).cast(target[add.column.name].dataType)
        )
    meta = metadata("schema", schema.table, added=[a.column.name for a in new])
    (
        frame.write.format("delta")
        .mode("overwrite")
        .option("mergeSchema", "true")
        .option("userMetadata", meta)
        .save(path)
    )
    return done


def default_value(add: AddedColumn) -> tuple[Any, str]:
    """The canonical value existing rows get for an added column, and a note when it is not
    the source's (an expression default such as ``current_timestamp()`` cannot be recomputed)."""
    text = (add.default_sql or "").strip()
    if not text or text.upper() == "NULL":
        return None, ""
    literal: str | None = None
    if len(text) >= 2 and text[0] == text[-1] == "'":
        literal = text[1:-1].replace("''", "'").replace("\\\\", "\\")
    elif _NUMBER.match(text):
        literal = text
    if literal is None:
        return None, f" (its default {text} is an expression: existing rows are null)"
    try:
        return canonical_value(add.column, literal), f" (existing rows: {text})"
    except (ValueError, ArithmeticError, TypeError):
        return None, f" (its default {text} could not be converted: existing rows are null)"


def _sql_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
