"""Binlog batches MERGEd by delta-rs where the files they touch are few, without Spark.

Why: Spark's ``MERGE`` costs seconds whatever the batch (a job, the target's scan, the rewrite or
the deletion vectors, the commit) and needs the JVM, which a stream of appends never starts
(arrow_append.py). delta-rs merges the same batch in the calling process in a fraction of that
when the batch's key span covers few rows: it rewrites the files holding the span (it writes no
deletion vectors), which costs in proportion to their rows. Up to ``RS_MERGE_ROWS`` rows in
those files (read from the log's statistics, as for appends) delta-rs merges; beyond, a Spark
``MERGE`` with deletion vectors rewrites less than delta-rs would and is cheaper.

The statement is Spark's (merge.py): key equality plus the batch's key span on the first key
column, delete where the batch deletes, update the rest, insert what is new — with the same
idempotent-write marks: the application's recorded version is read first and a batch at or
below it is skipped, and the commit records the batch's version. Only the plain case goes this
way: a local table delta-rs writes (arrow_append.py), an integer first key column, no route, no
deletion vectors in the protocol (delta-rs would have to honour and rewrite them; a table Spark
merged once stays with Spark), no column mapping, no change data feed, the batch's column types
as stored, no backtick in a column name. Anything else, or any delta-rs error, is Spark's; the
fallback is exact as for appends: Spark asks the recorded version again.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks.delta.arrow_append import open_table, refusals, rows_in_span, writable_path
from sparkcdc.sinks.delta.config import CommitMarks

__all__ = ["RS_MERGE_ROWS", "merge_batch_rs"]

# Rows of the touched files delta-rs rewrites at most per batch: about a second of its rewrite,
# less than Spark's fixed cost of a MERGE, and a bounded amount of memory.
RS_MERGE_ROWS = 1_000_000
_SPARK_ONLY = ("delta.enableChangeDataFeed", "delta.columnMapping.mode")


def merge_batch_rs(
    path: str, schema: TableSchema, data: pa.Table, span: tuple[Any, Any], marks: CommitMarks, flag: str
) -> bool:
    """MERGE ``data`` (the batch's upserts and deletes in Spark types, ``flag`` the delete
    column) into the table at ``path`` with delta-rs when the plain case allows (module
    docstring); True when merged or already applied, False when Spark must."""
    from deltalake import CommitProperties, Transaction

    local = writable_path(path)
    key = schema.row_key[0]
    if local is None or schema.scope or not pa.types.is_integer(data.schema.field(key).type):
        return False
    if any("`" in name for name in data.column_names):
        return False
    with refusals(path):
        table, target = open_table(local)
        if not _plain(table) or not _stored_as(target, data.drop_columns([flag])):
            return False
        done = table.transaction_version(marks.app_id)
        if done is not None and done >= marks.version:
            return True
        touched = rows_in_span(table, target.field(key), span)
        if touched is None or touched > RS_MERGE_ROWS:
            return False
        commit = CommitProperties(
            custom_metadata={"userMetadata": marks.user_metadata},
            app_transactions=[Transaction(app_id=marks.app_id, version=marks.version)],
        )
        columns = {_quoted(n): f"s.{_quoted(n)}" for n in target.names}
        low, high = span
        keys = [f"t.{_quoted(k)} = s.{_quoted(k)}" for k in schema.row_key]
        first = _quoted(key)
        predicate = " AND ".join([*keys, f"t.{first} >= {int(low)}", f"t.{first} <= {int(high)}"])
        deleted = f"s.{_quoted(flag)}"
        (
            table.merge(data, predicate, source_alias="s", target_alias="t", commit_properties=commit)
            .when_matched_delete(predicate=deleted)
            .when_matched_update(updates=columns)
            .when_not_matched_insert(updates=columns, predicate=f"NOT {deleted}")
            .execute()
        )
        return True
    return False


def _plain(table: Any) -> bool:
    """No deletion vectors in the protocol, no column mapping, no change data feed."""
    protocol = table.protocol()
    if "deletionVectors" in (protocol.reader_features or []):
        return False
    configuration = table.metadata().configuration
    return not any(configuration.get(key, "none") not in ("none", "false") for key in _SPARK_ONLY)


def _stored_as(target: pa.Schema, rows: pa.Table) -> bool:
    """Whether the table has exactly the batch's columns, each of the batch's type."""
    if sorted(target.names) != sorted(rows.column_names):
        return False
    return all(target.field(n).type == rows.schema.field(n).type for n in target.names)


def _quoted(name: str) -> str:
    return f"`{name}`"
