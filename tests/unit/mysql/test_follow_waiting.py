"""The Go decoder follower's queue (mysql/binlog/follow.py ``WaitingItems``): bounded by the events
of the batches it holds, not their number, so a sink gathering what waits finds a backlog's worth of
small batches (the decoder cuts a batch by its interval while the sink applies the previous one).
And an answer it cannot place (no end offset) is a clear error, not a ``KeyError``."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.mysql.binlog.follow import (
    FollowSettings,
    NativeBatch,
    NativeFollower,
    NativeStopped,
    WaitingItems,
)
from sparkcdc.mysql.connection import SourceConfig
from sparkcdc.mysql.errors import SourceError


def _batch(pos: int, events: int) -> NativeBatch:
    return NativeBatch(BinlogOffset("binlog.000001", pos), events, 0, {})


def test_many_small_batches_fit_where_few_large_ones_do() -> None:
    waiting = WaitingItems(capacity_events=100)
    assert all(waiting.put(_batch(i, 10), timeout=0) for i in range(10))  # 100 events
    assert not waiting.put(_batch(99, 10), timeout=0.01)  # full
    assert waiting.get(0) == _batch(0, 10)
    assert waiting.put(_batch(99, 10), timeout=0)
    taken = [waiting.get(0) for _ in range(11)]
    assert [b.end.pos for b in taken if isinstance(b, NativeBatch)] == [*range(1, 10), 99]
    assert taken[-1] is None  # empty: nothing within the timeout


def test_a_batch_larger_than_the_bound_fits_alone() -> None:
    waiting = WaitingItems(capacity_events=100)
    assert waiting.put(_batch(1, 500), timeout=0)
    assert not waiting.put(NativeStopped(BinlogOffset("binlog.000001", 2), "why"), timeout=0.01)
    assert waiting.get(0) == _batch(1, 500)
    assert waiting.put(NativeStopped(BinlogOffset("binlog.000001", 2), "why"), timeout=0)


def test_a_waiting_producer_goes_on_once_the_caller_takes() -> None:
    waiting = WaitingItems(capacity_events=10)
    assert waiting.put(_batch(1, 10), timeout=0)
    done = threading.Event()

    def produce() -> None:
        if waiting.put(_batch(2, 5), timeout=5):
            done.set()

    producer = threading.Thread(target=produce)
    producer.start()
    assert not done.wait(0.05)
    assert waiting.get(1) == _batch(1, 10)
    producer.join(5)
    assert done.is_set() and waiting.get(1) == _batch(2, 5)


def test_an_answer_without_an_end_names_the_decoder_build() -> None:
    settings = FollowSettings(batch_events=100, batch_millis=100, heartbeat_seconds=5)
    start = BinlogOffset("binlog.000001", 4)
    binary = Path("/opt/old-binlogdec")
    follower = NativeFollower(binary, SourceConfig("127.0.0.1"), 7, {}, start, "mariadb", settings)
    with pytest.raises(SourceError, match=r"/opt/old-binlogdec answered without an end offset .*rebuild it"):
        follower._item({"unsupported": "a table map it cannot parse"}, lambda size: b"")
