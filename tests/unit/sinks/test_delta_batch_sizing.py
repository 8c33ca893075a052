"""Batches that waited while a sink applied the previous one, applied as one (engine/batch_sizing.py)
on the Go decoder's live path — in binlog order, up to the limit the sink declares (the Delta sink
does), ending at the last one's end, with whatever stopped the gathering handled right after."""

from __future__ import annotations

from typing import Any, cast

from hypothesis import given
from hypothesis import strategies as st

from sparkcdc.api.spec import BinlogSpec
from sparkcdc.core.checkpoint import Checkpoint
from sparkcdc.core.image_columns import ImageColumns
from sparkcdc.core.merge import BackfillChanges
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.tables import TableId
from sparkcdc.engine.batch_sizing import Gathering, absorb, gather, gathering
from sparkcdc.engine.native_live import NativeLive
from sparkcdc.mysql.binlog.follow import NativeBatch, NativeDdl, NativeStopped
from sparkcdc.mysql.binlog.reader import DdlStatement
from sparkcdc.mysql.errors import SourceError
from sparkcdc.sinks.delta.config import (
    DELTA_BATCH_INTERVAL_MS,
    DELTA_BATCH_ROWS,
    DELTA_BEHIND_BATCH_EVENTS,
    DeltaSinkConfig,
)
from sparkcdc.sinks.delta.sink import DeltaSink

ORDERS, TAGS = TableId("shop", "orders"), TableId("shop", "tags")


def _at(pos: int) -> BinlogOffset:
    return BinlogOffset("binlog.000003", pos)


def _batch(
    end: int, events: int, **tables: tuple[dict[tuple[Any, ...], dict[str, Any]], set[Any]]
) -> NativeBatch:
    changes = {
        (ORDERS if name == "orders" else TAGS): BackfillChanges(dict(upserts), set(deletes))
        for name, (upserts, deletes) in tables.items()
    }
    return NativeBatch(_at(end), events, end * 10, changes)


def test_absorb_keeps_binlog_order_per_key() -> None:
    first = _batch(100, 3, orders=({(1,): {"id": 1, "v": "a"}, (2,): {"id": 2, "v": "a"}}, {(3,)}))
    later = _batch(
        200,
        4,
        orders=({(3,): {"id": 3, "v": "b"}, (1,): {"id": 1, "v": "b"}}, {(2,)}),
        tags=({("x",): {"tag": "x"}}, set()),
    )
    both = absorb(first, later)
    assert both.end == _at(200) and both.events == 7 and both.newest_ms == 2000
    orders = both.changes[ORDERS]
    # A later image replaces, a later delete removes, a later insert revives a deleted key.
    assert orders.upserts == {(1,): {"id": 1, "v": "b"}, (3,): {"id": 3, "v": "b"}}
    assert orders.deletes == {(2,)}
    assert both.changes[TAGS].upserts == {("x",): {"tag": "x"}}


class _Queue:
    """Items in stream order; ``take(timeout)`` records how long the caller would wait."""

    def __init__(self, items: list[Any]) -> None:
        self.items, self.waits = items, list[float]()

    def take(self, timeout: float) -> Any:
        self.waits.append(timeout)
        item = self.items.pop(0) if self.items else None
        if isinstance(item, BaseException):
            raise item
        return item


def test_gather_takes_what_waits_up_to_the_limit() -> None:
    waiting = _Queue([_batch(200 + i, 40, orders=({(i,): {"id": i}}, set())) for i in range(5)])
    batch, held = gather(_batch(100, 40, orders=({}, {(99,)})), waiting.take, Gathering(100))
    # 40 + 40 + 40 reaches the limit: the rest waits for the next apply; nothing is waited for.
    assert batch.events == 120 and batch.end == _at(201) and held is None and len(waiting.items) == 3
    assert set(batch.changes[ORDERS].upserts) == {(0,), (1,)} and batch.changes[ORDERS].deletes == {(99,)}
    assert waiting.waits == [0.0, 0.0]

    nothing = _Queue([])
    alone, held = gather(_batch(100, 5), nothing.take, Gathering(100))
    assert alone.events == 5 and alone.end == _at(100) and held is None

    # Without a gathering (sinks that declare none) a batch is applied on its own.
    single = _Queue([_batch(200, 1)])
    alone, held = gather(_batch(100, 1), single.take, Gathering())
    assert alone.end == _at(100) and held is None and single.waits == []


