from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkcdc.core.chunking import (
    boundaries_of,
    distribution_factor,
    iter_uneven_splits,
    plan_even_splits,
    plan_uneven_splits,
    split_oversized,
    splits_from_boundaries,
)
from sparkcdc.core.keys import KeyOrder, key_in_range
from sparkcdc.core.splits import Key, SnapshotSplit
from sparkcdc.core.tables import TableId

pytestmark = pytest.mark.unit

T = TableId("shop", "orders")
U64_MAX = 2**64 - 1


def assert_covers(splits: Sequence[SnapshotSplit], keys: Sequence[Key], order: KeyOrder) -> None:
    """Structure is contiguous and every key falls in exactly one split."""
    assert splits[0].start is None and splits[-1].end is None
    assert [s.index for s in splits] == list(range(len(splits)))
    for a, b in itertools.pairwise(splits):
        assert a.end is not None and a.end == b.start
        if a.start is not None:
            assert order.compare(a.start, a.end) < 0
    for key in keys:
        owners = [s for s in splits if key_in_range(key, s.start, s.end, order)]
        assert len(owners) == 1, (key, owners)


def mysql_next_boundary(
    keys: Sequence[Key], chunk_size: int, order: KeyOrder
) -> Callable[[Key | None], Key | None]:
    """What the MySQL layer computes: the key ``chunk_size`` rows after ``previous`` (inclusive),
    over the table's keys in the collation's order."""
    ordered = sorted(keys, key=order.sort_key)
    sort_keys = [order.sort_key(k) for k in ordered]

    def next_boundary(previous: Key | None) -> Key | None:
        first = 0 if previous is None else bisect.bisect_left(sort_keys, order.sort_key(previous))
        target = first + chunk_size
        return ordered[target] if target < len(ordered) else None

    return next_boundary


def test_distribution_factor() -> None:
    assert distribution_factor(1, 100, 100) == 1.0
    assert distribution_factor(1, 100, 0) == 100.0
    assert distribution_factor(0, U64_MAX, 2**32) == 2.0**32


def test_even_split_example() -> None:
    splits = plan_even_splits(T, 1, 100, 100, 10, 0.05, 1000.0)
    assert splits is not None
    assert boundaries_of(splits) == [(b,) for b in range(11, 100, 10)]
    assert len(splits) == 10


def test_even_split_dynamic_chunk_size() -> None:
    # factor 2.5 -> step ceil(10 * 2.5) = 25
    splits = plan_even_splits(T, 0, 249, 100, 10, 0.05, 1000.0)
    assert splits is not None
    assert boundaries_of(splits) == [(25,), (50,), (75,), (100,), (125,), (150,), (175,), (200,), (225,)]


def test_even_split_rejects_uneven_distribution() -> None:
    assert plan_even_splits(T, 0, 10**9, 10, 10, 0.05, 1000.0) is None
    assert plan_even_splits(T, 0, 9, 1000, 10, 0.05, 1000.0) is None
    assert plan_even_splits(T, 0, 10**9, 10, 10, 0.05, float("inf")) is not None


def test_even_split_single_row_and_errors() -> None:
    assert plan_even_splits(T, 5, 5, 1, 10, 0.05, 1000.0) == [SnapshotSplit(T, 0, None, None)]
    with pytest.raises(ValueError):
        plan_even_splits(T, 6, 5, 1, 10, 0.05, 1000.0)
    with pytest.raises(ValueError):
        plan_even_splits(T, 0, 5, 1, 0, 0.05, 1000.0)


