"""Chunk checksums of a Delta sink, computed by Spark in the driver.

A Delta table is read with Spark, which only the driver has (the Delta sink writes from there
too), so the first pass differs from the JDBC sinks' (``tasks.py``): the source checksums run in
Spark tasks as usual while the driver computes the sink side of all chunks of a wave and table
with one Spark job over the table (``run_delta_checks``).

The checksum is the one the databases compute (``checksum.py``): ``COUNT(*)`` and the exact sum
of every row's 60-bit hash of its canonical text. Here the text is rendered in Python by
``canonical.python_row_text`` — the rendering re-checks already apply to binlog row images —
inside ``mapInArrow``: each Arrow batch of stored (Spark) values is turned back into canonical
values by ``from_spark_arrow``, the inverse of what the sink stored, so the encodings agree with
the source's by construction. Rows are assigned to chunks by their chunk key with ``KeyOrder``
(MySQL's order, collations included); where Spark orders the key as MySQL does, the wave's key
ranges are also pushed down as a filter, so Delta skips files outside them.

Sums are taken in Python (partial sums per batch, added up in the driver): 60-bit hashes summed
in a Spark ``long`` would overflow.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from sparkcdc.core.keys import KeyOrder
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.row_metadata import DELETED_COLUMN
from sparkcdc.core.splits import SnapshotSplit
from sparkcdc.mysql.connection import connect, source_error
from sparkcdc.mysql.flavor import detect_flavor
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks.base import SinkError
from sparkcdc.sinks.delta.session import driver_session
from sparkcdc.sinks.delta.snapshot import ranges_sql, scope_sql
from sparkcdc.sinks.spark_types import from_spark_arrow, is_spark_ordered
from sparkcdc.verify.canonical import python_row_text, row_hash
from sparkcdc.verify.checksum import ChunkChecksum, RowHashes, source_checksum
from sparkcdc.verify.tasks import ChunkCheck, VerifyContext, group_chunks

__all__ = ["DeltaSinkChecker", "run_delta_checks"]

_SUMS = "chunk INT, rows LONG, digest STRING"
_HASHES = "key STRING, hash LONG"


class DeltaSinkChecker:
    """A ``SinkChecker`` over the Delta tables of a delta sink; runs in the Spark driver."""

    def __init__(self, config: Any) -> None:
        self._config = config
        self._spark = driver_session(config.describe())

    def checksum(self, schema: TableSchema, split: SnapshotSplit) -> ChunkChecksum:
        return self.checksums(schema, [split])[split]

    def checksums(
        self, schema: TableSchema, splits: Sequence[SnapshotSplit]
    ) -> dict[SnapshotSplit, ChunkChecksum]:
        """Every chunk's checksum in one Spark job over the table."""
        ordered = list(splits)
        bounds = [(s.start, s.end) for s in ordered]

        def sums(batches: Iterator[Any]) -> Iterator[Any]:
            import pyarrow as pa

            order = KeyOrder.for_columns(schema.key_collations())
            for batch in batches:
                rows, digests = [0] * len(bounds), [0] * len(bounds)
                for row in _canonical_rows(schema, batch):
                    chunk = _chunk_of(order, bounds, tuple(row[n] for n in schema.chunk_key))
                    if chunk is not None:
                        rows[chunk] += 1
                        digests[chunk] += row_hash(python_row_text(schema.columns, row))
                found = [i for i, n in enumerate(rows) if n]
                yield pa.RecordBatch.from_pydict(
                    {
                        "chunk": pa.array(found, pa.int32()),
                        "rows": pa.array([rows[i] for i in found], pa.int64()),
                        "digest": pa.array([str(digests[i]) for i in found], pa.string()),
                    }
                )

        partial = self._run(schema, ordered, lambda frame: frame.mapInArrow(sums, _SUMS).collect())
        totals = {s: ChunkChecksum(0, 0) for s in ordered}
        for chunk, rows, digest in partial:
            split = ordered[chunk]
            totals[split] = ChunkChecksum(totals[split].rows + rows, totals[split].digest + int(digest))
        return totals

    def row_hashes(self, schema: TableSchema, split: SnapshotSplit) -> RowHashes:
        """Every row's hash in the chunk, by the canonical text of its row key."""
        bounds = [(split.start, split.end)]

        def hashes(batches: Iterator[Any]) -> Iterator[Any]:
            import pyarrow as pa

            order = KeyOrder.for_columns(schema.key_collations())
            for batch in batches:
                keys, values = [], []
                for row in _canonical_rows(schema, batch):
                    if _chunk_of(order, bounds, tuple(row[n] for n in schema.chunk_key)) is None:
                        continue
                    keys.append(python_row_text(schema.row_key_columns, row))
                    values.append(row_hash(python_row_text(schema.columns, row)))
                yield pa.RecordBatch.from_pydict(
                    {"key": pa.array(keys, pa.string()), "hash": pa.array(values, pa.int64())}
                )

        rows = self._run(schema, [split], lambda frame: frame.mapInArrow(hashes, _HASHES).collect())
        return {str(key): int(value) for key, value in rows}

    def _run(self, schema: TableSchema, splits: Sequence[SnapshotSplit], job: Any) -> list[Any]:
        """``job`` over the table's rows, pre-filtered to ``splits`` where Spark can."""
        path = self._config.table_path(schema)
        try:
            frame = self._spark.read.format("delta").load(path).where(scope_sql(schema, "true"))
            if schema.target is not None and schema.target.soft_delete:
                frame = frame.where(f"`{DELETED_COLUMN}` = 0")
            if all(is_spark_ordered(c) for c in schema.chunk_key_columns):
                order = KeyOrder.for_columns(schema.key_collations())
                frame = frame.where(ranges_sql(schema, [(s.start, s.end) for s in splits], order))
            result: list[Any] = job(frame)
            return result
        except Exception as err:
            text = " ".join(str(err).split())[:500] or type(err).__name__
            raise SinkError(f"checksumming {schema.table} in the Delta table {path} failed: {text}") from None

    def close(self) -> None:
        return None


