"""``status.verification`` and the ``Verified`` condition: documents, reasons, nonces, no rollout."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from harness.reconcile_fixtures import make_status, pipeline
from sparkcdc.api import CdcPipelineStatus
from sparkcdc.api.verify import MAX_LISTED_CHUNKS, VerificationStatus, VerifySpec
from sparkcdc.controller.builders import spec_hash
from sparkcdc.controller.verify_status import (
    failed_document,
    idle_condition,
    pending_nonce,
    report_document,
    running_document,
    upkeep,
    verified_condition,
    with_condition,
)
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.splits import SnapshotSplit
from sparkcdc.core.tables import TableId
from sparkcdc.driver.verify_loop import EVENT_REASONS, verify_options
from sparkcdc.verify.checksum import ChunkChecksum
from sparkcdc.verify.report import ChunkDiff, PipelineReport, TableReport

pytestmark = pytest.mark.unit

ORDERS, ITEMS = TableId("shop", "orders"), TableId("shop", "items")
STARTED = dt.datetime(2024, 5, 1, 12, 0, 0, tzinfo=dt.timezone.utc)
DONE = "2024-05-01T12:00:09Z"


def diff(table: TableId, index: int, status: str = "differ", source: int = 50, sink: int = 49) -> ChunkDiff:
    split = SnapshotSplit(table, index, (index * 50,), ((index + 1) * 50,))
    return ChunkDiff(
        split, status, ChunkChecksum(source, 1), ChunkChecksum(sink, 2), BinlogOffset("b.000001", 4),
        differing_rows=abs(source - sink) or 1,
    )  # fmt: skip


def report(*tables: TableReport) -> PipelineReport:
    return PipelineReport("shop", "jdbc mysql://127.0.0.1/shop_replica", STARTED, 9.0, list(tables))


Diffs = list[ChunkDiff] | None


def table(t: TableId, chunks: int = 4, differing: Diffs = None, repaired: Diffs = None) -> TableReport:
    rows = chunks * 50
    return TableReport(t, chunks, rows, rows, differing=differing or [], repaired=repaired or [])


def document(*tables: TableReport, repair: bool = False) -> dict[str, Any]:
    return report_document("n1", repair, report(*tables), DONE)


def test_a_clean_run_is_verified_true_with_counts() -> None:
    doc = document(table(ORDERS), table(ITEMS, 2))
    assert doc["nonce"] == "n1" and doc["startedAt"] == "2024-05-01T12:00:00Z" and doc["finishedAt"] == DONE
    assert (doc["tables"], doc["chunksChecked"], doc["rowsChecked"], doc["chunksDiffering"]) == (2, 6, 300, 0)
    assert doc["chunks"] == [] and "error" not in doc
    status, reason, message = verified_condition(doc)
    assert (status, reason) == ("True", "Matched")
    assert "6 chunks, 300 rows in 2 table(s)" in message


def test_differing_chunks_name_table_range_and_row_counts() -> None:
    doc = document(table(ORDERS, differing=[diff(ORDERS, 1, source=50, sink=49)]), table(ITEMS))
    assert doc["chunksDiffering"] == 1
    assert doc["chunks"] == [{
        "table": "shop.orders", "chunk": 1, "range": "[50, 100)", "state": "differ",
        "sourceRows": 50, "sinkRows": 49, "differingRows": 1,
    }]  # fmt: skip
    status, reason, message = verified_condition(doc)
    assert (status, reason) == ("False", "Differs")
    assert "1 of 8 chunks differ" in message
    assert "shop.orders chunk 1 [50, 100): source 50 rows, sink 49 rows" in message


def test_unsettled_repaired_and_failed_runs() -> None:
    unsettled = document(table(ORDERS, differing=[diff(ORDERS, 0, "unsettled")]))
    assert verified_condition(unsettled)[:2] == ("False", "Unsettled")
    assert unsettled["chunksUnsettled"] == 1 and unsettled["chunksDiffering"] == 0
    repaired = document(table(ORDERS, repaired=[diff(ORDERS, 2)]), repair=True)
    assert repaired["chunksRepaired"] == 1 and repaired["repair"] is True
    assert repaired["chunks"][0]["state"] == "repaired"
    assert verified_condition(repaired)[:2] == ("True", "Repaired")
    failed = failed_document("n1", False, "2024-05-01T12:00:00Z", DONE, "x" * 5000)
    status, reason, message = verified_condition(failed)
    assert (status, reason) == ("False", "Failed") and len(failed["error"]) == 1024
    assert message.startswith("verification 'n1' failed: xxx")


def test_a_running_run_is_unknown_and_unanswered() -> None:
    doc = running_document("n1", True, "2024-05-01T12:00:00Z")
    assert verified_condition(doc)[:2] == ("Unknown", "Running")
    status = CdcPipelineStatus.model_validate({"verification": doc})
    assert pending_nonce(pipeline(verifyNonce="n1").spec, status) == "n1"


def test_status_lists_at_most_ten_chunks_and_counts_the_rest() -> None:
    many = [diff(ORDERS, i) for i in range(MAX_LISTED_CHUNKS + 5)]
    doc = document(table(ORDERS, chunks=20, differing=many))
    assert len(doc["chunks"]) == MAX_LISTED_CHUNKS and doc["chunksNotListed"] == 5
    VerificationStatus.model_validate(doc)  # within the CRD's bounds
    message = verified_condition(doc)[2]
    assert message.endswith("; 12 more (see status.verification)")


def test_nonce_handling() -> None:
    answered = CdcPipelineStatus.model_validate({"verification": document(table(ORDERS))})
    assert pending_nonce(pipeline().spec, None) is None
    assert pending_nonce(pipeline(verifyNonce="n1").spec, None) == "n1"
    assert pending_nonce(pipeline(verifyNonce="n1").spec, answered) is None
    assert pending_nonce(pipeline(verifyNonce="n2").spec, answered) == "n2"


def test_with_condition_keeps_the_operators_conditions_and_transition_times() -> None:
    ready = {"type": "Ready", "status": "True", "reason": "Streaming", "message": "", "observedGeneration": 3}
    first = with_condition([ready], ("Unknown", "Running", "m"), 4, "2024-05-01T12:00:00Z")
    assert first[0] == ready
    assert first[1] == {
        "type": "Verified", "status": "Unknown", "reason": "Running", "message": "m",
        "lastTransitionTime": "2024-05-01T12:00:00Z", "observedGeneration": 4,
    }  # fmt: skip
    same = with_condition(first, ("Unknown", "WaitingForSnapshot", "w"), 4, "2024-05-01T12:01:00Z")
    assert same[1]["lastTransitionTime"] == "2024-05-01T12:00:00Z"
    assert same[1]["reason"] == "WaitingForSnapshot"
    changed = with_condition(same, ("True", "Matched", "ok"), 5, "2024-05-01T12:02:00Z")
    assert len(changed) == 2 and changed[1]["lastTransitionTime"] == "2024-05-01T12:02:00Z"
    assert changed[1]["observedGeneration"] == 5


IDLE = [("Suspended", "Unknown"), ("Failed", "False"), ("Completed", "False"), ("Streaming", None)]


@pytest.mark.parametrize(
    ("phase", "expected"),
    [*IDLE, ("Pending", None)],
)
def test_a_request_without_a_running_driver_says_why(phase: str, expected: str | None) -> None:
    state = idle_condition(pipeline(verifyNonce="n9").spec, make_status(phase=phase))
    if expected is None:
        assert state is None
        return
    assert state is not None
    assert state[:2] == (expected, "DriverNotRunning") and "'n9'" in state[2]
    assert idle_condition(pipeline().spec, make_status(phase=phase)) is None


def test_verify_fields_never_roll_the_driver() -> None:
    base = spec_hash(pipeline().spec)
    changed = pipeline(verifyNonce="n7", verify={"tables": ["shop.orders"], "repair": True, "waitSeconds": 5})
    assert spec_hash(changed.spec) == base
    assert spec_hash(pipeline(snapshot={"chunkSize": 10}).spec) != base


def test_spec_fields_and_options() -> None:
    spec = pipeline(verify={"tables": ["shop\\.order.*"], "repair": True, "waitSeconds": 7, "chunkSize": 99})
    options = verify_options(spec.spec.verify)
    assert options.tables == ("shop\\.order.*",) and options.repair and options.chunk_size == 99
    assert options.recheck.wait_seconds == 7.0
    assert verify_options(VerifySpec()).tables == () and not verify_options(VerifySpec()).repair
    with pytest.raises(ValueError, match=r"db\.table"):
        pipeline(verify={"tables": ["orders"]})
    with pytest.raises(ValueError):
        pipeline(verify={"waitSeconds": -1})


def test_event_reasons_cover_every_end() -> None:
    assert {r for _, r in EVENT_REASONS.values()} == {
        "Verified", "VerificationDiffers", "VerificationUnsettled", "VerificationFailed"
    }  # fmt: skip


def test_operator_upkeep_carries_an_answer_to_the_current_generation() -> None:
    answered = document(table(ORDERS))
    spec = pipeline(verifyNonce="n1").spec
    status = make_status(phase="Streaming", verification=answered)
    said = with_condition([], verified_condition(answered), 3, "2024-05-01T12:00:00Z")
    assert upkeep(spec, status, said, 3, "2024-05-01T13:00:00Z") is None  # up to date
    carried = upkeep(spec, status, said, 4, "2024-05-01T13:00:00Z")  # another spec field changed
    assert carried is not None and carried[0]["observedGeneration"] == 4
    assert carried[0]["lastTransitionTime"] == "2024-05-01T12:00:00Z" and carried[0]["reason"] == "Matched"
    # A new nonce with a running driver: the driver's to answer; nothing without a condition.
    assert upkeep(pipeline(verifyNonce="n2").spec, status, said, 4, "2024-05-01T13:00:00Z") is None
    assert upkeep(pipeline().spec, make_status(phase="Streaming"), [], 4, "2024-05-01T13:00:00Z") is None
    # No driver to answer it: said once, then left alone.
    idle = make_status(phase="Suspended", verification=answered)
    told = upkeep(pipeline(verifyNonce="n2").spec, idle, said, 5, "2024-05-01T13:00:00Z")
    assert told is not None and told[0]["reason"] == "DriverNotRunning" and told[0]["observedGeneration"] == 5
    assert upkeep(pipeline(verifyNonce="n2").spec, idle, told, 5, "2024-05-01T13:01:00Z") is None
