from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparkcdc.core.chunking import splits_from_boundaries
from sparkcdc.core.tables import TableId
from sparkcdc.spark.snapshot import plan_tasks

pytestmark = pytest.mark.unit


@given(st.integers(0, 60), st.integers(1, 6), st.integers(1, 5))
def test_tasks_take_contiguous_runs_with_distinct_server_ids(
    boundaries: int, ids: int, per_task: int
) -> None:
    splits = splits_from_boundaries(TableId("db", "t"), [(k * 10,) for k in range(1, boundaries + 1)])
    tasks = plan_tasks(splits, list(range(5400, 5400 + ids)), per_task)
    assert [s for t in tasks for s in t.splits] == splits  # every split once, in key order
    assert len({t.server_id for t in tasks}) == len(tasks) <= ids
    assert all(t.splits for t in tasks)
