"""The Delta sink on its own, in one Delta-enabled Spark (sink_checks.py, run once by the
``delta_checks`` fixture): every MySQL type through snapshot and MERGE, snapshot splits appended
from Arrow by delta-rs (and re-written by Spark when their range holds rows), replayed binlog batches
(exactly once), a MERGE touching only its keys' files, a batch of new keys appended, split ranges
of a case-insensitive string key re-written exactly, a tail split re-cut after a crash, a table
whose creation a kill cut off, added columns (with the source default for existing rows, and
mergeSchema), partitioning, table properties, change data feed and OPTIMIZE."""

from __future__ import annotations

import pytest
from delta_support import ChecksRun

# The first test to ask for ``delta_checks`` waits for its one Spark to run every group of checks
# (up to 2,200 s: see the fixture).
pytestmark = pytest.mark.timeout(2400)

SINK_CHECKS = [
    "ok types_round_trip",
    "ok splits_from_arrow",
    "ok replay_is_idempotent",
    "ok merge_touches_its_files",
    "ok merges_with_delta_rs",
    "ok appends_new_keys",
    "ok string_key_ranges",
    "ok tail_resplit",
    "ok unfinished_log",
    "ok schema_evolution",
    "ok options",
]


def test_delta_sink_checks(delta_checks: ChecksRun) -> None:
    done = [line for line in delta_checks.passed() if line in SINK_CHECKS or line == "failed sink"]
    assert done == SINK_CHECKS, delta_checks.describe()
