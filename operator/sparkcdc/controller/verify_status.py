"""``status.verification`` and the ``Verified`` condition, pure: no API calls, no clocks.

* :func:`pending_nonce` — whether ``spec.verifyNonce`` asks for a run not yet answered;
* :func:`running_document`, :func:`report_document`, :func:`failed_document` — the status
  document of a run that started, ended with a report, or failed;
* :func:`verified_condition` — the kstatus-style condition a document stands for;
* :func:`with_condition` — a ``conditions`` list with one condition set (transition times kept);
* :func:`idle_condition` — what to say when no driver runs to answer a request;
* :func:`upkeep` — the operator's part: that, or an answer carried to the current generation.

A request counts as answered only once ``status.verification`` holds its nonce *and* a
``finishedAt``: a driver that stops in the middle of a run leaves it unanswered, so the next
driver runs it again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timezone
from typing import Any

from sparkcdc.api.spec import CdcPipelineSpec
from sparkcdc.api.status import CdcPipelineStatus
from sparkcdc.api.verify import MAX_LISTED_CHUNKS, VerificationStatus, VerifiedChunk
from sparkcdc.verify.report import ChunkDiff, PipelineReport, range_text

__all__ = [
    "CONDITION",
    "ConditionState",
    "failed_document",
    "idle_condition",
    "pending_nonce",
    "report_document",
    "running_document",
    "upkeep",
    "verified_condition",
    "with_condition",
]

CONDITION = "Verified"
# Reasons of the Verified condition (docs/operations.md explains each).
MATCHED, REPAIRED, DIFFERS, UNSETTLED, FAILED = "Matched", "Repaired", "Differs", "Unsettled", "Failed"
RUNNING, WAITING_FOR_SNAPSHOT, DRIVER_NOT_RUNNING = "Running", "WaitingForSnapshot", "DriverNotRunning"
MAX_RANGE, MAX_ERROR, MAX_MESSAGE = 1024, 1024, 2048
NAMED_IN_MESSAGE = 3  # differing chunks the condition's message names

Obj = dict[str, Any]
ConditionState = tuple[str, str, str]  # (status, reason, message)


def pending_nonce(spec: CdcPipelineSpec, status: CdcPipelineStatus | None) -> str | None:
    """The ``verifyNonce`` still to be answered, or None."""
    nonce = spec.verify_nonce
    if nonce is None:
        return None
    done = status.verification if status is not None else None
    if done is not None and done.nonce == nonce and done.finished_at is not None:
        return None
    return nonce


def running_document(nonce: str, repair: bool, started_at: str) -> Obj:
    return VerificationStatus(nonce=nonce, started_at=started_at, repair=repair).to_k8s()


def failed_document(nonce: str, repair: bool, started_at: str, finished_at: str, error: str) -> Obj:
    return VerificationStatus(
        nonce=nonce,
        started_at=started_at,
        finished_at=finished_at,
        repair=repair,
        error=_clip(error, MAX_ERROR),
    ).to_k8s()


def report_document(nonce: str, repair: bool, report: PipelineReport, finished_at: str) -> Obj:
    """The document of a finished run: counts, and the first few chunks that differ, could not be
    settled or were repaired (status stays small; the rest are only counted)."""
    diffs = [(str(t.table), d) for t in report.tables for d in t.differing]
    repaired = [(str(t.table), d) for t in report.tables for d in t.repaired]
    chunks = [_chunk(table, diff, diff.status) for table, diff in diffs]
    chunks += [_chunk(table, diff, "repaired") for table, diff in repaired]
    return VerificationStatus(
        nonce=nonce,
        started_at=_time(report),
        finished_at=finished_at,
        repair=repair,
        tables=len(report.tables),
        chunks_checked=sum(t.chunks for t in report.tables),
        chunks_differing=sum(t.count("differ") for t in report.tables),
        chunks_unsettled=sum(t.count("unsettled") for t in report.tables),
        chunks_repaired=len(repaired),
        rows_checked=report.rows_verified,
        seconds=round(report.seconds, 3),
        chunks=chunks[:MAX_LISTED_CHUNKS],
        chunks_not_listed=max(0, len(chunks) - MAX_LISTED_CHUNKS),
    ).to_k8s()


def _time(report: PipelineReport) -> str:
    return report.started.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _chunk(table: str, diff: ChunkDiff, state: str) -> VerifiedChunk:
    return VerifiedChunk.model_validate({
        "table": table, "chunk": diff.split.index, "range": _clip(range_text(diff.split), MAX_RANGE),
        "state": state, "source_rows": diff.source.rows, "sink_rows": diff.sink.rows,
        "differing_rows": diff.differing_rows,
    })  # fmt: skip


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def verified_condition(document: Mapping[str, Any]) -> ConditionState:
    """The ``Verified`` condition of a verification document."""
    v = VerificationStatus.model_validate(document)
    nonce = v.nonce or ""
    if v.finished_at is None:
        what = "verifying and repairing" if v.repair else "verifying"
        return "Unknown", RUNNING, f"{what} the replica for verifyNonce {nonce!r} since {v.started_at}"
    if v.error is not None:
        return "False", FAILED, f"verification {nonce!r} failed: {v.error}"
    counts = f"{v.chunks_checked} chunks, {v.rows_checked} rows in {v.tables} table(s)"
    if v.chunks_differing:
        named = _named(v.chunks, "differ", v.chunks_differing)
        text = f"{v.chunks_differing} of {v.chunks_checked} chunks differ from the source ({counts}): {named}"
        return "False", DIFFERS, _clip(text, MAX_MESSAGE)
    if v.chunks_unsettled:
        named = _named(v.chunks, "unsettled", v.chunks_unsettled)
        text = (
            f"{v.chunks_unsettled} of {v.chunks_checked} chunks could not be shown to match: the pipeline "
            f"did not apply the binlog past their reads within verify.waitSeconds ({counts}): {named}"
        )
        return "False", UNSETTLED, _clip(text, MAX_MESSAGE)
    if v.chunks_repaired:
        return "True", REPAIRED, f"{v.chunks_repaired} chunk(s) repaired; all {counts} match the source"
    return "True", MATCHED, f"all {counts} match the source"


def _named(chunks: Sequence[VerifiedChunk], state: str, total: int) -> str:
    picked = [c for c in chunks if c.state == state]
    text = "; ".join(
        f"{c.table} chunk {c.chunk} {c.range}: source {c.source_rows} rows, sink {c.sink_rows} rows"
        for c in picked[:NAMED_IN_MESSAGE]
    )
    more = total - min(len(picked), NAMED_IN_MESSAGE)
    return text + (f"; {more} more (see status.verification)" if more > 0 else "")


def with_condition(
    conditions: Sequence[Mapping[str, Any]], state: ConditionState, generation: int | None, now: str
) -> list[Obj]:
    """``conditions`` with ``Verified`` set to ``state``; its ``lastTransitionTime`` changes only when
    its status does, and every other condition is kept as it is (the operator owns those)."""
    status, reason, message = state
    previous = next((c for c in conditions if c.get("type") == CONDITION), None)
    moment = now
    if previous is not None and previous.get("status") == status and previous.get("lastTransitionTime"):
        moment = str(previous["lastTransitionTime"])
    condition: Obj = {
        "type": CONDITION, "status": status, "reason": reason, "message": message,
        "lastTransitionTime": moment,
    }  # fmt: skip
    if generation is not None:
        condition["observedGeneration"] = generation
    kept = [dict(c) for c in conditions if c.get("type") != CONDITION]
    return [*kept, condition]


def idle_condition(spec: CdcPipelineSpec, status: CdcPipelineStatus | None) -> ConditionState | None:
    """The condition for a pending request that no driver is there to answer: None while a driver
    runs or may start (it answers then). Suspended: Unknown (the run happens on resume); Failed or
    Completed: False."""
    nonce = pending_nonce(spec, status)
    phase = status.phase if status is not None else None
    if nonce is None or phase not in ("Suspended", "Failed", "Completed"):
        return None
    if phase == "Suspended":
        text = f"verifyNonce {nonce!r} waits: the pipeline is suspended; its driver verifies when resumed"
        return "Unknown", DRIVER_NOT_RUNNING, text
    why = (
        "the pipeline has Failed"
        if phase == "Failed"
        else "the snapshot-only pipeline has Completed and its driver exited"
    )
    text = (
        f"verifyNonce {nonce!r} cannot run: {why}, and verification runs in the driver. Run "
        "`sparkcdc verify` on the manifest, or restart the pipeline (restartNonce)"
    )
    return "False", DRIVER_NOT_RUNNING, text


def upkeep(
    spec: CdcPipelineSpec,
    status: CdcPipelineStatus | None,
    conditions: Sequence[Mapping[str, Any]],
    generation: int | None,
    now: str,
) -> list[Obj] | None:
    """The ``conditions`` the operator writes after a reconcile, or None to leave them.

    A pending request without a driver gets :func:`idle_condition`. An answered one is carried to
    the current generation: it still answers the spec's ``verifyNonce``, and a condition whose
    ``observedGeneration`` lags ``metadata.generation`` reads as "not acted on yet" to kstatus
    and Argo CD. A pending request with a driver is the driver's to answer."""
    current = next((c for c in conditions if c.get("type") == CONDITION), None)
    state = idle_condition(spec, status)
    if state is None:
        if current is None or pending_nonce(spec, status) is not None:
            return None
        state = (str(current.get("status")), str(current.get("reason", "")), str(current.get("message", "")))
    if current is not None and _same(current, state, generation):
        return None
    return with_condition(conditions, state, generation, now)


def _same(condition: Mapping[str, Any], state: ConditionState, generation: int | None) -> bool:
    said = (condition.get("status"), condition.get("reason"), condition.get("message"))
    return said == state and condition.get("observedGeneration") == generation
