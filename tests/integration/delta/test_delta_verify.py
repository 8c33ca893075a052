"""``sparkcdc verify`` and ``--repair`` on a Delta replica (issue 9 item 4), on real MariaDB,
Spark and Delta (verify_checks.py, run by the ``delta_checks`` fixture's Delta-enabled Spark).

The pipeline snapshots ``items`` into Delta; the replica verifies clean — its NULLs, DECIMALs
(one wider than Spark's 38 digits, stored as text), DATETIME(6), TIMESTAMP(6), TIME, JSON,
binary, BIT, ENUM/SET, YEAR, floats and utf8mb4 text show the Delta checker's canonical encoding
(Python, over the values read back from Delta) agrees with MariaDB's for the source, type by
type. A row deleted, one inserted and one column of a row altered directly in the Delta table are
each found in the chunk that holds it with both sides' row counts; ``--repair`` re-snapshots
exactly those chunks and the replica verifies clean again.
"""

from __future__ import annotations

import pytest
from delta_support import ChecksRun

# The first test to ask for ``delta_checks`` waits for its one Spark to run every group of checks
# (up to 2,200 s: see the fixture).
pytestmark = pytest.mark.timeout(2400)

VERIFY_CHECKS = ["ok clean", "ok differences", "ok repair", "ok clean_after_repair"]


def test_delta_verify_finds_edits_and_repairs(delta_checks: ChecksRun) -> None:
    done = [line for line in delta_checks.passed() if line in VERIFY_CHECKS or line == "failed verify"]
    assert done == VERIFY_CHECKS, delta_checks.describe()


CONCURRENT_CHECKS = ["ok no_false_differences", "ok caught_up_clean"]


def test_delta_verify_under_concurrent_writes_reports_no_false_difference(delta_checks: ChecksRun) -> None:
    """``busy`` is verified while ``sparkcdc run`` streams it into Delta and a writer changes it
    (verify_concurrent.py): chunks differing in the first pass are re-checked and none is
    reported; once the writer stopped and the pipeline caught up, nothing needs a re-check."""
    done = [
        line for line in delta_checks.passed() if line in CONCURRENT_CHECKS or line == "failed concurrent"
    ]
    assert done == CONCURRENT_CHECKS, delta_checks.describe()
