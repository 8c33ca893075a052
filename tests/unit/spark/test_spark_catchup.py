"""When parallel catch-up is on, which server ids its tasks take, and when Spark is ready for a
round (spark/catchup.py)."""

from __future__ import annotations

from typing import Any

import pytest

from sparkcdc.api.spec import CdcPipelineSpec
from sparkcdc.spark.catchup import catchup_settings
from sparkcdc.spark.lazy_session import LazySession
from sparkcdc.spark.session import executors_ready
from sparkcdc.spark.streaming import live_reader_server_id

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
