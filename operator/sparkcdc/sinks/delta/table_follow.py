"""A source table's rename and drop followed in its Delta table (engine/table_moves.py).

A Delta table is its directory: a rename moves the directory to the new name's path with the
Hadoop FileSystem of the running Spark session (one ``rename`` of the directory, atomic on local
file systems, HDFS and ADLS Gen2); a drop with ``spec.sink.onTableDrop: drop`` deletes it, or in a
table merged by a route deletes that table's rows in one marked commit (follow.truncate).

Each step reads the paths first, so a replay after a crash before the checkpoint past the
statement does nothing more: a moved table shows only its new path, a deleted one is gone. A new
path holding a table already is refused unless that table has no rows (the one ``prepare``
creates for a name discovered at a restart before the stream met the rename), which is replaced.
Object stores whose directory rename copies file by file (``s3a://``, ``gs://``) are refused: a
crash in the middle would leave two halves; the table stops instead.
"""

from __future__ import annotations

from typing import Any

from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks.base import TableSchemaError
from sparkcdc.sinks.delta.config import DeltaSinkConfig
from sparkcdc.sinks.delta.follow import truncate

__all__ = ["drop_table", "rename_table"]

_COPYING_STORES = ("s3a://", "s3://", "s3n://", "gs://")


def _fs(spark: Any, path: str) -> tuple[Any, Any]:
    """The Hadoop FileSystem of ``path`` and the path as a Hadoop ``Path``."""
    jvm = spark.sparkContext._jvm
    hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
    return hadoop_path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), hadoop_path


def _is_table(fs: Any, path: Any) -> bool:
    return bool(fs.exists(path.suffix("/_delta_log")))


def _forget_logs(spark: Any) -> None:
    """Drop the session's cached Delta logs: a path now holds another table's log (or none)."""
    spark.sparkContext._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()


def _holds_rows(spark: Any, path: str) -> bool:
    from delta.tables import DeltaTable

    return bool(DeltaTable.forPath(spark, path).toDF().limit(1).count())


def rename_table(spark: Any, config: DeltaSinkConfig, old: TableSchema, new: TableSchema) -> list[str]:
    """Move ``old``'s table to ``new``'s path (module docstring); what was done."""
    old_path, new_path = config.table_path(old), config.table_path(new)
    if old_path == new_path:
        return []
    if config.partition_columns(old.table) != config.partition_columns(new.table):
        raise TableSchemaError(
            f"cannot move the Delta table {old_path} of {old.table} to {new_path} for its new name "
            f"{new.table}: spec.sink.partitionBy partitions them differently; give both names the same "
            f"partitionBy, then resnapshot {new.table} (resnapshotTables)",
            old.table,
        )
    fs, source = _fs(spark, old_path)
    _, target = _fs(spark, new_path)
    if not _is_table(fs, source):
        return []  # moved already (or never written: nothing to carry over)
    if old_path.startswith(_COPYING_STORES):
        raise TableSchemaError(
            f"cannot move the Delta table {old_path} of {old.table} to {new_path} for its new name "
            f"{new.table}: this object store renames a directory file by file, which a crash could "
            f"leave half done; resnapshot {new.table} (resnapshotTables) into its new path",
            old.table,
        )
    done = []
    if fs.exists(target):
        if _is_table(fs, target) and _holds_rows(spark, new_path):
            raise TableSchemaError(
                f"cannot move the Delta table {old_path} of {old.table} to {new_path} for its new name "
                f"{new.table}: a Delta table with rows is there already. Move or delete it, then "
                f"resnapshot {new.table} (resnapshotTables)",
                old.table,
            )
        fs.delete(target, True)
        done.append(f"removed the empty table at {new_path}")
    fs.mkdirs(target.getParent())
    if not fs.rename(source, target):
        raise TableSchemaError(
            f"the file system refused to move the Delta table {old_path} of {old.table} to {new_path}; "
            f"resnapshot {new.table} (resnapshotTables)",
            old.table,
        )
    _forget_logs(spark)
    done.append(f"moved the table {old_path} to {new_path}")
    return done


def drop_table(
    spark: Any, config: DeltaSinkConfig, schema: TableSchema, offset: BinlogOffset, statement: str
) -> list[str]:
    """Remove a dropped table's Delta table, or in a merged one its rows (module docstring)."""
    path = config.table_path(schema)
    fs, where = _fs(spark, path)
    if not _is_table(fs, where):
        return []
    if schema.scope:
        return truncate(spark, schema, path, offset, statement)
    fs.delete(where, True)
    _forget_logs(spark)
    return [f"deleted the Delta table {path}"]
