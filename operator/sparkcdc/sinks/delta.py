"""Delta Lake sink: one Delta table per source table, below ``spec.sink.path``.

Layout and types. ``<path>/<database>/<table>`` holds the replica of ``database.table``, created
with the mapped schema (sinks/spark_types.py: DECIMAL wider than 38 digits as exact text, TIME
as microseconds), the configured partition columns and table properties, Delta's change data
feed when ``changeDataFeed`` is on, and deletion vectors unless the properties turn them off (a
MERGE then marks the rows it replaces instead of rewriting every file it touches). Column names
Delta cannot store plainly (spaces, ``,;{}()=``) switch the table to column mapping by name.

Writes happen in the Spark driver (``FrameSink``): the snapshot tasks only read, and each wave's
rows of one table are written by one Delta commit (spark/frame_wave.py).

Snapshot splits (DESIGN §3 rule 3). A wave's commit makes the table's rows in the wave's split
ranges exactly the rows read, atomically:

* When the table's history proves the ranges hold no rows — every data-bearing commit so far is
  a sparkcdc snapshot commit, and none covered a range that overlaps these (commits record their
  split ranges in ``userMetadata``) — the rows are appended. This is the normal case.
* Otherwise (a wave re-run after a crash between the commit and the checkpoint, a grown tail
  split re-cut, a re-snapshot over existing rows) the ranges are replaced with ``replaceWhere``:
  a range predicate when Spark orders the chunk key as MySQL does (numbers, dates, times,
  binary), and, for string keys (collations, PAD SPACE) or decimals stored as text, the exact
  list of keys in the ranges, chosen in Python with the same ``KeyOrder`` the split reader uses.

Binlog batches (rules 5, 6). Each table's part of a micro-batch is one ``MERGE`` on the row key
of the collapsed last images (upserts update or insert, deletes delete), and it carries Delta's
idempotent-write marks: application id ``sparkcdc`` and version ``txn_version(end)``, the batch's
end offset as an increasing integer. Delta records the pair in the same commit and skips any
later write whose version is not above it, so a batch replayed after a crash (sink committed,
checkpoint not yet written) is not applied twice — and more: a replay from an older offset never
moves the table back. Because the table then holds the source table's state as of the batch
end, every such version is consistent with a binlog position, which the commit's
``userMetadata`` records (``{"sparkcdc": {"phase": "binlog", "offset": "file:pos", ...}}``) for
time travel. (Versions written while the binlog is still catching up to a table's last
snapshot high watermark hold each split's rows as of its own watermark.)

Schema evolution. During streaming ``evolve_table`` follows ADD COLUMN at its place in the
binlog — in one commit, filling existing rows with the column's literal default as MySQL does
(an expression default such as ``current_timestamp()`` leaves them null, and says so) — and
DROP COLUMN (after switching the table to column mapping by name, which Delta needs to drop a
column). A write whose rows have a column the table lacks adds it first (``mergeSchema``,
default on; off, it fails instead); ``prepare`` does not, so a pipeline resumed before an ADD
COLUMN still gets the statement, and the default, from the binlog.

``optimizeEveryCommits`` compacts a table with ``OPTIMIZE`` after that many commits of this
driver process to it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.compute as pc

from sparkcdc.core.jsoncodec import decode_key, encode_key
from sparkcdc.core.keys import KeyOrder
from sparkcdc.core.offsets import BinlogOffset, binlog_file_index
from sparkcdc.core.splits import Key, SnapshotSplit
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.columns import Family
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.mysql.types import canonical_value
from sparkcdc.sinks.base import FrameSink, SinkError, TableChanges
from sparkcdc.sinks.evolution import AddedColumn
from sparkcdc.sinks.spark_types import (
    from_spark_arrow,
    is_spark_ordered,
    quote_ident,
    spark_struct,
    sql_literal,
    sql_stored_literal,
    to_spark_arrow,
)

__all__ = ["DeltaSink", "DeltaSinkConfig", "commit_metadata", "txn_version"]

log = logging.getLogger(__name__)

APP_ID = "sparkcdc"
DELETE_FLAG = "__sparkcdc_delete"
_META = "sparkcdc"
# Commits that change no rows: they keep a table's snapshot history "clean" (see _Ledger).
_METADATA_ONLY = {
    "CREATE TABLE",
    "ADD COLUMNS",
    "DROP COLUMNS",
    "CHANGE COLUMN",
    "RENAME COLUMN",
    "SET TBLPROPERTIES",
    "UNSET TBLPROPERTIES",
    "UPGRADE PROTOCOL",
    "OPTIMIZE",
    "VACUUM START",
    "VACUUM END",
    "ADD CONSTRAINT",
    "DROP CONSTRAINT",
}
_NEEDS_MAPPING = re.compile(r"[ ,;{}()\n\t=]")
_FILE_BITS = 23
_POS_BITS = 40

_SESSION_TIME_ZONE = "UTC"
_BROADCAST_ROWS = 200_000


def txn_version(offset: BinlogOffset) -> int:
    """A binlog offset as Delta's increasing transaction version: file index, then position."""
    index = binlog_file_index(offset.file)
    if index >= 1 << _FILE_BITS or offset.pos >= 1 << _POS_BITS:
        raise SinkError(
            f"binlog offset {offset} is beyond what the delta sink can record (file index < 2^23)"
        )
    return (index << _POS_BITS) | offset.pos


