"""Renames, widenings and truncations of a source table followed in its Delta table.

* RENAME COLUMN: Delta renames only under column mapping by name, so a table without it is
  switched to it first (``delta.columnMapping.mode = name``, which upgrades the table's protocol
  to reader 2 / writer 5 — the same switch DROP COLUMN makes, tables.py): readers of the table
  must know column mapping (Delta 1.2+, Spark, Trino, delta-rs do). A rename is skipped when the
  table already shows it; a partition column is not renamed (its ``partitionBy`` names it): the
  table stops.
* MODIFY/CHANGE that widens (mysql/widening.py): most widenings keep the stored Spark type
  (strings have no length, every column is nullable); the others change it by Delta's type
  widening (``delta.enableTypeWidening``, Delta 4.0): byte → short → int → long, a decimal with
  at least as many digits before and after the point, integers into a wide enough decimal. A
  change outside those (a DECIMAL growing past 38 digits, stored as text) stops the table before
  anything is altered (``TableSchemaError``).
* TRUNCATE: one ``DELETE`` commit of the table's rows (only its own in a target merged by a
  route), carrying the binlog batches' exactly-once marks (merge.py) with the statement's offset
  as version. A replay from before it skips the delete once it is committed, as it skips the
  merges after it, so the table never goes back; before it committed, the replay re-merges the
  rows before it, deletes, and merges the rows after it: the table ends as the source.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.mysql.columns import Column
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks.base import TableSchemaError
from sparkcdc.sinks.delta.config import APP_ID, DeltaSinkConfig, metadata, txn_version
from sparkcdc.sinks.delta.session import session_conf
from sparkcdc.sinks.spark_types import quote_ident, spark_struct

__all__ = ["apply_widening", "enable_column_mapping", "rename_columns", "truncate", "widen_columns"]

_INTEGRAL = ("byte", "short", "integer", "long")
_INTEGRAL_DIGITS = {"byte": 3, "short": 5, "integer": 10, "long": 20}


def enable_column_mapping(spark: Any, path: str, properties: dict[str, str]) -> bool:
    """Switch the table to column mapping by name unless it is; True when it was switched."""
    from sparkcdc.sinks.delta.tables import set_properties

    if properties.get("delta.columnMapping.mode") == "name":
        return False
    mapping = {
        "delta.columnMapping.mode": "name",
        "delta.minReaderVersion": "2",
        "delta.minWriterVersion": "5",
    }
    set_properties(spark, path, mapping)
    return True


def rename_columns(
    spark: Any,
    config: DeltaSinkConfig,
    schema: TableSchema,
    path: str,
    have: Sequence[str],
    renamed: Sequence[tuple[str, str]],
    properties: dict[str, str],
) -> list[str]:
    """Rename the columns the table does not show renamed yet; what was done."""
    names = list(have)
    todo = []
    partitions = {p.lower() for p in config.partition_columns(schema.table)}
    for old, new in renamed:
        if old in names and new not in names:
            if old.lower() in partitions or new.lower() in partitions:
                raise TableSchemaError(
                    f"cannot rename the partition column {old!r} of the Delta table {path} of "
                    f"{schema.table}: change spec.sink.partitionBy and resnapshot {schema.table} "
                    "(resnapshotTables) into a new path",
                    schema.table,
                )
            todo.append((old, new))
            names[names.index(old)] = new
        elif (old in names) == (new in names):
            raise TableSchemaError(
                f"cannot rename column {old!r} to {new!r} in the Delta table {path} of {schema.table}: "
                f"it has {'both' if old in names else 'neither'}; resnapshot {schema.table} "
                "(resnapshotTables)",
                schema.table,
            )
    done = []
    if todo and enable_column_mapping(spark, path, properties):
        done.append(f"switched {path} to column mapping by name")
    for old, new in todo:
        spark.sql(
            f"ALTER TABLE delta.{quote_ident(path)} RENAME COLUMN {quote_ident(old)} TO {quote_ident(new)}"
        )
        done.append(f"renamed column {old} to {new} in {path}")
    return done


def _widens(old: Any, new: Any) -> bool:
    """Whether Delta's type widening (4.0) takes ``old`` to ``new``."""
    from pyspark.sql import types as T  # noqa: N812

    if old == new:
        return True
    old_name, new_name = old.typeName(), new.typeName()
    if old_name in _INTEGRAL and new_name in _INTEGRAL:
        return _INTEGRAL.index(new_name) >= _INTEGRAL.index(old_name)
    if isinstance(new, T.DecimalType):
        if isinstance(old, T.DecimalType):
            return new.scale >= old.scale and new.precision - new.scale >= old.precision - old.scale
        if old_name in _INTEGRAL:
            return new.precision - new.scale >= _INTEGRAL_DIGITS[old_name]
    return False


def widen_columns(
    spark: Any,
    schema: TableSchema,
    path: str,
    current: Any,
    altered: Sequence[Column],
    renamed: Sequence[tuple[str, str]] = (),
) -> list[tuple[str, str]]:
    """The (column, Spark SQL type) changes ``altered`` needs in a table of Spark schema
    ``current`` (before ``renamed``); ``TableSchemaError`` before any change when Delta cannot
    widen one."""
    wanted = spark_struct(schema)
    names = dict(renamed)
    fields = {names.get(f.name, f.name): f.dataType for f in current.fields}
    changes = []
    for column in altered:
        old, new = fields.get(column.name), wanted[column.name].dataType
        if old is None or old == new:
            continue
        if not _widens(old, new):
            raise TableSchemaError(
                f"the Delta table {path} of {schema.table} cannot follow column {column.name!r} becoming "
                f"{column.column_type}: Delta stores it as {old.simpleString()} and cannot widen that to "
                f"{new.simpleString()}; resnapshot {schema.table} (resnapshotTables) into a new path",
                schema.table,
            )
        changes.append((column.name, new.simpleString()))
    return changes


def apply_widening(
    spark: Any, path: str, changes: Sequence[tuple[str, str]], properties: dict[str, str]
) -> list[str]:
    from sparkcdc.sinks.delta.tables import set_properties

    if not changes:
        return []
    done = []
    if properties.get("delta.enableTypeWidening") != "true":
        set_properties(spark, path, {"delta.enableTypeWidening": "true"})
        done.append(f"enabled type widening on {path}")
    for name, kind in changes:
        spark.sql(f"ALTER TABLE delta.{quote_ident(path)} ALTER COLUMN {quote_ident(name)} TYPE {kind}")
        done.append(f"widened column {name} of {path} to {kind}")
    return done


def truncate(spark: Any, schema: TableSchema, path: str, offset: BinlogOffset, statement: str) -> list[str]:
    """Delete the table's rows in one commit marked with ``offset`` (module docstring)."""
    from delta.tables import DeltaTable

    # Scope values are the source's database and table names: plain strings.
    scope = [f"{quote_ident(name)} = '{_escape(str(value))}'" for name, value in schema.scope]
    condition = " AND ".join(scope) or "TRUE"
    marks = {
        "spark.databricks.delta.write.txnAppId": f"{APP_ID}:{schema.table}" if schema.scope else APP_ID,
        "spark.databricks.delta.write.txnVersion": str(txn_version(offset)),
        "spark.databricks.delta.commitInfo.userMetadata": metadata(
            "binlog", schema.table, offset=str(offset), truncate=statement[:300]
        ),
    }
    with session_conf(spark, marks):
        DeltaTable.forPath(spark, path).delete(condition)
    return [f"deleted every row of {schema.table} from {path} ({condition})"]


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("'", "\\'")
