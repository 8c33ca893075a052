"""Planning a table's snapshot splits with the source's help (architecture §3 rule 1)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from sparkcdc.api.spec import SnapshotSpec
from sparkcdc.core.chunking import iter_uneven_splits, plan_even_splits
from sparkcdc.core.keys import KeyOrder
from sparkcdc.core.splits import Key, SnapshotSplit
from sparkcdc.mysql.chunk_reader import key_bounds, next_boundary
from sparkcdc.mysql.schema import TableSchema


def key_order(schema: TableSchema) -> KeyOrder:
    return KeyOrder.for_columns(schema.key_collations())


def plan_table(conn: Any, schema: TableSchema, snapshot: SnapshotSpec) -> list[SnapshotSplit]:
    """Even splits for an evenly distributed integer key, database-computed boundaries otherwise."""
    table = schema.table
    if schema.is_numeric_single_key:
        low, high, rows = key_bounds(conn, schema)
        if low is None or high is None:
            return [SnapshotSplit(table, 0, None, None)]
        factor = snapshot.even_distribution_factor
        if isinstance(low, (int, Decimal)) and isinstance(high, (int, Decimal)):
            even = plan_even_splits(
                table, int(low), int(high), rows, snapshot.chunk_size, factor.lower, factor.upper
            )
            if even is not None:
                return even
    return tail_splits(conn, schema, snapshot.chunk_size, start=None, first_index=0)


def tail_splits(
    conn: Any, schema: TableSchema, chunk_size: int, *, start: Key | None, first_index: int
) -> list[SnapshotSplit]:
    """Splits from ``start`` to the end of the table, ``chunk_size`` rows each."""

    def boundary_after(previous: Key | None) -> Key | None:
        return next_boundary(conn, schema, previous, chunk_size)

    return list(
        iter_uneven_splits(
            schema.table, boundary_after, order=key_order(schema), start=start, first_index=first_index
        )
    )
