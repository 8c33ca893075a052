"""Binlog lost: which tables lost their position, how they are reset, and the expiry warning."""

from __future__ import annotations

from dataclasses import replace

import pytest

from sparkcdc.core.checkpoint import Checkpoint, Phase, TablePlan, TableState
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.splits import FinishedSplitInfo, SnapshotSplit
from sparkcdc.core.tables import TableId
from sparkcdc.engine import binlog_lost
from sparkcdc.engine.binlog_lost import (
    ExpiryWatch,
    expiry_from_variables,
    lost_message,
    lost_tables,
    needed_offsets,
    reset_lost_tables,
)
from sparkcdc.engine.listener import PipelineListener

pytestmark = pytest.mark.unit

OLD, NEW, FRESH = TableId("db", "old"), TableId("db", "new"), TableId("db", "fresh")
STREAMED = TableId("db", "streamed")
FILES = ["b.000005", "b.000006"]


def off(file: int, pos: int) -> BinlogOffset:
    return BinlogOffset(f"b.{file:06d}", pos)


def finished(table: TableId, *watermarks: BinlogOffset) -> tuple[FinishedSplitInfo, ...]:
    count = len(watermarks)
    infos = []
    for i, wm in enumerate(watermarks):
        start = None if i == 0 else (i * 10,)
        end = None if i == count - 1 else ((i + 1) * 10,)
        infos.append(FinishedSplitInfo(SnapshotSplit(table, i, start, end), wm, 5))
    return tuple(infos)


def checkpoint(binlog_offset: BinlogOffset | None) -> Checkpoint:
    plan = TablePlan(((10,),), True, ("id",))
    return Checkpoint(
        tables={
            OLD: TableState(Phase.BINLOG),
            NEW: TableState(Phase.BINLOG),
            FRESH: TableState(Phase.SNAPSHOT),
        },
        plans={OLD: plan, NEW: plan, FRESH: plan},
        finished={OLD: finished(OLD, off(3, 100), off(5, 900)), NEW: finished(NEW, off(5, 500), off(6, 40))},
        snapshot_done=True,
        binlog_offset=binlog_offset,
    )


def test_needed_offsets_per_table() -> None:
    cp = checkpoint(None)
    needed = needed_offsets(cp, off(3, 100), [OLD, NEW, FRESH])
    assert needed == {OLD: off(3, 100), NEW: off(5, 500)}  # FRESH: its watermarks are still to come
    # Past the watermarks, the committed offset is what a table needs.
    needed = needed_offsets(checkpoint(off(6, 10)), off(6, 10), [OLD, NEW, STREAMED])
    assert needed == {OLD: off(6, 10), NEW: off(6, 10), STREAMED: off(6, 10)}


def test_only_tables_whose_position_is_gone_are_lost() -> None:
    assert lost_tables(checkpoint(None), off(3, 100), [OLD, NEW, FRESH], FILES) == [OLD]
    # The offset is gone, but every split of NEW has its watermark after it, still available.
    assert lost_tables(checkpoint(off(4, 7)), off(4, 7), [OLD, NEW], FILES) == [OLD]
    assert lost_tables(checkpoint(off(4, 7)), off(4, 7), [OLD, NEW, STREAMED], FILES) == [OLD, STREAMED]
    assert lost_tables(checkpoint(off(5, 7)), off(5, 7), [OLD, NEW], FILES) == []
    base = checkpoint(None)
    failed = replace(base, tables={**base.tables, OLD: TableState(Phase.FAILED, "x")})
    assert lost_tables(failed, off(3, 100), [OLD, NEW], FILES) == []


def test_reset_keeps_the_other_tables() -> None:
    reset = reset_lost_tables(checkpoint(off(4, 7)), [OLD])
    assert OLD not in reset.plans and OLD not in reset.finished and OLD not in reset.tables
    assert reset.finished[NEW] == checkpoint(None).finished[NEW]
    assert not reset.snapshot_done and reset.binlog_offset is None


def test_lost_message_names_the_missing_and_the_oldest_file() -> None:
    text = lost_message(off(3, 100), FILES)
    assert "b.000003 was purged" in text and "oldest binlog file available is b.000005" in text
    assert "onBinlogLost: resnapshot" in text
    assert "binlog was reset" in lost_message(off(9, 4), FILES)


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({"binlog_expire_logs_seconds": "3600", "expire_logs_days": "0.041667"}, 3600.0),  # MariaDB 10.6+
        ({"binlog_expire_logs_seconds": "2592000", "expire_logs_days": None}, 2592000.0),  # MySQL 8.4
        ({"binlog_expire_logs_seconds": "0", "expire_logs_days": "7"}, 7 * 86400.0),  # old-style setting
        ({"binlog_expire_logs_seconds": None, "expire_logs_days": "2"}, 2 * 86400.0),  # MariaDB 10.5
        ({"binlog_expire_logs_seconds": "0", "expire_logs_days": "0"}, None),  # kept forever
    ],
)
def test_expiry_from_variables(values: dict[str, str | None], expected: float | None) -> None:
    assert expiry_from_variables(values) == expected


class Collect(PipelineListener):
    def __init__(self) -> None:
        self.warnings: list[str] = []
        self.finished = 0

    def warning(self, text: str) -> None:
        self.warnings.append(text)

    def splits_finished(self, summaries: object) -> None:
        self.finished += 1


def test_expiry_watch_warns_once_when_the_snapshot_outlasts_the_binlog(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [1000.0]
    monkeypatch.setattr(binlog_lost.time, "monotonic", lambda: now[0])
    inner = Collect()
    watch = ExpiryWatch(inner, expiry_seconds=3600)
    watch.snapshot_planned({OLD: 100}, {OLD: 0})
    now[0] += 60
    watch.splits_finished([object()] * 10)  # type: ignore[list-item]
    assert watch.projected_seconds() == pytest.approx(600)
    assert inner.warnings == [] and inner.finished == 1
    now[0] += 600  # slowing down: 11 splits in 660 s -> 100 splits take 6000 s
    watch.splits_finished([object()])  # type: ignore[list-item]
    assert (
        len(inner.warnings) == 1 and "longer than the source keeps its binlog (60 min)" in inner.warnings[0]
    )
    watch.splits_finished([object()])  # type: ignore[list-item]
    assert len(inner.warnings) == 1
    never = ExpiryWatch(Collect(), expiry_seconds=None)
    never.snapshot_planned({OLD: 2}, {OLD: 0})
    never.splits_finished([object()])  # type: ignore[list-item]
    assert not never.warned
