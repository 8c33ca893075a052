"""Split planning: cut a table's key space into half-open chunks (architecture §3 rule 1).

Every plan is a list of contiguous splits ``[None, b0), [b0, b1), ..., [bn-1, None)``: the first
and last are unbounded, so any key — also one inserted below the minimum or above the maximum
while the snapshot runs — falls in exactly one split. A plan is therefore fully described by its
boundary list (``boundaries_of`` / ``splits_from_boundaries``), which is what checkpoints store.

* ``plan_even_splits``: numeric keys whose distribution factor lies within the configured bounds
  are cut arithmetically (Flink CDC's dynamic chunk size: ``step = ceil(chunk_size * factor)``).
  All arithmetic is on exact integers, so keys near 2**64 are fine.
* ``plan_uneven_splits`` / ``iter_uneven_splits``: boundaries come from the database, one query
  per chunk, through a ``next_boundary`` callback supplied by the MySQL layer.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from decimal import Decimal
from fractions import Fraction

from sparkcdc.core.keys import KeyOrder
from sparkcdc.core.splits import Key, SnapshotSplit
from sparkcdc.core.tables import TableId

__all__ = [
    "NextBoundary",
    "boundaries_of",
    "distribution_factor",
    "iter_uneven_splits",
    "plan_even_splits",
    "plan_uneven_splits",
    "split_oversized",
    "splits_from_boundaries",
]

# ``next_boundary(previous)`` -> the next chunk end, strictly greater than ``previous`` (``None``
# for the first call), or ``None`` when fewer than a chunk's worth of rows remain. A reference
# query: ``SELECT k FROM t WHERE k >= :previous ORDER BY k LIMIT 1 OFFSET :chunk_size`` (without
# the WHERE clause on the first call), which makes ``[previous, boundary)`` hold ``chunk_size``
# rows; Flink's ``SELECT MAX(k) FROM (SELECT k ... WHERE k >= ? ORDER BY k LIMIT n)`` works too
# as long as the caller bumps a result equal to ``previous`` to the next larger key.
NextBoundary = Callable[[Key | None], Key | None]


def distribution_factor(min_key: int | Decimal, max_key: int | Decimal, approx_rows: int) -> float:
    """``(max - min + 1) / approx_rows``; an estimate of 0 rows counts as 1."""
    return float(_exact_factor(min_key, max_key, approx_rows))


def _exact_factor(min_key: int | Decimal, max_key: int | Decimal, approx_rows: int) -> Fraction:
    span = Fraction(max_key) - Fraction(min_key) + 1
    return span / max(approx_rows, 1)


def splits_from_boundaries(
    table: TableId, boundaries: Sequence[Key], *, complete: bool = True
) -> list[SnapshotSplit]:
    """The contiguous splits ``[None, b0), [b0, b1), ..., [bn-1, None)``.

    With ``complete=False`` (planning still in progress) the open tail split ``[bn-1, ...)`` is
    not known yet and is left out: ``[None, b0), ..., [bn-2, bn-1)``.
    """
    edges: list[Key | None] = [None, *boundaries]
    if complete:
        edges.append(None)
    return [SnapshotSplit(table, i, edges[i], edges[i + 1]) for i in range(len(edges) - 1)]


def boundaries_of(splits: Sequence[SnapshotSplit]) -> list[Key]:
    """The inner boundaries of a contiguous split list starting at ``None`` (the inverse of
    ``splits_from_boundaries``); raises ``ValueError`` when the splits are not contiguous."""
    boundaries: list[Key] = []
    previous_end: Key | None = None
    for position, split in enumerate(splits):
        if split.index != position:
            raise ValueError(f"split {split.split_id} is at position {position}")
        if split.start != previous_end:
            raise ValueError(f"split {split.split_id} starts at {split.start!r}, not {previous_end!r}")
        if position > 0 and split.start is None:
            raise ValueError(f"split {split.split_id} has no start but is not the first")
        if split.end is not None:
            boundaries.append(split.end)
        elif position != len(splits) - 1:
            raise ValueError(f"split {split.split_id} is unbounded but not the last")
        previous_end = split.end
    return boundaries


def _within(factor: Fraction, lower: float, upper: float) -> bool:
    above = lower == -math.inf or (math.isfinite(lower) and Fraction(lower) <= factor)
    below = upper == math.inf or (math.isfinite(upper) and factor <= Fraction(upper))
    return above and below


def plan_even_splits(
    table: TableId,
    min_key: int,
    max_key: int,
    approx_rows: int,
    chunk_size: int,
    lower: float,
    upper: float,
) -> list[SnapshotSplit] | None:
    """Arithmetic splits for an evenly distributed integer key, or ``None`` when it is not.

    The key is evenly distributed when ``lower <= distribution_factor(...) <= upper``. The step
    is ``max(1, ceil(chunk_size * factor))`` and the boundaries are ``min + step``,
    ``min + 2*step``, ... up to and including ``max``.
    """
    if chunk_size < 1:
        raise ValueError(f"chunk size must be positive, got {chunk_size}")
    if min_key > max_key:
        raise ValueError(f"min key {min_key} is greater than max key {max_key}")
    factor = _exact_factor(min_key, max_key, approx_rows)
    if not _within(factor, lower, upper):
        return None
    step = max(1, math.ceil(chunk_size * factor))
    count = (max_key - min_key) // step  # boundaries min + k*step <= max for k = 1..count
    boundaries: list[Key] = [(min_key + k * step,) for k in range(1, count + 1)]
    return splits_from_boundaries(table, boundaries)


def iter_uneven_splits(
    table: TableId,
    next_boundary: NextBoundary,
    *,
    order: KeyOrder | None = None,
    start: Key | None = None,
    first_index: int = 0,
) -> Iterator[SnapshotSplit]:
    """Plan splits one query at a time, yielding each split as soon as its end is known.

    The last split yielded has ``end=None``. To resume an interrupted plan, pass the end of the
    last split already persisted as ``start`` and its index + 1 as ``first_index``.
    """
    order = order or KeyOrder()
    previous = start
    index = first_index
    while True:
        boundary = next_boundary(previous)
        if boundary is None:
            yield SnapshotSplit(table, index, previous, None)
            return
        if previous is not None and order.compare(boundary, previous) <= 0:
            raise ValueError(f"next chunk boundary {boundary!r} of {table} is not greater than {previous!r}")
        yield SnapshotSplit(table, index, previous, boundary)
        previous = boundary
        index += 1


def plan_uneven_splits(
    table: TableId,
    chunk_size: int,
    next_boundary: NextBoundary,
    *,
    order: KeyOrder | None = None,
) -> list[SnapshotSplit]:
    """All splits of a table from database-computed boundaries (see ``NextBoundary``).

    ``chunk_size`` is the number of rows per chunk that ``next_boundary`` was built with; it is
    validated here. An empty table gets the single split ``[None, None)``.
    """
    if chunk_size < 1:
        raise ValueError(f"chunk size must be positive, got {chunk_size}")
    return list(iter_uneven_splits(table, next_boundary, order=order))


def split_oversized(
    split: SnapshotSplit, boundaries: Sequence[Key], *, order: KeyOrder | None = None
) -> list[SnapshotSplit]:
    """Cut one split at ``boundaries`` (strictly increasing, strictly inside the split).

    The pieces cover exactly the original ``[start, end)`` and are numbered from
    ``split.index`` upwards; the caller renumbers the table's later splits (see
    ``SnapshotSplitAssigner.resplit``).
    """
    order = order or KeyOrder()
    previous = split.start
    for boundary in boundaries:
        too_low = previous is not None and order.compare(boundary, previous) <= 0
        too_high = split.end is not None and order.compare(boundary, split.end) >= 0
        if too_low or too_high:
            raise ValueError(f"boundary {boundary!r} is not strictly inside {split.split_id}")
        previous = boundary
    edges: list[Key | None] = [split.start, *boundaries, split.end]
    return [
        SnapshotSplit(split.table, split.index + i, edges[i], edges[i + 1]) for i in range(len(edges) - 1)
    ]
