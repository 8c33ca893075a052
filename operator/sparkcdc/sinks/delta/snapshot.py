"""Snapshot waves into a Delta table: the wave's split ranges replaced atomically (architecture §3 rule 3).

A wave's commit makes the table's rows in the wave's split ranges exactly the rows read:

* When the table's history proves the ranges hold no rows (``ledger.py``), the rows are
  appended. This is the normal case.
* Otherwise (a wave re-run after a crash between the commit and the checkpoint, a grown tail
  split re-cut, a re-snapshot over existing rows, a repair) the ranges are replaced with
  ``replaceWhere``: a range predicate when Spark orders the chunk key as MySQL does (numbers,
  dates, times, binary), and, for string keys (collations, PAD SPACE) or decimals stored as
  text, the exact list of keys in the ranges, chosen in Python with the same ``KeyOrder`` the
  split reader uses.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from sparkcdc.core.jsoncodec import encode_key
from sparkcdc.core.keys import KeyOrder
from sparkcdc.core.splits import Key, SnapshotSplit
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks.delta.config import metadata
from sparkcdc.sinks.delta.ledger import table_ledger
from sparkcdc.sinks.delta.session import session_conf
from sparkcdc.sinks.spark_types import from_spark_arrow, is_spark_ordered, quote_ident, sql_literal
from sparkcdc.sinks.targets import scope_column

__all__ = ["keys_sql", "ranges_sql", "scope_sql", "snapshot_metadata", "write_wave"]

Range = tuple[Key | None, Key | None]


def write_wave(
    spark: Any, schema: TableSchema, path: str, splits: Sequence[SnapshotSplit], rows: Any
) -> None:
    """One commit: the rows of ``splits``' ranges become exactly ``rows`` (module docstring)."""
    ranges = [(s.start, s.end) for s in splits]
    order = KeyOrder.for_columns(schema.key_collations())
    writer = rows.write.format("delta").option("userMetadata", snapshot_metadata(schema, splits))
    if table_ledger(spark, path).empty_in(ranges, order):
        writer.mode("append").save(path)
    elif all(is_spark_ordered(c) for c in schema.chunk_key_columns):
        where = scope_sql(schema, ranges_sql(schema, ranges, order))
        writer.mode("overwrite").option("replaceWhere", where).save(path)
    else:
        doomed = _keys_in_ranges(spark, schema, path, ranges, order)
        if not doomed:
            writer.mode("append").save(path)
            return
        # The rows' keys are in the ranges but not in this list: no constraint check.
        with session_conf(spark, {"spark.databricks.delta.replaceWhere.constraintCheck.enabled": "false"}):
            writer.mode("overwrite").option("replaceWhere", scope_sql(schema, keys_sql(schema, doomed))).save(
                path
            )


def scope_sql(schema: TableSchema, predicate: str) -> str:
    """``predicate`` confined to this table's rows of a target merged by a route."""
    if not schema.scope:
        return predicate
    equal = [f"{quote_ident(n)} = {sql_literal(scope_column(n), v)}" for n, v in schema.scope]
    return f"({predicate}) AND " + " AND ".join(equal)


def snapshot_metadata(schema: TableSchema, splits: Sequence[SnapshotSplit]) -> str:
    """The commit's split ranges: what ``Ledger`` reads back to allow later appends."""
    return metadata(
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


def _keys_in_ranges(
    spark: Any, schema: TableSchema, path: str, ranges: Sequence[Range], order: KeyOrder
) -> list[Key]:
    """The table's chunk keys in ``ranges`` as MySQL orders them (candidates bounded in Spark
    by the leading column where Spark orders it, then the exact check in Python)."""
    names = list(schema.chunk_key)
    frame = spark.read.format("delta").load(path).where(scope_sql(schema, "true"))
    frame = frame.select(*[quote_ident(n) for n in names]).distinct()
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


# -- predicates -------------------------------------------------------------------------------------


def _merged_ranges(ranges: Sequence[Range], order: KeyOrder) -> list[Range]:
    """Adjacent ranges (one's end is the next one's start) joined: a shorter predicate."""

    def compare(a: Range, b: Range) -> int:
        if a[0] is None or b[0] is None:
            return (a[0] is not None) - (b[0] is not None)
        return order.compare(a[0], b[0])

    out: list[Range] = []
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


def ranges_sql(schema: TableSchema, ranges: Sequence[Range], order: KeyOrder) -> str:
    """A Spark SQL predicate true exactly for chunk keys in ``ranges`` (Spark-ordered keys)."""
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


def keys_sql(schema: TableSchema, keys: Sequence[Key]) -> str:
    """A Spark SQL predicate true exactly for the chunk keys ``keys``."""
    columns = schema.chunk_key_columns
    if len(columns) == 1:
        values = ", ".join(sql_literal(columns[0], k[0]) for k in keys)
        return f"{quote_ident(columns[0].name)} IN ({values})"
    names = ", ".join(quote_ident(c.name) for c in columns)
    rows = ", ".join(
        "(" + ", ".join(sql_literal(c, v) for c, v in zip(columns, k, strict=True)) + ")" for k in keys
    )
    return f"({names}) IN ({rows})"