def probe_keys(lo: int, hi: int, boundaries: Sequence[Key]) -> list[Key]:
    probes = {lo - 1, lo, hi, hi + 1, 0, U64_MAX, -1, 2**64}
    stride = max(1, len(boundaries) // 15)
    for key in [*boundaries[::stride], *boundaries[-2:]]:
        b = int(key[0])  # type: ignore[arg-type]
        probes |= {b - 1, b, b + 1}
    return [(p,) for p in sorted(probes)]


@settings(max_examples=150, deadline=None)
@given(
    base=st.sampled_from([0, 2**63 - 1000, U64_MAX - 10**6]),
    lo_off=st.integers(0, 1000),
    span=st.integers(0, 10**6),
    rows=st.integers(0, 3000),
    chunk=st.integers(5, 500),
)
def test_even_splits_cover_the_key_space(base: int, lo_off: int, span: int, rows: int, chunk: int) -> None:
    lo = base + lo_off
    hi = min(lo + span, U64_MAX)
    splits = plan_even_splits(T, lo, hi, rows, chunk, 0.0, float("inf"))
    assert splits is not None
    boundaries = boundaries_of(splits)
    assert all(lo < b[0] <= hi for b in boundaries)  # type: ignore[operator]
    assert_covers(splits, probe_keys(lo, hi, boundaries), KeyOrder())


@settings(max_examples=100, deadline=None)
@given(
    keys=st.sets(st.one_of(st.integers(0, 200), st.integers(U64_MAX - 200, U64_MAX)), max_size=120),
    chunk=st.integers(1, 20),
    probes=st.lists(st.integers(-5, 2**64 + 5), max_size=20),
)
def test_uneven_int_splits_cover_the_key_space(keys: set[int], chunk: int, probes: list[int]) -> None:
    order = KeyOrder()
    table_keys = [(k,) for k in keys]
    splits = plan_uneven_splits(T, chunk, mysql_next_boundary(table_keys, chunk, order))
    assert_covers(splits, table_keys + [(p,) for p in probes] + [(-1,), (2**64,)], order)
    # each bounded chunk holds exactly chunk_size of the table's rows
    for split in splits[:-1]:
        assert sum(key_in_range(k, split.start, split.end) for k in table_keys) == chunk


@settings(max_examples=100, deadline=None)
@given(
    keys=st.sets(st.tuples(st.integers(0, 5), st.text(alphabet="aAbB ", max_size=3)), max_size=80),
    chunk=st.integers(1, 10),
    probes=st.lists(st.tuples(st.integers(-1, 6), st.text(alphabet="aAbBc \t", max_size=4)), max_size=20),
)
def test_uneven_composite_collated_splits_cover(
    keys: set[tuple[int, str]], chunk: int, probes: list[tuple[int, str]]
) -> None:
    order = KeyOrder.for_columns([None, "utf8mb4_general_ci"])
    # a primary key is unique under the collation
    unique: dict[Any, Key] = {}
    for key in keys:
        unique.setdefault(order.sort_key(key), key)
    table_keys = list(unique.values())
    splits = plan_uneven_splits(T, chunk, mysql_next_boundary(table_keys, chunk, order), order=order)
    assert_covers(splits, table_keys + list(probes), order)


@settings(max_examples=100, deadline=None)
@given(
    keys=st.sets(st.text(alphabet="aAéÉbB_ \t", max_size=4), max_size=60),
    chunk=st.integers(1, 8),
    collation=st.sampled_from(
        ["utf8mb4_bin", "utf8mb4_unicode_ci", "utf8mb4_0900_ai_ci", "latin1_swedish_ci"]
    ),
    probes=st.lists(st.text(alphabet="aAéÉbBc_ \t", max_size=5), max_size=20),
)
def test_uneven_string_splits_cover_with_collation(
    keys: set[str], chunk: int, collation: str, probes: list[str]
) -> None:
    order = KeyOrder.for_columns([collation])
    unique: dict[Any, Key] = {}
    for key in keys:
        unique.setdefault(order.sort_key((key,)), (key,))
    table_keys = list(unique.values())
    splits = plan_uneven_splits(T, chunk, mysql_next_boundary(table_keys, chunk, order), order=order)
    assert_covers(splits, table_keys + [(p,) for p in probes], order)


def test_uneven_empty_table_is_one_split() -> None:
    assert plan_uneven_splits(T, 10, lambda previous: None) == [SnapshotSplit(T, 0, None, None)]


def test_uneven_rejects_non_increasing_boundaries() -> None:
    with pytest.raises(ValueError, match="not greater"):
        plan_uneven_splits(T, 10, lambda previous: (5,))


def test_iter_uneven_splits_resumes() -> None:
    keys = [(k,) for k in range(0, 1000, 3)]
    nb = mysql_next_boundary(keys, 25, KeyOrder())
    full = plan_uneven_splits(T, 25, nb)
    head = []
    for split in iter_uneven_splits(T, nb):
        head.append(split)
        if len(head) == 4:
            break
    rest = list(iter_uneven_splits(T, nb, start=head[-1].end, first_index=4))
    assert head + rest == full


@settings(max_examples=100, deadline=None)
@given(
    cuts=st.sets(st.integers(1, 999), max_size=10),
    start=st.one_of(st.none(), st.just(0)),
    end=st.one_of(st.none(), st.just(1000)),
    probes=st.lists(st.integers(-10, 1010), max_size=30),
)
def test_split_oversized_keeps_coverage(
    cuts: set[int], start: int | None, end: int | None, probes: list[int]
) -> None:
    split = SnapshotSplit(T, 7, None if start is None else (start,), None if end is None else (end,))
    pieces = split_oversized(split, [(c,) for c in sorted(cuts)])
    assert [p.index for p in pieces] == list(range(7, 7 + len(pieces)))
    assert pieces[0].start == split.start and pieces[-1].end == split.end
    for k in probes:
        inside = key_in_range((k,), split.start, split.end)
        owners = sum(key_in_range((k,), p.start, p.end) for p in pieces)
        assert owners == (1 if inside else 0)


def test_split_oversized_rejects_boundaries_outside() -> None:
    split = SnapshotSplit(T, 0, (10,), (20,))
    for bad in ([(10,)], [(20,)], [(15,), (12,)], [(25,)]):
        with pytest.raises(ValueError):
            split_oversized(split, bad)


def test_boundaries_round_trip_and_incomplete_plans() -> None:
    bounds: list[Key] = [(10,), (20,), (30,)]
    splits = splits_from_boundaries(T, bounds)
    assert len(splits) == 4 and boundaries_of(splits) == bounds
    partial = splits_from_boundaries(T, bounds, complete=False)
    assert [(s.start, s.end) for s in partial] == [(None, (10,)), ((10,), (20,)), ((20,), (30,))]
    assert boundaries_of(partial) == bounds
    assert splits_from_boundaries(T, []) == [SnapshotSplit(T, 0, None, None)]
    with pytest.raises(ValueError):
        boundaries_of([splits[0], splits[2]])