def commit_metadata(user_metadata: str | None) -> dict[str, Any] | None:
    """The sparkcdc part of a Delta commit's ``userMetadata``; None for other commits."""
    if not user_metadata:
        return None
    try:
        doc = json.loads(user_metadata)
    except ValueError:
        return None
    part = doc.get(_META) if isinstance(doc, dict) else None
    return part if isinstance(part, dict) else None


def _metadata(phase: str, table: TableId, **fields: Any) -> str:
    return json.dumps({_META: {"phase": phase, "table": str(table), **fields}}, separators=(",", ":"))


# -- configuration ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class DeltaSinkConfig:
    path: str
    partition_by: tuple[tuple[str, tuple[str, ...]], ...] = ()
    table_properties: tuple[tuple[str, str], ...] = ()
    change_data_feed: bool = False
    optimize_every_commits: int = 0
    merge_schema: bool = True
    # A FrameSink: the snapshot hands it DataFrames in the driver (sinks/base.py).
    writes_in_driver: ClassVar[bool] = True

    def open(self) -> DeltaSink:
        return DeltaSink(self)

    def describe(self) -> str:
        return f"delta at {self.path}"

    def table_path(self, table: TableId) -> str:
        return f"{self.path.rstrip('/')}/{table.database}/{table.table}"

    def partition_columns(self, table: TableId) -> tuple[str, ...]:
        return dict(self.partition_by).get(str(table), ())

    def properties(self, schema: TableSchema, *, creating: bool = False) -> dict[str, str]:
        """Table properties to set: the configured ones, change data feed, column mapping when a
        name needs it, and for a new table deletion vectors unless configured otherwise (a
        MERGE then marks replaced rows instead of rewriting every file it touches)."""
        props = dict(self.table_properties)
        if creating:
            props.setdefault("delta.enableDeletionVectors", "true")
        if self.change_data_feed:
            props["delta.enableChangeDataFeed"] = "true"
        if any(_NEEDS_MAPPING.search(c.name) for c in schema.columns):
            props.setdefault("delta.columnMapping.mode", "name")
        return props


# -- what a table's history says about its snapshot ranges --------------------------------------------