def _canonical_rows(schema: TableSchema, batch: Any) -> list[dict[str, Any]]:
    """A batch of stored values as canonical rows (the sink's conversion, inverted)."""
    import pyarrow as pa

    rows: list[dict[str, Any]] = from_spark_arrow(schema, pa.Table.from_batches([batch])).to_pylist()
    return rows


def _chunk_of(order: KeyOrder, bounds: Sequence[tuple[Any, Any]], key: tuple[Any, ...]) -> int | None:
    """The index of the range holding ``key`` (ranges are disjoint), None when none does."""
    for index, (start, end) in enumerate(bounds):
        if order.in_range(key, start, end):
            return index
    return None


# -- the first pass of a verification for a Delta sink ------------------------------------------------


def _source_checks(
    context: VerifyContext, splits: Sequence[SnapshotSplit]
) -> Iterator[tuple[SnapshotSplit, ChunkChecksum, BinlogOffset]]:
    """The source's checksums of ``splits`` (one connection; runs in a Spark task)."""
    import pymysql

    conn = connect(context.source)
    try:
        flavor = detect_flavor(conn)
        for split in splits:
            try:
                checksum, position = source_checksum(conn, flavor, context.schemas[split.table], split)
            except pymysql.err.MySQLError as exc:
                raise source_error(exc, context.source, f"checksumming {split.split_id}") from None
            yield split, checksum, position
    finally:
        conn.close()


def run_delta_checks(
    spark: Any, context: VerifyContext, splits: Sequence[SnapshotSplit], tasks: int
) -> list[ChunkCheck]:
    """``tasks.run_checks`` for a Delta sink: the source side in Spark tasks, at the same time
    the sink side in the driver, one Spark job per table."""
    if not splits:
        return []
    groups = group_chunks(splits, tasks)

    def partition(items: Iterator[list[SnapshotSplit]]) -> Iterator[Any]:
        for group in items:
            yield from _source_checks(context, group)

    def source_side() -> list[Any]:
        rows: list[Any] = (
            spark.sparkContext.parallelize(groups, len(groups)).mapPartitions(partition).collect()
        )
        return rows

    checker = DeltaSinkChecker(context.sink)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="sparkcdc-verify-source") as pool:
        in_source = pool.submit(source_side)
        in_sink: dict[SnapshotSplit, ChunkChecksum] = {}
        try:
            for table in dict.fromkeys(s.table for s in splits):
                mine = [s for s in splits if s.table == table]
                in_sink.update(checker.checksums(context.schemas[table], mine))
        except BaseException:
            in_source.exception()  # let the source job finish before the error propagates
            raise
        found = in_source.result()
    return [ChunkCheck(split, checksum, in_sink[split], position) for split, checksum, position in found]