def test_a_full_batch_waits_for_the_next_one() -> None:
    """A batch cut by size means the reader is behind: the next is waited for, until one cut by
    time (smaller than a batch) or the limit."""
    how = Gathering(limit=1_000, full_at=100, wait_seconds=7.5)
    behind = _Queue([_batch(200, 100), _batch(300, 30), _batch(400, 100)])
    batch, held = gather(_batch(100, 150), behind.take, how)
    assert batch.end == _at(400) and batch.events == 380 and held is None
    # After a full batch the next is waited for; after the 30 (cut by time) only what is there
    # already is taken: the full one was, so the one after it is waited for again (none came).
    assert behind.waits == [7.5, 7.5, 0.0, 7.5]

    capped = _Queue([_batch(200 + i, 400) for i in range(5)])
    batch, _ = gather(_batch(100, 400), capped.take, how)
    assert batch.events == 1_200 and len(capped.items) == 3


def test_gather_stops_at_a_ddl_a_stop_or_a_failure() -> None:
    ddl = NativeDdl(_at(300), DdlStatement(_at(310), "shop", "ALTER TABLE orders ADD c INT"))
    for stopper in (ddl, NativeStopped(_at(300), "partial row image")):
        stream = _Queue([_batch(200, 1), stopper, _batch(400, 1)])
        batch, held = gather(_batch(100, 1), stream.take, Gathering(1_000))
        assert batch.end == _at(200) and held is stopper and len(stream.items) == 1

    failing = _Queue([SourceError("the binlog decoder was stopped")])
    batch, held = gather(_batch(100, 1), failing.take, Gathering(1_000))
    assert batch.end == _at(100) and isinstance(held, SourceError)


def test_the_delta_sink_gathers_and_others_do_not() -> None:
    tuned = DeltaSinkConfig("/lake").tune_binlog(BinlogSpec())
    how = gathering(DeltaSink, tuned)
    assert how.limit == DELTA_BEHIND_BATCH_EVENTS and how.full_at == DELTA_BATCH_ROWS
    # A full batch's successor is waited for, but not as long as a batch interval (the backlog's
    # tail comes only after one).
    assert 0 < how.wait_seconds < tuned.batch_interval_ms / 1000 <= DELTA_BATCH_INTERVAL_MS / 1000
    assert how.limit > DELTA_BATCH_ROWS
    # Enough converted batches wait to fill a gathered batch while the previous one merges.
    assert how.capacity(tuned.batch_rows) >= DELTA_BEHIND_BATCH_EVENTS
    # An explicit batchRows above the sink's limit: each batch on its own, as for other sinks.
    large = BinlogSpec.model_validate({"batchRows": 10 * DELTA_BEHIND_BATCH_EVENTS})
    assert gathering(DeltaSink, large) == Gathering() == gathering(object(), tuned)
    assert Gathering().capacity(10_000) == 40_000


class _Follower:
    """Hands over a fixed stream; ``get(0)`` sees only what is already there."""

    def __init__(self, items: list[Any]) -> None:
        self.items = items

    def start(self) -> None:
        return None

    def close(self) -> None:
        return None

    def get(self, timeout: float) -> Any:
        item = self.items.pop(0) if self.items else None
        if isinstance(item, BaseException):
            raise item
        return item


