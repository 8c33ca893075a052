from __future__ import annotations

import datetime as dt
import json
import random
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkcdc.core.checkpoint import (
    Checkpoint,
    CheckpointError,
    Phase,
    TablePlan,
    TableState,
    collapse_pure_tables,
    collapse_table,
    decode,
    encode,
)
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.splits import FinishedSplitInfo, Key, SnapshotSplit
from sparkcdc.core.tables import TableId

pytestmark = pytest.mark.unit

T = TableId("shop", "orders")
T2 = TableId("shop", "order_items")
SIZE_LIMIT = 256 * 1024


def through_json(doc: Any) -> Any:
    return json.loads(json.dumps(doc, separators=(",", ":")))


def compact_size(doc: Any) -> int:
    return len(json.dumps(doc, separators=(",", ":")))


def numbers_are_safe(doc: Any) -> bool:
    """Only integers that every JSON parser (Go's, JavaScript's) keeps exactly."""
    if isinstance(doc, dict):
        return all(numbers_are_safe(v) for v in doc.values())
    if isinstance(doc, list):
        return all(numbers_are_safe(v) for v in doc)
    if isinstance(doc, float):
        return False
    if isinstance(doc, int) and not isinstance(doc, bool):
        return abs(doc) < 2**53
    return True


def offset_of(value: object) -> object:
    return value.utcoffset() if isinstance(value, (dt.datetime, dt.time)) else None


def finished_all(
    table: TableId, plan: TablePlan, watermarks: list[BinlogOffset], rows: int = 0
) -> list[FinishedSplitInfo]:
    return [
        FinishedSplitInfo(s, watermarks[i % len(watermarks)], rows) for i, s in enumerate(plan.splits(table))
    ]