@dataclass
class _Ledger:
    """What the commits up to ``version`` say: ``clean`` while every commit that added rows was
    a sparkcdc snapshot commit, and the split ranges those commits wrote."""

    version: int = -1
    clean: bool = True
    ranges: list[tuple[Key | None, Key | None]] = field(default_factory=list)

    def add(self, rows: Sequence[tuple[int, str, str | None]]) -> None:
        for version, operation, user_metadata in sorted(rows, key=lambda r: r[0]):
            if version <= self.version:
                continue
            if version != self.version + 1:
                self.clean = False  # commits we cannot see (log cleanup): assume rows anywhere
            meta = commit_metadata(user_metadata)
            phase = meta.get("phase") if meta else None
            if phase == "snapshot" and meta is not None:
                for _index, start, end in meta.get("splits", []):
                    self.ranges.append(
                        (
                            None if start is None else decode_key(start),
                            None if end is None else decode_key(end),
                        )
                    )
            elif phase == "schema" or (meta is None and operation in _METADATA_ONLY):
                pass
            else:
                self.clean = False
            self.version = version

    def empty_in(self, ranges: Sequence[tuple[Key | None, Key | None]], order: KeyOrder) -> bool:
        """True when the table certainly has no rows in any of ``ranges``."""
        return self.clean and not any(_overlap(a, b, order) for a in ranges for b in self.ranges)


def _overlap(a: tuple[Key | None, Key | None], b: tuple[Key | None, Key | None], order: KeyOrder) -> bool:
    (s1, e1), (s2, e2) = a, b
    first = s1 is None or e2 is None or order.compare(s1, e2) < 0
    second = s2 is None or e1 is None or order.compare(s2, e1) < 0
    return first and second


# Per driver process, keyed by table path. Always brought up to the table's latest version before
# use, so it is never stale; the cache only saves re-reading the whole history every wave.
_LEDGERS: dict[str, _Ledger] = {}
_COMMITS: dict[str, int] = {}
_LOCK = threading.Lock()


# -- the sink -------------------------------------------------------------------------------------


