"""Verification in the driver pod: ``spec.verifyNonce`` answered while the pipeline streams on.

:class:`DriverVerifier` is a background thread of ``sparkcdc driver``. It reads the object from the
driver's one poll of it (``pipeline_poll.py``: the whole object is read again only when the spec
changed), so checking for a request costs no API call. A ``verifyNonce`` it has not
answered starts ``verify.runner.verify_pipeline`` on a session of its own (the same Spark
context, its own SQL settings, its jobs in their own job group) with ``applied`` = the binlog
offset this driver has checkpointed, i.e. committed to the sink (as the engine's listener
reports it: :class:`StoredCheckpoints`).

The run's document goes into ``status.verification`` together with the ``Verified`` condition,
through the fenced status store (a driver whose epoch was superseded cannot write it), and an
Event says how it ended. A request that arrives during the snapshot waits for its end
(``WaitingForSnapshot``). A driver stopped in the middle of a run leaves the request unanswered
(no ``finishedAt``), so the next driver runs it again; a snapshot-only driver answers a request
pending when its snapshot ends before it exits (:meth:`DriverVerifier.finish`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import ValidationError

from sparkcdc.api.resource import CdcPipeline
from sparkcdc.api.verify import VerifySpec
from sparkcdc.controller.verify_events import verification_event
from sparkcdc.controller.verify_status import (
    WAITING_FOR_SNAPSHOT,
    ConditionState,
    failed_document,
    report_document,
    running_document,
    verified_condition,
    with_condition,
)
from sparkcdc.core.checkpoint import Checkpoint
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.tables import TableId
from sparkcdc.driver.pipeline_poll import PipelinePoll
from sparkcdc.driver.verify_local import applied_offset
from sparkcdc.engine.runtime import PipelineRuntime
from sparkcdc.errors import USER_ERRORS
from sparkcdc.kube.client import KubeClient
from sparkcdc.kube.status_store import FencedError, StatusCheckpointStore
from sparkcdc.verify.recheck import RecheckSettings
from sparkcdc.verify.runner import VerifyListener, VerifyOptions, verify_pipeline

if TYPE_CHECKING:
    from sparkcdc.driver.reporting import StoredCheckpoint

__all__ = ["EVENT_REASONS", "DriverVerifier", "StoredCheckpoints", "verify_options"]

log = logging.getLogger("sparkcdc.driver.verify")
Obj = dict[str, Any]
JOB_GROUP = "sparkcdc-verify"
# Condition reason -> (event type, event reason).
EVENT_REASONS = {
    "Matched": ("Normal", "Verified"),
    "Repaired": ("Normal", "Verified"),
    "Differs": ("Warning", "VerificationDiffers"),
    "Unsettled": ("Warning", "VerificationUnsettled"),
    "Failed": ("Warning", "VerificationFailed"),
}


def now_text() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def verify_options(spec: VerifySpec) -> VerifyOptions:
    return VerifyOptions(
        tables=tuple(spec.tables),
        repair=spec.repair,
        chunk_size=spec.chunk_size,
        recheck=RecheckSettings(wait_seconds=float(spec.wait_seconds)),
    )


class StoredCheckpoints(Protocol):
    """Where the verifier learns the checkpoint the store holds: the engine's listener in the
    driver (``DriverProgress.stored_checkpoint``), fed after every load and save."""

    def stored_checkpoint(self) -> StoredCheckpoint | None: ...


class _LogListener(VerifyListener):
    def message(self, text: str) -> None:
        log.info("verify: %s", text)

    def planned(self, chunks: Mapping[TableId, int]) -> None:
        log.info("verify: %s", ", ".join(f"{t}: {n} chunk(s)" for t, n in chunks.items()))


class DriverVerifier:
    """Answers ``spec.verifyNonce`` from a background thread of the driver (module docstring)."""

    def __init__(
        self,
        pipeline: PipelinePoll,
        kube: KubeClient,
        store: StatusCheckpointStore,
        checkpoints: StoredCheckpoints,
        runtime: PipelineRuntime,
        spark: Any,
        *,
        poll_seconds: float = 2.0,
        clock: Callable[[], str] = now_text,
    ) -> None:
        self._pipeline, self._kube, self._store = pipeline, kube, store
        self._checkpoints, self._runtime = checkpoints, runtime
        self._spark = spark
        self._session: Any = None
        self._poll, self._clock = poll_seconds, clock
        first = pipeline.latest()
        self._generation = first["metadata"].get("generation")
        done = (first.get("status") or {}).get("verification") or {}
        self._answered = done.get("nonce") if done.get("finishedAt") else None
        self._said: tuple[str, str] | None = None  # (nonce, reason) of the last waiting condition
        self._stop = threading.Event()  # no more polls
        self._cancelled = threading.Event()  # the driver is going: drop a run midway
        self._thread = threading.Thread(target=self._loop, name="sparkcdc-verify", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def finish(self) -> None:
        """The pipeline ended by itself (snapshot-only): no driver runs after this one, so a
        request pending now is answered before the driver exits."""
        self._stop.set()
        self._thread.join()
        try:
            self._pipeline.refresh()
            self.step()
        except FencedError:
            raise
        except Exception:  # the request stays unanswered; the operator's condition says why
            log.exception("answering verifyNonce before the driver exits failed")

    def stop(self, timeout: float = 5.0) -> None:
        """Stop polling and cancel a run's Spark jobs (the next driver runs it again)."""
        self._stop.set()
        self._cancelled.set()
        if self._session is not None:
            try:
                self._spark.sparkContext.cancelJobGroup(JOB_GROUP)
            except Exception as err:  # the context may be stopping already
                log.debug("cancelling the verification jobs: %s", err)
        self._thread.join(timeout)

    # -- the loop --------------------------------------------------------------------------------
    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.step()
            except FencedError as err:  # the main thread meets it too, and exits
                log.warning("verification stops: %s", err)
                return
            except Exception:  # e.g. an unreachable API server: try again at the next poll
                log.exception("checking for verification requests failed")
            self._stop.wait(self._poll)

    def step(self) -> None:
        """One poll: answer the current ``verifyNonce`` if it is new and the snapshot is done."""
        obj = self._pipeline.latest()
        self._generation = obj["metadata"].get("generation")
        try:
            spec = CdcPipeline.from_k8s(obj).spec
        except ValidationError:  # the operator reports an invalid spec; nothing to verify by
            return
        nonce = spec.verify_nonce
        stored = self._checkpoints.stored_checkpoint()
        if nonce is None or nonce == self._answered or stored is None:
            return
        checkpoint = stored.checkpoint
        if checkpoint is None or not checkpoint.snapshot_done:
            text = f"verifyNonce {nonce!r} waits for the snapshot to finish"
            self._waiting(nonce, ("Unknown", WAITING_FOR_SNAPSHOT, text))
            return
        self._verify(obj, nonce, spec.verify)

    def _checkpoint(self) -> Checkpoint | None:
        stored = self._checkpoints.stored_checkpoint()
        return None if stored is None else stored.checkpoint

    def _applied(self) -> BinlogOffset | None:
        return applied_offset(self._checkpoint())

    def _waiting(self, nonce: str, state: ConditionState) -> None:
        if self._said == (nonce, state[1]):
            return
        self._said = (nonce, state[1])
        log.info("%s", state[2])
        self._publish(None, state)

    # -- one run ---------------------------------------------------------------------------------
    def _verify(self, obj: Obj, nonce: str, spec: VerifySpec) -> None:
        started = self._clock()
        log.info("verifyNonce %r: verifying the replica (repair: %s)", nonce, spec.repair)
        running = running_document(nonce, spec.repair, started)
        self._publish(running, verified_condition(running))
        try:
            report = verify_pipeline(
                self._runtime,
                self._verify_session(nonce),
                verify_options(spec),
                applied=self._applied,
                checkpoint=self._checkpoint(),
                listener=_LogListener(),
            )
            document = report_document(nonce, spec.repair, report, self._clock())
        except Exception as err:
            if self._cancelled.is_set():
                return  # the driver is stopping: the request stays unanswered for the next one
            log.warning("verifyNonce %r failed", nonce, exc_info=not isinstance(err, USER_ERRORS))
            text = str(err) if isinstance(err, USER_ERRORS) else f"{type(err).__name__}: {err}"
            document = failed_document(nonce, spec.repair, started, self._clock(), text)
        state = verified_condition(document)
        self._answered = nonce
        self._publish(document, state)
        self._store.flush()  # the result is in status before the Event says so
        log.info("verifyNonce %r: %s: %s", nonce, state[1], state[2])
        self._event(obj, state)

    def _verify_session(self, nonce: str) -> Any:
        """A session of its own on the driver's Spark context (its SQL settings apart from the
        pipeline's; a context-only session is shared, it has none); this thread's jobs in a group."""
        if self._session is None:
            new = getattr(self._spark, "newSession", None)
            self._session = new() if callable(new) else self._spark
        self._session.sparkContext.setJobGroup(JOB_GROUP, f"verifyNonce {nonce}", True)
        return self._session

    def _publish(self, document: Obj | None, state: ConditionState) -> None:
        generation, moment = self._generation, self._clock()

        def fields(status: Obj) -> Obj:
            conditions = with_condition(status.get("conditions") or [], state, generation, moment)
            out: Obj = {"conditions": conditions}
            if document is not None:
                out["verification"] = document
            return out

        self._store.update_status(fields)

    def _event(self, obj: Obj, state: ConditionState) -> None:
        type_, reason = EVENT_REASONS.get(state[1], ("Warning", "VerificationFailed"))
        try:
            self._kube.post_event(obj, type_, reason, verification_event(state), now=self._clock())
        except Exception as err:  # best effort: the status says the same
            log.warning("could not post event %s: %s", reason, err)
