"""Snapshot splits and binlog batches appended from Arrow with delta-rs, without Spark.

Why: a wave written with Spark pays for a job, a commit, and on the first wave the Python
workers' and the Delta writer's start-up — seconds for rows the driver could already hold as
Arrow. delta-rs (the ``deltalake`` package) writes the same Parquet files and log entries from
Arrow in the calling process, and its commits carry the same ``userMetadata`` (the split ranges
``ledger.py`` reads back), so Spark's later MERGEs, the ledger and verification see one table.
The driver then reads a Delta snapshot's waves on its own threads as it does for the other sinks
(engine/wave_runner.py), one commit per split.

A binlog batch whose key span the table holds no row of (new keys past the table's end, a table
that starts empty) is appended the same way, with the idempotent-write marks Spark's writes carry
(``merge.py``): the application's recorded version is read first and a batch at or below it is
skipped, as Delta skips it for Spark. Whether the span is empty is read from the files' statistics
in the log (the first key column's min and max) instead of a Spark job; a file without statistics
counts as holding rows.

Only the normal case goes this way: a split whose range the table's history proves empty
(``ledger.py``), of a table on the local file system (or a volume mounted in the driver pod), in a
protocol delta-rs writes; for batches, an integer first key column, a table not shared by a route,
and columns stored as the batch has them. Anything else is left to Spark (``snapshot.py``'s
``replaceWhere``, ``merge.py``'s MERGE): a re-read split after a crash, a table on an object store
(delta-rs needs its own commit coordination there, and the store's credentials live in Spark's
Hadoop configuration), a table feature delta-rs does not write.

Falling back is exact whenever delta-rs fails: on a local file system its commit lands whole or
not at all, and Spark's write after it asks the ledger and the recorded version again, so a commit
that did land (an error after it, in a post-commit hook) is replaced or skipped, never doubled.
Files written for a commit that did not land are not in the table (``VACUUM`` removes them).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlparse

import pyarrow as pa

from sparkcdc.core.keys import KeyOrder
from sparkcdc.core.splits import SnapshotSplit
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks.delta.config import CommitMarks
from sparkcdc.sinks.delta.ledger import rs_table_ledger
from sparkcdc.sinks.delta.snapshot import snapshot_metadata

__all__ = [
    "append_batch",
    "append_split",
    "local_table_path",
    "open_table",
    "refusals",
    "rows_in_span",
    "writable_path",
]

log = logging.getLogger(__name__)

# Tables delta-rs refused to write, per driver process: Spark writes them without asking again.
_REFUSED: set[str] = set()


def local_table_path(path: str) -> str | None:
    """``path`` as a local directory when it is one (no scheme, or ``file:``), else None."""
    parsed = urlparse(path)
    if parsed.scheme == "" and path.startswith("/"):
        return path
    if parsed.scheme == "file" and parsed.netloc in ("", "localhost"):
        return parsed.path
    return None


def append_split(path: str, schema: TableSchema, split: SnapshotSplit, rows: pa.Table) -> bool:
    """Append ``rows`` (in the table's Spark types, sinks/spark_types.py) as the split's commit
    when the table certainly holds no row of its range; False when Spark must write it."""
    from deltalake import CommitProperties, write_deltalake

    local = writable_path(path)
    if local is None:
        return False
    with refusals(path):
        table, target = open_table(local)
        order = KeyOrder.for_columns(schema.key_collations())
        if not rs_table_ledger(table, path).empty_in([(split.start, split.end)], order):
            return False
        if sorted(target.names) != sorted(rows.column_names):
            return False  # a column the table lacks or has more of: Spark's write follows mergeSchema
        commit = CommitProperties(custom_metadata={"userMetadata": snapshot_metadata(schema, [split])})
        write_deltalake(
            table, rows.select(target.names).cast(target), mode="append", commit_properties=commit
        )
        return True
    return False


def append_batch(
    path: str, schema: TableSchema, upserts: pa.Table, span: tuple[Any, Any], marks: CommitMarks
) -> bool | None:
    """Append a binlog batch's ``upserts`` (Spark types) when the table holds no row in ``span``,
    the batch's low and high first-key values: True when appended (or already applied: the
    table's version for the marks' application is at or above theirs), False when the span holds
    rows (the batch needs a MERGE), None when delta-rs cannot tell (Spark decides)."""
    from deltalake import CommitProperties, Transaction, write_deltalake

    local = writable_path(path)
    key = schema.row_key[0]
    if local is None or schema.scope or not pa.types.is_integer(upserts.schema.field(key).type):
        return None
    with refusals(path):
        table, target = open_table(local)
        if sorted(target.names) != sorted(upserts.column_names) or any(
            target.field(n).type != upserts.schema.field(n).type for n in target.names
        ):
            return None  # a type the table widened, a column named otherwise: MERGE casts and maps
        done = table.transaction_version(marks.app_id)
        if done is not None and done >= marks.version:
            return True
        if rows_in_span(table, target.field(key), span) != 0:
            return False
        commit = CommitProperties(
            custom_metadata={"userMetadata": marks.user_metadata},
            app_transactions=[Transaction(app_id=marks.app_id, version=marks.version)],
        )
        write_deltalake(
            table, upserts.select(target.names).cast(target), mode="append", commit_properties=commit
        )
        return True
    return None


def writable_path(path: str) -> str | None:
    """The local directory of ``path`` unless it is remote or delta-rs refused the table."""
    local = local_table_path(path)
    return None if local is None or path in _REFUSED else local


def open_table(local: str) -> tuple[Any, pa.Schema]:
    """The table at ``local`` (``deltalake.DeltaTable``) and its columns as Arrow."""
    from deltalake import DeltaTable

    table = DeltaTable(local)
    return table, pa.schema(table.schema().to_arrow())


def rows_in_span(table: Any, key: pa.Field, span: tuple[Any, Any]) -> int | None:
    """The rows of the files whose statistics put a value of ``key`` in ``span``, the batch's
    low and high first-key values; None when a file there has no statistics (it may hold any)."""
    name = (key.metadata or {}).get(b"delta.columnMapping.physicalName", key.name.encode()).decode()
    files = pa.table(table.get_add_actions(flatten=True))
    if files.num_rows == 0:
        return 0
    if f"min.{name}" not in files.column_names:
        return None
    low, high = span
    rows = 0
    for least, most, count in zip(
        files[f"min.{name}"].to_pylist(),
        files[f"max.{name}"].to_pylist(),
        files["num_records"].to_pylist(),
        strict=True,
    ):
        if least is None or most is None or count is None:
            return None
        if least <= high and most >= low:
            rows += count
    return rows


@contextlib.contextmanager
def refusals(path: str) -> Iterator[None]:
    """Any delta-rs error of the block (a table feature it does not read or write, a commit it
    could not make) leaves the table to Spark for this process (module docstring)."""
    from deltalake.exceptions import DeltaError

    try:
        yield
    except DeltaError as err:
        log.info("delta-rs does not write %s (%s); Spark writes it from now on", path, err)
        _REFUSED.add(path)