class DeltaSink(FrameSink):
    def __init__(self, config: DeltaSinkConfig) -> None:
        self._config = config
        self._spark = _driver_session(config)
        self._columns: dict[str, set[str]] = {}

    @property
    def session(self) -> Any:
        return self._spark

    # -- tables ---------------------------------------------------------------------------------

    def prepare(self, schemas: Sequence[TableSchema]) -> None:
        for schema in schemas:
            path = self._config.table_path(schema.table)
            with self._failing(f"preparing the table of {schema.table}", path):
                self._prepare_table(schema, path)

    def _prepare_table(self, schema: TableSchema, path: str) -> None:
        from delta.tables import DeltaTable

        partitions = self._config.partition_columns(schema.table)
        unknown = [c for c in partitions if c not in schema.column_names]
        if unknown:
            raise SinkError(
                f"spec.sink.partitionBy[{schema.table}] names {unknown}, which {schema.table} does not have; "
                f"its columns are {list(schema.column_names)}"
            )
        if not DeltaTable.isDeltaTable(self._spark, path):
            props = self._config.properties(schema, creating=True)
            builder = (
                DeltaTable.createIfNotExists(self._spark).location(path).addColumns(spark_struct(schema))
            )
            if partitions:
                builder = builder.partitionedBy(*partitions)
            for key, value in props.items():
                builder = builder.property(key, value)
            builder.execute()
            self._columns[path] = {c.lower() for c in schema.column_names}
            return
        table = DeltaTable.forPath(self._spark, path)
        detail = table.detail().select("partitionColumns", "properties").collect()[0]
        existing = list(detail["partitionColumns"] or [])
        if partitions and [c.lower() for c in existing] != [c.lower() for c in partitions]:
            raise SinkError(
                f"the Delta table {path} of {schema.table} is partitioned by {existing}, but "
                f"spec.sink.partitionBy asks for {list(partitions)}; Delta cannot repartition a table in "
                "place — write to a new path"
            )
        props = self._config.properties(schema)
        current = dict(detail["properties"] or {})
        changed = {k: v for k, v in props.items() if current.get(k) != v}
        if changed:
            self._set_properties(path, changed)
        # Columns the source has and the table lacks are not added here: when streaming resumes
        # before an ADD COLUMN, the binlog brings the statement and evolve_table adds the column
        # with its default for existing rows. Writes add what they need (_ensure_columns).
        self._columns[path] = {f.name.lower() for f in table.toDF().schema.fields}

    def _set_properties(self, path: str, props: Mapping[str, str]) -> None:
        pairs = ", ".join(f"{_sql_string(k)} = {_sql_string(v)}" for k, v in props.items())
        self._spark.sql(f"ALTER TABLE delta.{quote_ident(path)} SET TBLPROPERTIES ({pairs})")

    def _ensure_columns(self, schema: TableSchema, path: str) -> None:
        """Add columns the source has and the table lacks (``mergeSchema``), as nulls."""
        have = self._columns.get(path)
        if have is None:
            from delta.tables import DeltaTable

            have = {f.name.lower() for f in DeltaTable.forPath(self._spark, path).toDF().schema.fields}
        missing = [c.name for c in schema.columns if c.name.lower() not in have]
        if missing:
            if not self._config.merge_schema:
                raise SinkError(
                    f"{schema.table} has columns {missing} that its Delta table {path} lacks; set "
                    "spec.sink.mergeSchema: true to add them, or add them to the table yourself"
                )
            meta = _metadata("schema", schema.table, added=missing)
            empty = self._spark.createDataFrame([], spark_struct(schema))
            (
                empty.write.format("delta")
                .mode("append")
                .option("mergeSchema", "true")
                .option("userMetadata", meta)
                .save(path)
            )
            log.info("%s: added columns %s to %s", schema.table, missing, path)
        self._columns[path] = have | {c.lower() for c in schema.column_names}

    def evolve_table(
        self, schema: TableSchema, added: Sequence[AddedColumn], dropped: Sequence[str]
    ) -> list[str]:
        """Follow a source ADD/DROP COLUMN (spark/schema_changes.py); idempotent on replay: a
        column already there (added with its default in one commit) or already gone is skipped."""
        from delta.tables import DeltaTable
        from pyspark.sql import functions as F  # noqa: N812

        path = self._config.table_path(schema.table)
        done: list[str] = []
        with self._failing(f"following a schema change of {schema.table}", path):
            table = DeltaTable.forPath(self._spark, path)
            have = {f.name.lower(): f.name for f in table.toDF().schema.fields}
            new = [a for a in added if a.column.name.lower() not in have]
            if new:
                frame = self._spark.read.format("delta").load(path)
                for add in new:
                    value, note = _default_value(add)
                    literal = sql_literal(add.column, value)
                    frame = frame.withColumn(add.column.name, F.expr(literal))
                    done.append(f"added column {add.column.name} to {path}{note}")
                frame = frame.select(
                    *[F.col(quote_ident(n)) for n in [*have.values(), *(a.column.name for a in new)]]
                )
                target = spark_struct(schema)
                for add in new:  # the exact type, with its metadata
                    frame = frame.withColumn(
                        add.column.name,
                        F.col(quote_ident(add.column.name)).cast(target[add.column.name].dataType),
                    )
                meta = _metadata("schema", schema.table, added=[a.column.name for a in new])
                (
                    frame.write.format("delta")
                    .mode("overwrite")
                    .option("mergeSchema", "true")
                    .option("userMetadata", meta)
                    .save(path)
                )
            gone = [have[n.lower()] for n in dropped if n.lower() in have and n not in schema.row_key]
            gone = [n for n in gone if n not in self._config.partition_columns(schema.table)]
            if gone:
                props = dict(table.detail().select("properties").collect()[0][0] or {})
                if props.get("delta.columnMapping.mode") != "name":
                    self._set_properties(
                        path,
                        {
                            "delta.columnMapping.mode": "name",
                            "delta.minReaderVersion": "2",
                            "delta.minWriterVersion": "5",
                        },
                    )
                names = ", ".join(quote_ident(n) for n in gone)
                self._spark.sql(f"ALTER TABLE delta.{quote_ident(path)} DROP COLUMNS ({names})")
                done.append(f"dropped columns {gone} from {path}")
        self._columns[path] = {c.lower() for c in schema.column_names} | {
            n.lower() for n in have.values() if n not in gone
        }
        return done

    # -- snapshot ---------------------------------------------------------------------------------

    def write_split(
        self, schema: TableSchema, split: SnapshotSplit, data: pa.Table, hw: BinlogOffset
    ) -> None:
        raise SinkError(
            "the delta sink writes snapshot splits from the Spark driver (write_frame), not from a task"
        )

    def write_frame(self, schema: TableSchema, splits: Sequence[SnapshotSplit], rows: Any) -> None:
        path = self._config.table_path(schema.table)
        ranges = [(s.start, s.end) for s in splits]
        order = KeyOrder.for_columns(schema.key_collations())
        meta = _metadata(
            "snapshot",
            schema.table,
            splits=[
                [
                    s.index,
                    None if s.start is None else encode_key(s.start),
                    None if s.end is None else encode_key(s.end),
                ]
                for s in splits
            ],
        )
        with self._failing(f"writing snapshot splits of {schema.table}", path):
            writer = rows.write.format("delta").option("userMetadata", meta)
            if self._ledger(path).empty_in(ranges, order):
                writer.mode("append").save(path)
            elif all(is_spark_ordered(c) for c in schema.chunk_key_columns):
                predicate = _ranges_sql(schema, ranges, order)
                writer.mode("overwrite").option("replaceWhere", predicate).save(path)
            else:
                doomed = self._keys_in_ranges(schema, path, ranges, order)
                if not doomed:
                    writer.mode("append").save(path)
                else:
                    # The rows' keys are in the ranges but not in this list: no constraint check.
                    with self._conf({"spark.databricks.delta.replaceWhere.constraintCheck.enabled": "false"}):
                        writer.mode("overwrite").option("replaceWhere", _keys_sql(schema, doomed)).save(path)
            self._committed(path)

    def _keys_in_ranges(
        self, schema: TableSchema, path: str, ranges: Sequence[tuple[Key | None, Key | None]], order: KeyOrder
    ) -> list[Key]:
        """The table's chunk keys in ``ranges`` as MySQL orders them (candidates bounded in Spark
        by the leading column where Spark orders it, then the exact check in Python)."""
        names = list(schema.chunk_key)
        frame = (
            self._spark.read.format("delta").load(path).select(*[quote_ident(n) for n in names]).distinct()
        )
        first = schema.chunk_key_columns[0]
        if is_spark_ordered(first):
            starts = [r[0] for r in ranges]
            ends = [r[1] for r in ranges]
            if all(s is not None for s in starts):
                low = min((s[0] for s in starts if s is not None), key=lambda v: order.value_key(0, v))
                frame = frame.where(f"{quote_ident(first.name)} >= {sql_literal(first, low)}")
            if all(e is not None for e in ends):
                high = max((e[0] for e in ends if e is not None), key=lambda v: order.value_key(0, v))
                frame = frame.where(f"{quote_ident(first.name)} <= {sql_literal(first, high)}")
        table = from_spark_arrow(schema, frame.toArrow(), names)
        keys = [tuple(row[n] for n in names) for row in table.to_pylist()]
        return [k for k in keys if any(order.in_range(k, s, e) for s, e in ranges)]

    def _ledger(self, path: str) -> _Ledger:
        from delta.tables import DeltaTable

        table = DeltaTable.forPath(self._spark, path)
        latest = int(table.history(1).select("version").collect()[0][0])
        with _LOCK:
            ledger = _LEDGERS.get(path)
            if ledger is None or ledger.version > latest:
                ledger = _Ledger()
        if latest > ledger.version:
            history = table.history() if ledger.version < 0 else table.history(latest - ledger.version)
            rows = [
                (int(r[0]), str(r[1]), r[2])
                for r in history.select("version", "operation", "userMetadata").collect()
            ]
            ledger.add(rows)
        with _LOCK:
            _LEDGERS[path] = ledger
        return ledger

    # -- binlog -----------------------------------------------------------------------------------

    def apply_changes(self, schema: TableSchema, changes: TableChanges) -> None:
        if not changes.upserts and not changes.deletes:
            return
        from delta.tables import DeltaTable
        from pyspark.sql import functions as F  # noqa: N812

        path = self._config.table_path(schema.table)
        end = changes.end or max((r.offset for r in changes.changelog), default=None)
        if end is None:
            raise SinkError(f"a binlog batch of {schema.table} has no offset; cannot apply it exactly once")
        with self._failing(f"merging a binlog batch of {schema.table} up to {end}", path):
            self._ensure_columns(schema, path)
            data = _changes_table(schema, changes)
            source = self._spark.createDataFrame(data, schema=_changes_struct(schema))
            if data.num_rows <= _BROADCAST_ROWS:
                # Spark cannot size an in-memory frame: without the hint the MERGE would shuffle
                # and sort the whole target table to join it with a batch of a few thousand rows.
                source = F.broadcast(source)
            names = schema.column_names
            assign: dict[str, str | Any] = {quote_ident(n): f"s.{quote_ident(n)}" for n in names}
            flag = f"s.{quote_ident(DELETE_FLAG)}"
            confs = {
                "spark.databricks.delta.write.txnAppId": APP_ID,
                "spark.databricks.delta.write.txnVersion": str(txn_version(end)),
                "spark.databricks.delta.commitInfo.userMetadata": _metadata(
                    "binlog",
                    schema.table,
                    offset=str(end),
                    upserts=len(changes.upserts),
                    deletes=len(changes.deletes),
                ),
            }
            with self._conf(confs):
                (
                    DeltaTable.forPath(self._spark, path)
                    .alias("t")
                    .merge(source.alias("s"), _merge_condition(schema, data))
                    .whenMatchedDelete(condition=flag)
                    .whenMatchedUpdate(set=assign)
                    .whenNotMatchedInsert(condition=f"NOT {flag}", values=assign)
                    .execute()
                )
            self._committed(path)

    # -- helpers ----------------------------------------------------------------------------------

    def _committed(self, path: str) -> None:
        every = self._config.optimize_every_commits
        with _LOCK:
            count = _COMMITS[path] = _COMMITS.get(path, 0) + 1
        if every and count % every == 0:
            from delta.tables import DeltaTable

            DeltaTable.forPath(self._spark, path).optimize().executeCompaction()
            log.info("optimized %s after %d commits", path, count)

    @contextlib.contextmanager
    def _conf(self, values: Mapping[str, str]) -> Iterator[None]:
        conf = self._spark.conf
        for key, value in values.items():
            conf.set(key, value)
        try:
            yield
        finally:
            for key in values:
                conf.unset(key)

    @contextlib.contextmanager
    def _failing(self, what: str, path: str) -> Iterator[None]:
        try:
            yield
        except SinkError:
            raise
        except Exception as err:
            raise SinkError(f"the delta sink failed {what} at {path}: {_short(err)}") from err

    def close(self) -> None:
        return None