FIXED_ZONES = st.timedeltas(min_value=-dt.timedelta(hours=23), max_value=dt.timedelta(hours=23)).map(
    lambda d: dt.timezone(dt.timedelta(minutes=d // dt.timedelta(minutes=1)))
)
key_values = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([2**53 - 1, 2**53, 2**53 + 1, 2**63, 2**64 - 1, -(2**63)]),
    st.decimals(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.binary(max_size=12),
    st.floats(allow_nan=False),
    # the database hands out naive values or fixed UTC offsets (named zones are not key values)
    st.datetimes(timezones=st.one_of(st.none(), st.just(dt.timezone.utc), FIXED_ZONES)),
    st.dates(),
    st.times(),
    st.timedeltas(),
    st.none(),
)
keys = st.lists(key_values, min_size=1, max_size=3).map(tuple)
offsets = st.builds(
    BinlogOffset,
    st.sampled_from(["mysql-bin.000001", "mysql-bin.000002", "mysql-bin.1000000", "other.000007"]),
    st.integers(4, 2**40),
    st.sampled_from(["", "3E11FA47-71CA-11E1-9E33-C80AA9429562:1-77"]),
)


@st.composite
def checkpoints(draw: st.DrawFn) -> Checkpoint:
    tables: dict[TableId, TableState] = {}
    plans: dict[TableId, TablePlan] = {}
    finished: dict[TableId, tuple[FinishedSplitInfo, ...]] = {}
    for name in draw(st.sets(st.sampled_from(["a", "b", "c.d", "e"]), max_size=3)):
        table = TableId("db", name)
        tables[table] = draw(st.builds(TableState, st.sampled_from(Phase), st.text(max_size=20)))
        if draw(st.booleans()):
            continue
        ints = draw(st.booleans())
        bounds = draw(
            st.lists(st.integers(-(2**65), 2**65).map(lambda v: (v,)) if ints else keys, max_size=8)
        )
        plan = TablePlan(
            tuple(bounds), draw(st.booleans()), tuple(draw(st.lists(st.text(max_size=5), max_size=2)))
        )
        plans[table] = plan
        splits = plan.splits(table)
        chosen = draw(st.sets(st.integers(0, len(splits) - 1), max_size=len(splits))) if splits else set()
        finished[table] = tuple(
            FinishedSplitInfo(splits[i], draw(offsets), draw(st.integers(0, 10**9))) for i in sorted(chosen)
        )
    return Checkpoint(
        tables=tables,
        plans=plans,
        finished={t: f for t, f in finished.items() if f},
        snapshot_done=draw(st.booleans()),
        binlog_offset=draw(st.one_of(st.none(), offsets)),
        snapshot_end_offset=draw(st.one_of(st.none(), offsets)),
        server_ids=draw(
            st.one_of(st.none(), st.tuples(st.integers(1, 2**32 - 1), st.integers(1, 2**32 - 1)))
        ),
    )


@settings(max_examples=300, deadline=None)
@given(checkpoints())
def test_round_trip(checkpoint: Checkpoint) -> None:
    doc = encode(checkpoint)
    assert numbers_are_safe(doc)
    assert decode(through_json(doc)) == checkpoint


@settings(max_examples=300, deadline=None)
@given(st.lists(keys, max_size=20))
def test_key_values_round_trip_exactly(bounds: list[Key]) -> None:
    plan = TablePlan(tuple(bounds))
    cp = Checkpoint(tables={T: TableState()}, plans={T: plan})
    decoded = decode(through_json(encode(cp)))
    for got, want in zip(decoded.plans[T].boundaries, bounds, strict=True):
        assert [type(v) for v in got] == [type(v) for v in want]
        assert got == want
        # time zones survive as fixed UTC offsets
        assert [offset_of(v) for v in got] == [offset_of(v) for v in want]


def test_explicit_values_survive() -> None:
    bounds: list[Key] = [
        (2**64 - 1,),
        (Decimal("1.10"), "x"),
        (b"\x00\xff", dt.datetime(2024, 2, 29, 23, 59, 59, 999999)),
        (dt.date(1000, 1, 1), dt.time(12, 0, 0, 1), dt.timedelta(hours=-838, seconds=1)),
        (1.0, -0.0, 1e300),
    ]
    cp = Checkpoint(tables={T: TableState()}, plans={T: TablePlan(tuple(bounds), key_columns=("id",))})
    doc = through_json(encode(cp))
    got = decode(doc).plans[T].boundaries
    assert got == tuple(bounds)
    assert str(got[1][0]) == "1.10" and type(got[4][0]) is float


def test_unknown_version_is_rejected() -> None:
    with pytest.raises(CheckpointError, match="version 3 is not supported"):
        decode({"version": 3})
    with pytest.raises(CheckpointError):
        decode([])
    with pytest.raises(CheckpointError, match="malformed"):
        decode({"version": 1, "tables": [{"db": "a"}]})


def test_even_plan_is_a_handful_of_numbers() -> None:
    plan = TablePlan(tuple((1 + 8096 * k,) for k in range(1, 12_400)))
    doc = encode(Checkpoint(tables={T: TableState()}, plans={T: plan}))
    assert doc["tables"][0]["plan"]["boundaries"] == {"ints": [8097, [8096, 12_398]]}


def uneven_plan(rng: random.Random, count: int) -> TablePlan:
    key = 10**9
    bounds = []
    for _ in range(count - 1):
        key += rng.randint(8096, 9000)  # ids with gaps
        bounds.append((key,))
    return TablePlan(tuple(bounds), key_columns=("id",))


def test_size_many_splits_few_watermarks() -> None:
    rng = random.Random(1)
    plan = uneven_plan(rng, 12_400)
    watermarks = [BinlogOffset(f"mysql-bin.{7 + i // 20:06d}", 4 + rng.randint(0, 2**30)) for i in range(60)]
    watermarks.sort()
    splits = plan.splits(T)
    infos = [
        FinishedSplitInfo(s, watermarks[i * 60 // len(splits)], rng.choice([8096, 8096, 8095]))
        for i, s in enumerate(splits)
    ]
    cp = Checkpoint(tables={T: TableState()}, plans={T: plan}, finished={T: tuple(infos)})
    doc = encode(cp)
    assert compact_size(doc) <= SIZE_LIMIT
    assert decode(through_json(doc)) == cp


def test_size_many_splits_each_with_its_own_watermark() -> None:
    rng = random.Random(2)
    plan = uneven_plan(rng, 12_400)
    splits = plan.splits(T)
    pos, file, watermarks = 4, 1, []
    for _ in splits:
        pos += rng.randint(100, 5_000_000)
        if pos > 2**30:
            pos, file = 4 + rng.randint(0, 1000), file + 1
        watermarks.append(BinlogOffset(f"mysql-bin.{file:06d}", pos))
    order = list(range(len(splits)))
    rng.shuffle(order)  # splits of a wave finish in any order
    infos = [
        FinishedSplitInfo(splits[i], watermarks[j], rng.randint(7000, 8096)) for i, j in enumerate(order)
    ]
    cp = Checkpoint(tables={T: TableState()}, plans={T: plan}, finished={T: tuple(infos)})
    doc = encode(cp)
    assert compact_size(doc) <= SIZE_LIMIT
    decoded = decode(through_json(doc))
    assert sorted(decoded.finished[T], key=lambda i: i.split.index) == infos


def test_finished_split_must_belong_to_the_plan() -> None:
    plan = TablePlan(((10,),))
    bogus = FinishedSplitInfo(SnapshotSplit(T, 1, (11,), None), BinlogOffset("b.000001", 4))
    with pytest.raises(ValueError, match="not in the plan"):
        encode(Checkpoint(plans={T: plan}, finished={T: (bogus,)}))


def test_collapse_table() -> None:
    plan = TablePlan(((10,), (20,)), key_columns=("id",))
    wms = [BinlogOffset("b.000001", 300), BinlogOffset("b.000001", 100), BinlogOffset("b.000001", 200)]
    infos = finished_all(T, plan, wms, rows=5)
    other_plan = TablePlan(((10,),))
    cp = Checkpoint(
        tables={T: TableState(), T2: TableState()},
        plans={T: plan, T2: other_plan},
        finished={T: tuple(infos), T2: tuple(finished_all(T2, other_plan, [BinlogOffset("b.000002", 4)]))},
        binlog_offset=BinlogOffset("b.000001", 250),
    )
    with pytest.raises(ValueError, match="has not reached"):
        collapse_table(cp, T)
    assert collapse_pure_tables(cp) == cp
    cp = Checkpoint(**{**cp.__dict__, "binlog_offset": BinlogOffset("b.000001", 300)})
    collapsed = collapse_pure_tables(cp)
    assert collapsed.plans[T] == TablePlan((), True, ("id",))
    assert collapsed.finished[T] == (FinishedSplitInfo(SnapshotSplit(T, 0, None, None), wms[0], 15),)
    assert collapsed.tables[T].phase is Phase.BINLOG
    assert collapsed.plans[T2] == other_plan  # its watermark is still ahead
    assert decode(through_json(encode(collapsed))) == collapsed


def test_collapse_requires_all_splits_finished() -> None:
    plan = TablePlan(((10,),))
    info = FinishedSplitInfo(plan.splits(T)[0], BinlogOffset("b.000001", 4))
    cp = Checkpoint(plans={T: plan}, finished={T: (info,)}, binlog_offset=BinlogOffset("b.000009", 4))
    with pytest.raises(ValueError, match="not all"):
        collapse_table(cp, T)