def test_native_live_applies_waiting_batches_as_one_then_the_ddl() -> None:
    ddl = NativeDdl(_at(300), DdlStatement(_at(310), "shop", "ALTER TABLE orders ADD c INT"))
    stream = [
        _batch(100, 2, orders=({(1,): {"id": 1, "v": "a"}}, set())),
        _batch(200, 2, orders=({}, {(1,)})),
        ddl,
        _batch(400, 2, orders=({(1,): {"id": 1, "v": "c"}}, set())),
    ]
    applied: list[NativeBatch] = []

    def apply(batch: NativeBatch, checkpoint: Checkpoint) -> Checkpoint:
        applied.append(batch)
        return Checkpoint(binlog_offset=batch.end)

    how = Gathering(DELTA_BEHIND_BATCH_EVENTS)
    live = NativeLive(cast(Any, _Follower(stream)), apply, lambda _ddl: False, 0.0, how)
    outcome = live.run(Checkpoint(), lambda: False, _at(400), None)
    assert outcome.reason is None and outcome.checkpoint.binlog_offset == _at(400)
    assert [(b.end, b.events) for b in applied] == [(_at(200), 4), (_at(400), 2)]
    assert applied[0].changes[ORDERS].deletes == {(1,)} and not applied[0].changes[ORDERS].upserts

    # A schema change of a captured table: the batches before it applied, the Python reader
    # follows the statement ("ddl": it hands back once past it).
    applied.clear()
    live = NativeLive(cast(Any, _Follower([_batch(100, 1), ddl])), apply, lambda _ddl: True, 0.0, how)
    outcome = live.run(Checkpoint(), lambda: False, None, None)
    assert outcome.reason == "ddl" and outcome.checkpoint.binlog_offset == _at(100)

    # A failure behind gathered batches: they are applied, then the Python reader takes over.
    failed = [_batch(100, 1), _batch(200, 1), SourceError("the decoder ended")]
    applied.clear()
    live = NativeLive(cast(Any, _Follower(failed)), apply, lambda _ddl: False, 0.0, Gathering(1_000))
    outcome = live.run(Checkpoint(), lambda: False, None, None)
    assert outcome.reason == "unsupported" and outcome.checkpoint.binlog_offset == _at(200)
    assert [b.end for b in applied] == [_at(200)]


def _as_columns(batch: NativeBatch) -> NativeBatch:
    """The same batch with its images as the decoder hands them: columns (id, v)."""
    changes = {}
    for table, net in batch.changes.items():
        rows = list(net.upserts.values())
        columns = [[r["id"] for r in rows], [r["v"] for r in rows]]
        changes[table] = BackfillChanges(ImageColumns(("id", "v"), columns, [0]), set(net.deletes))
    return NativeBatch(batch.end, batch.events, batch.newest_ms, changes)


_KEYS = st.integers(min_value=1, max_value=12)


@st.composite
def _batches(draw: st.DrawFn) -> list[NativeBatch]:
    out = []
    for n in range(draw(st.integers(min_value=1, max_value=5))):
        touched = draw(st.lists(_KEYS, unique=True, max_size=8))
        deleted = set(draw(st.lists(st.sampled_from(touched), unique=True)) if touched else [])
        upserts = {(k,): {"id": k, "v": f"{n}-{k}"} for k in touched if k not in deleted}
        out.append(_batch(100 * (n + 1), len(touched), orders=(upserts, {(k,) for k in deleted})))
    return out


@given(_batches())
def test_absorbing_columns_equals_absorbing_rows(batches: list[NativeBatch]) -> None:
    """Batches of the decoder's columns absorb to the same net images as the same rows (joined as
    columns where no key repeats, row by row where one does)."""
    columns = [_as_columns(b) for b in batches]  # before absorb takes the row batches over
    by_rows, by_columns = batches[0], columns[0]
    for rows, later in zip(batches[1:], columns[1:], strict=True):
        by_rows, by_columns = absorb(by_rows, rows), absorb(by_columns, later)
    assert dict(by_columns.changes[ORDERS].upserts) == dict(by_rows.changes[ORDERS].upserts)
    assert by_columns.changes[ORDERS].deletes == by_rows.changes[ORDERS].deletes


def test_a_backlog_of_new_keys_stays_columns() -> None:
    first = _as_columns(_batch(100, 2, orders=({(1,): {"id": 1, "v": "a"}}, {(5,)})))
    later = _as_columns(
        _batch(200, 2, orders=({(5,): {"id": 5, "v": "b"}, (2,): {"id": 2, "v": "b"}}, set()))
    )
    orders = absorb(first, later).changes[ORDERS]
    assert isinstance(orders.upserts, ImageColumns)
    assert orders.upserts.columns == [[1, 5, 2], ["a", "b", "b"]]
    assert orders.deletes == set()  # key 5, deleted first, was written again
    replaced = _as_columns(_batch(300, 1, orders=({(2,): {"id": 2, "v": "c"}}, set())))
    orders = absorb(absorb(first, later), replaced).changes[ORDERS]
    assert orders.upserts[(2,)] == {"id": 2, "v": "c"} and len(orders.upserts) == 3