def _driver_session(config: DeltaSinkConfig) -> Any:
    """A session of its own (its settings: idempotent-write marks, commit metadata) on the
    driver's Spark context, which must have been created with Delta (spark/session.py)."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    if SparkContext._active_spark_context is None:
        raise SinkError(
            f"the {config.describe()} sink writes from the Spark driver; no Spark session is running here"
        )
    base = SparkSession.builder.getOrCreate()
    extensions = base.conf.get("spark.sql.extensions", "") or ""
    if "DeltaSparkSessionExtension" not in extensions:
        raise SinkError(
            f"the Spark session was created without Delta Lake, which the {config.describe()} sink needs; "
            "create it with sparkcdc.spark.session.delta_conf() (sparkcdc run does this for delta sinks)"
        )
    session = base.newSession()
    session.conf.set("spark.sql.session.timeZone", _SESSION_TIME_ZONE)
    # A MERGE's source is a batch already in memory (deterministic): no copy of it first.
    session.conf.set("spark.databricks.delta.merge.materializeSource", "none")
    return session


def _short(err: BaseException) -> str:
    text = str(err).strip() or type(err).__name__
    lines = [line for line in text.splitlines() if line.strip()]
    return " ".join(lines[:3])[:1500]


def _sql_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _merged_ranges(
    ranges: Sequence[tuple[Key | None, Key | None]], order: KeyOrder
) -> list[tuple[Key | None, Key | None]]:
    """Adjacent ranges (one's end is the next one's start) joined: a shorter predicate."""
    import functools

    def compare(a: tuple[Key | None, Key | None], b: tuple[Key | None, Key | None]) -> int:
        if a[0] is None or b[0] is None:
            return (a[0] is not None) - (b[0] is not None)
        return order.compare(a[0], b[0])

    out: list[tuple[Key | None, Key | None]] = []
    for start, end in sorted(ranges, key=functools.cmp_to_key(compare)):
        if out:
            prev_start, prev_end = out[-1]
            if prev_end is not None and start is not None and order.equal(prev_end, start):
                out[-1] = (prev_start, end)
                continue
        out.append((start, end))
    return out


def _bound_sql(schema: TableSchema, key: Key, lower: bool) -> str:
    """``key_columns >= key`` (lower) or ``key_columns < key`` in row order, expanded."""
    columns = schema.chunk_key_columns
    last = len(columns) - 1
    strict, final = (">", ">=") if lower else ("<", "<")
    expr = f"{quote_ident(columns[last].name)} {final} {sql_literal(columns[last], key[last])}"
    for i in range(last - 1, -1, -1):
        name, value = quote_ident(columns[i].name), sql_literal(columns[i], key[i])
        expr = f"({name} {strict} {value} OR ({name} = {value} AND {expr}))"
    return expr


def _ranges_sql(schema: TableSchema, ranges: Sequence[tuple[Key | None, Key | None]], order: KeyOrder) -> str:
    parts = []
    for start, end in _merged_ranges(ranges, order):
        bounds = []
        if start is not None:
            bounds.append(_bound_sql(schema, start, lower=True))
        if end is not None:
            bounds.append(_bound_sql(schema, end, lower=False))
        if not bounds:
            return "true"
        parts.append("(" + " AND ".join(bounds) + ")")
    return " OR ".join(parts) or "false"


def _keys_sql(schema: TableSchema, keys: Sequence[Key]) -> str:
    columns = schema.chunk_key_columns
    if len(columns) == 1:
        values = ", ".join(sql_literal(columns[0], k[0]) for k in keys)
        return f"{quote_ident(columns[0].name)} IN ({values})"
    names = ", ".join(quote_ident(c.name) for c in columns)
    rows = ", ".join(
        "(" + ", ".join(sql_literal(c, v) for c, v in zip(columns, k, strict=True)) + ")" for k in keys
    )
    return f"({names}) IN ({rows})"


def _changes_table(schema: TableSchema, changes: TableChanges) -> pa.Table:
    """Upserts (full rows) and deletes (keys, other columns null) with the delete flag."""
    arrow = schema.arrow_schema()
    names = schema.column_names
    upserts = [{n: row.get(n) for n in names} for row in changes.upserts.values()]
    deletes = [dict(zip(schema.row_key, key, strict=True)) for key in changes.deletes]
    canonical = pa.Table.from_pylist(upserts + deletes, schema=arrow)
    flags = pa.array([False] * len(upserts) + [True] * len(deletes), pa.bool_())
    return to_spark_arrow(schema, canonical).append_column(
        pa.field(DELETE_FLAG, pa.bool_(), nullable=False), flags
    )


def _changes_struct(schema: TableSchema) -> Any:
    from pyspark.sql import types as T  # noqa: N812

    return spark_struct(schema).add(DELETE_FLAG, T.BooleanType(), False)


def _merge_condition(schema: TableSchema, data: pa.Table) -> str:
    """Key equality, plus the batch's key span on the first key column so Delta skips the files
    outside it (its min/max statistics): matches are equal values, so they lie in the span."""
    parts = [f"t.{quote_ident(k)} = s.{quote_ident(k)}" for k in schema.row_key]
    first = schema.column(schema.row_key[0])
    if first.family not in (Family.FLOAT, Family.DOUBLE):  # NaN sorts outside any span
        # ``data`` holds the stored (Spark) values already; bounds over them directly.
        stored = data.column(first.name)
        span = pc.min_max(stored)
        low, high = span["min"].as_py(), span["max"].as_py()
        if low is not None:
            name = f"t.{quote_ident(first.name)}"
            parts.append(f"{name} >= {sql_stored_literal(first, low)}")
            parts.append(f"{name} <= {sql_stored_literal(first, high)}")
    return " AND ".join(parts)


_NUMBER = re.compile(r"^[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$")


def _default_value(add: AddedColumn) -> tuple[Any, str]:
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
