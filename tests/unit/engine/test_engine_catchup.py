"""When parallel catch-up is on, which server ids its tasks take, and when Spark is ready for a
round (engine/catchup.py)."""

from __future__ import annotations

from typing import Any, cast

import pytest

from sparkcdc.api.spec import CdcPipelineSpec
from sparkcdc.core.catchup import CatchupRange
from sparkcdc.core.event_filter import BinlogSplitFilter
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.splits import FinishedSplitInfo, SnapshotSplit
from sparkcdc.core.tables import TableId
from sparkcdc.engine import catchup
from sparkcdc.engine.catchup import CatchupRunner, CatchupSettings, catchup_settings
from sparkcdc.engine.listener import PipelineListener
from sparkcdc.engine.streaming import live_reader_server_id
from sparkcdc.mysql.connection import SourceConfig
from sparkcdc.spark.catchup_tasks import RangeContext, RangeResult
from sparkcdc.spark.lazy_session import LazySession
from sparkcdc.spark.session import executors_ready

pytestmark = pytest.mark.unit

SOURCE = {"host": "db", "user": "cdc", "passwordSecretRef": {"name": "s", "key": "p"}, "tables": ["shop.t"]}
JDBC = {
    "type": "jdbc",
    "url": "mysql://db:3306/r",
    "user": "cdc",
    "passwordSecretRef": {"name": "s", "key": "p"},
}


def spec(sink: dict[str, Any] | None = None, **binlog: Any) -> CdcPipelineSpec:
    return CdcPipelineSpec.model_validate(
        {"source": SOURCE, "sink": sink or JDBC, "snapshot": {"parallelism": 3}, "binlog": binlog}
    )


def test_tasks_take_the_range_without_the_live_readers_id() -> None:
    ids = (100, 103)
    settings = catchup_settings("spark", ids, spec())
    assert settings is not None
    assert settings.server_ids == (100, 101, 102)
    assert live_reader_server_id(ids) not in settings.server_ids
    narrow = catchup_settings("spark", (100, 110), spec())
    assert narrow is not None and narrow.server_ids == (100, 101, 102)  # snapshot.parallelism of them


def test_off_when_disabled_for_net_effect_less_sinks_or_without_a_spare_id() -> None:
    assert catchup_settings("spark", (100, 103), spec(parallelCatchupThresholdBytes=0)) is None
    changelog = {"type": "changelog", "path": "/tmp/x"}
    assert catchup_settings("spark", (100, 103), spec(changelog)) is None
    assert catchup_settings("spark", (100, 100), spec()) is None
    on = catchup_settings("spark", (100, 103), spec(parallelCatchupThresholdBytes=5))
    assert on is not None and on.threshold_bytes == 5


def test_a_session_still_starting_is_not_ready_and_one_started_is() -> None:
    started: list[bool] = []
    lazy = LazySession(lambda: started.append(True))
    assert not executors_ready(lazy)
    assert started == []  # asking does not start it: the driver decodes meanwhile

    class Context:
        master = "local[2,2]"

    class Session:
        sparkContext = Context()  # noqa: N815 (the name SparkSession gives it)

    assert executors_ready(Session())


def test_ranges_the_driver_decodes_each_get_their_own_context(monkeypatch: pytest.MonkeyPatch) -> None:
    """A range advances its event filter as it reads; in Spark each task unpickles its own copy,
    and in driver threads each range must get one too, or ranges race on one filter."""
    table = TableId("shop", "t")
    low, high = BinlogOffset("b.000001", 100), BinlogOffset("b.000001", 900)
    infos = {table: [FinishedSplitInfo(SnapshotSplit(table, 0, None, None), high, 1)]}
    shared = BinlogSplitFilter(infos, {table: ["id"]})
    seen: list[RangeContext] = []

    def read_range(context: RangeContext, window: CatchupRange, server_id: int) -> RangeResult:
        seen.append(context)
        context.event_filter.advance_to(window.stop)  # what reading a range does
        return RangeResult(window.index, 0, {}, {})

    monkeypatch.setattr(catchup, "read_range", read_range)
    source = SourceConfig(host="db", port=3306, user="cdc")
    runner = CatchupRunner(
        CatchupSettings(None, (1, 2), 1, in_driver="always"),
        source,
        cast(Any, None),
        {},
        PipelineListener(),
        lambda c: c,
    )
    context = RangeContext(source, {}, shared)
    windows = [CatchupRange(0, low, high), CatchupRange(1, high, BinlogOffset("b.000001", 1500))]
    results, decoder = runner._decode(context, windows)
    assert decoder.startswith("the driver") and [r.index for r in results] == [0, 1]
    assert len({id(c.event_filter) for c in seen}) == 2 and all(c.event_filter is not shared for c in seen)
    assert shared.pure_binlog_tables() == set()  # the runner's own filter was not advanced
