"""The operator's decisions: from spec, status and what the handler observed to a list of actions.

Pure and level-based: the same inputs always give the same actions, and executing them then
reconciling again converges. Rules that keep the pipeline correct:

* at most one driver pod per pipeline is alive; ``status.driver.epoch`` rises only when no pod
  of the pipeline exists any more (not even a terminating one), and the status patch raising it
  comes before the ``CreatePod`` of that epoch — so a zombie driver is always fenced out;
* the operator restarts failed drivers itself (pods use ``restartPolicy: Never``) with capped
  exponential backoff; a failure is recorded once, marked by ``status.driver.lastFailure``
  starting with the failed pod's name; the failed pod is kept until its backoff has elapsed, so
  its finish time and logs stay observable;
* a driver that refused its source (``SourceChanged``: not the server of the checkpoint, and not
  followable by GTID) is not restarted: phase Failed until the spec changes, like
  ``MaxRestartsExceeded``, since another start would refuse again;
* a driver pod the API server refuses to create (quota, PodSecurity, RBAC, invalid) is recorded
  in ``status.driver.createFailure`` with a Warning Event (``driver_refused``); the next pod
  waits out restartPolicy's backoff by its count of refusals, or is tried at once after a
  spec change, so the epoch does not race upwards while nothing can run;
* ``status.checkpoint`` and ``status.progress`` belong to the driver and are never written here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sparkcdc.core.reconcile_events import failure_event
from sparkcdc.core.reconcile_status import assemble, driver_pod_name, pending_cause, running_phase
from sparkcdc.core.reconcile_types import (
    Action,
    CreateFailureView,
    CreatePod,
    DeletePod,
    DriverPod,
    Event,
    Observed,
    RestartPolicyView,
    Settings,
    SpecView,
    StatusView,
    Verdict,
    format_time,
    parse_time,
)
from sparkcdc.core.refusal import Refusal, classify

__all__ = ["backoff_seconds", "driver_refused", "reconcile"]

# Event and condition reasons other parts (metrics, docs, Argo CD health) rely on.
DRIVER_FAILED = "DriverFailed"
# A driver that refused a source that is not the server of its checkpoint (engine/source_change.py)
# says so first in its termination message.
SOURCE_CHANGED = "SourceChanged"
_SOURCE_CHANGED_MESSAGE = "the source changed:"
# A driver whose resume position is gone from the source (mysql/errors.py BinlogLostError): no
# restart can help; the user resnapshots (spec.startup.onBinlogLost) or starts anew.
BINLOG_LOST = "BinlogLost"
# Failures that wait for the user instead of being retried, by the termination message's start.
_REFUSALS = {_SOURCE_CHANGED_MESSAGE: SOURCE_CHANGED, "binlog lost:": BINLOG_LOST}
MAX_RESTARTS = "MaxRestartsExceeded"
FALSE = ("False", "", "")


@dataclass(frozen=True)
class _Failure:
    reason: str  # DriverFailed, or the cause of a Pending timeout (Unschedulable, ...)
    summary: str
    at: datetime
    ran_for: float  # seconds the driver ran before failing; 0 when it never started
    pending: bool = False


@dataclass
class _Plan:
    verdict: Verdict
    pod_actions: list[Action] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    requeue: float | None = None


@dataclass(frozen=True)
class _Context:
    spec: SpecView
    status: StatusView | None
    observed: Observed
    now: datetime
    settings: Settings

    @property
    def epoch(self) -> int:
        driver = self.status.driver if self.status else None
        return driver.epoch if driver else 0

    @property
    def restarts(self) -> int:
        driver = self.status.driver if self.status else None
        return driver.restarts if driver else 0

    @property
    def last_failure(self) -> str:
        driver = self.status.driver if self.status else None
        return (driver.last_failure or "") if driver else ""

    @property
    def create_failure(self) -> CreateFailureView | None:
        driver = self.status.driver if self.status else None
        return driver.create_failure if driver else None

    @property
    def current(self) -> DriverPod | None:
        """The live pod of the current epoch (a terminating one does not count)."""
        return next((p for p in self.observed.pods if p.epoch == self.epoch and not p.deleting), None)

    @property
    def failed_locked(self) -> bool:
        """Phase Failed sticks until the spec changes (a new generation, e.g. a restartNonce)."""
        status = self.status
        return bool(
            status and status.phase == "Failed" and status.observed_generation == self.observed.generation
        )


def reconcile(
    spec: SpecView,
    status: StatusView | None,
    observed: Observed,
    now: datetime,
    settings: Settings | None = None,
) -> list[Action]:
    """The actions that move the cluster towards ``spec``, in the order they must be executed.

    Stop at the first action that fails (a status conflict in particular) and reconcile again.
    """
    if observed.deleting:
        # Owner references remove the pods; deleting them now stops the driver without delay.
        return [DeletePod(p.name, "PipelineDeleted") for p in observed.pods if not p.deleting]
    ctx = _Context(spec, status, observed, now, settings or Settings())
    plan = _decide(ctx)
    current = ctx.current
    if current is not None and ctx.create_failure is not None:
        # A pod was created at last: the refusal is over, and so is the Stalled it set.
        plan.verdict.driver["createFailure"] = None
        if plan.verdict.stalled is None:
            plan.verdict.stalled = FALSE
    stale = [DeletePod(p.name, "StaleEpoch") for p in observed.pods if not p.deleting and p is not current]
    return assemble(ctx.spec, ctx.status, observed, now, ctx.settings, plan.verdict, [
        *stale, *plan.pod_actions, *plan.events
    ], plan.requeue)  # fmt: skip


def _decide(ctx: _Context) -> _Plan:
    current = ctx.current
    if ctx.spec.suspend:
        return _suspend(ctx, current)
    if ctx.failed_locked:
        return _stay_failed(ctx)
    if current is not None:
        return _with_pod(ctx, current)
    if ctx.observed.pods:
        return _wait_for_old(ctx)
    return _refused_wait(ctx) or _start(ctx)


def driver_refused(
    spec: SpecView,
    status: StatusView | None,
    observed: Observed,
    now: datetime,
    refusal: Refusal,
    settings: Settings | None = None,
) -> list[Action]:
    """The actions after ``CreatePod`` failed (``status`` as patched before it): record the
    refusal in the status, post a Warning Event naming it, and back off."""
    ctx = _Context(spec, status, observed, now, settings or Settings())
    reason, message, hint = classify(refusal)
    previous = ctx.create_failure
    attempts = (previous.attempts if previous else 0) + 1
    text = f"cannot create driver pod {driver_pod_name(observed.pipeline, ctx.epoch)}: {message}; {hint}"
    wait = backoff_seconds(spec.restart_policy, attempts)
    plan = _refused(reason, text, attempts, wait, now + timedelta(seconds=wait))
    failure = {"reason": reason, "message": text, "attempts": attempts, "at": format_time(now)}
    plan.verdict.driver["createFailure"] = failure
    plan.events.append(Event("Warning", reason, f"{text} (trying again in {wait:.0f}s)"))
    return assemble(spec, status, observed, now, ctx.settings, plan.verdict, plan.events, plan.requeue)


def backoff_seconds(policy: RestartPolicyView, restarts: int) -> float:
    """Delay before restart number ``restarts`` (1-based): initial * 2^(n-1), capped."""
    exponent = min(max(restarts - 1, 0), 32)  # 2^32 s is past any cap; avoids huge integers
    return float(min(policy.initial_backoff_seconds * 2**exponent, policy.max_backoff_seconds))


# -- branches --------------------------------------------------------------------------------------


def _suspend(ctx: _Context, current: DriverPod | None) -> _Plan:
    plan = _Plan(Verdict("Suspended", ("False", "Suspended", "spec.suspend is true"), FALSE, FALSE))
    if current is not None:
        plan.pod_actions.append(DeletePod(current.name, "Suspended"))
        plan.events.append(Event("Normal", "Suspended", f"stopping driver {current.name}; checkpoint kept"))
    if ctx.observed.pods:
        plan.verdict.reconciling = ("True", "Suspending", "waiting for the driver pod to stop")
        plan.requeue = 2.0
    return plan


def _stay_failed(ctx: _Context) -> _Plan:
    conditions = ctx.status.conditions if ctx.status else ()
    refused = next((c for c in conditions if c.type == "Ready" and c.reason == SOURCE_CHANGED), None)
    if refused is not None:  # a refused source stays named as such
        return _Plan(Verdict("Failed", ("False", SOURCE_CHANGED, refused.message), FALSE, None))
    message = ctx.last_failure or "the driver failed"
    return _Plan(Verdict("Failed", ("False", MAX_RESTARTS, message), FALSE, None))


def _with_pod(ctx: _Context, pod: DriverPod) -> _Plan:
    if (reason := _rollout_reason(ctx, pod)) is not None:
        return _roll(ctx, pod, reason)
    if (failure := _failure(pod, ctx.spec.restart_policy, ctx.now)) is not None:
        return _failed(ctx, pod, failure)
    if pod.phase == "Succeeded":
        message = (pod.termination_message or "the driver finished").strip()[-512:]
        return _Plan(Verdict("Completed", ("True", "Completed", message), FALSE, FALSE))
    if pod.phase == "Running":
        return _running(ctx, pod)
    return _pending(ctx, pod)


def _rollout_reason(ctx: _Context, pod: DriverPod) -> str | None:
    spec = ctx.spec
    if pod.restart_nonce != spec.restart_nonce:
        return "RestartRequested"
    # A streaming driver follows a new resnapshotNonce itself (driver/spec_watch.py).
    if pod.resnapshot_nonce != spec.resnapshot_nonce and spec.startup.mode == "snapshot-only":
        return "ResnapshotRequested"
    if pod.spec_hash != ctx.observed.spec_hash:
        return "SpecChanged"
    return None


def _roll(ctx: _Context, pod: DriverPod, reason: str) -> _Plan:
    """The user changed something the driver depends on: replace it now, failures forgiven."""
    message = f"replacing driver {pod.name}: {reason}"
    plan = _Plan(Verdict("Pending", ("False", reason, message), ("True", reason, message), FALSE))
    plan.pod_actions.append(DeletePod(pod.name, reason))
    plan.events.append(Event("Normal", reason, message))
    if ctx.restarts:
        plan.verdict.driver["restarts"] = 0
    return plan


def _failure(pod: DriverPod, policy: RestartPolicyView, now: datetime) -> _Failure | None:
    if pod.phase == "Failed" or (pod.exit_code is not None and pod.exit_code != 0):
        at = pod.finished_at or pod.started_at or pod.created_at
        ran_for = (at - pod.started_at).total_seconds() if pod.started_at else 0.0
        parts = [f"exit code {pod.exit_code}" if pod.exit_code is not None else "failed"]
        if pod.termination_reason:
            parts.append(pod.termination_reason)
        message = (pod.termination_message or "").strip()
        refused = next((r for m, r in _REFUSALS.items() if message.startswith(m)), None)
        if message:
            # A refusal says what first (both servers, the lost position); other failures end
            # with what matters.
            parts.append(message[:1024] if refused else message[-1024:])
        return _Failure(refused or DRIVER_FAILED, ": ".join(parts), at, ran_for)
    timeout = policy.pending_timeout_seconds
    if pod.phase == "Pending" and (now - pod.created_at).total_seconds() >= timeout:
        cause, detail = pending_cause(pod)
        summary = f"pending for more than {timeout}s: {cause}: {detail}"
        return _Failure(cause, summary, pod.created_at + timedelta(seconds=timeout), 0.0, pending=True)
    return None


def _failed(ctx: _Context, pod: DriverPod, failure: _Failure) -> _Plan:
    policy = ctx.spec.restart_policy
    recorded = ctx.last_failure.startswith(f"{pod.name}:")
    restarts = ctx.restarts
    verdict = Verdict("Pending", ("False", failure.reason, failure.summary), FALSE, None)
    plan = _Plan(verdict)
    if failure.pending:
        verdict.stalled = ("True", failure.reason, failure.summary)
    if not recorded:
        # A driver that ran for the stable period before failing starts a new series.
        restarts = (0 if failure.ran_for >= policy.stable_seconds else restarts) + 1
        verdict.driver.update(restarts=restarts, lastFailure=f"{pod.name}: {failure.summary}")
        plan.events.append(Event("Warning", failure.reason, failure_event(pod, failure)))
    if failure.reason in _REFUSALS.values():
        # A refusal, not a crash: a restart would refuse again. It waits for the user (a new
        # spec.source, onSourceChange or onBinlogLost: resnapshot, or a restartNonce once the
        # server caught up).
        verdict.phase, verdict.ready = "Failed", ("False", failure.reason, failure.summary)
        verdict.stalled = ("True", failure.reason, failure.summary)
        return plan
    if policy.max_restarts is not None and restarts > policy.max_restarts:
        limit = policy.max_restarts
        message = f"{restarts} consecutive driver failures (restartPolicy.maxRestarts is {limit})"
        verdict.phase, verdict.ready = "Failed", ("False", MAX_RESTARTS, message)
        verdict.stalled = ("True", MAX_RESTARTS, message)
        if not recorded:
            plan.events.append(Event("Warning", MAX_RESTARTS, message))
        return plan
    due = failure.at + timedelta(seconds=backoff_seconds(policy, restarts))
    if ctx.now >= due:
        plan.pod_actions.append(DeletePod(pod.name, "RestartAfterFailure"))
        verdict.reconciling = ("True", "Restarting", f"restarting after failure {restarts}")
    else:
        wait = (due - ctx.now).total_seconds()
        verdict.reconciling = ("True", "BackOff", f"restarting in {wait:.0f}s (failure {restarts})")
        plan.requeue = wait
    return plan


def _running(ctx: _Context, pod: DriverPod) -> _Plan:
    spec, status, settings, now = ctx.spec, ctx.status, ctx.settings, ctx.now
    progress = status.progress if status else None
    phase = running_phase(spec, progress)
    plan = _Plan(Verdict(phase, ("True", phase, f"driver {pod.name} is running"), FALSE, FALSE))
    started = pod.started_at or pod.created_at
    waits: list[float] = []
    if ctx.restarts:
        stable_for = (now - started).total_seconds()
        if stable_for >= spec.restart_policy.stable_seconds:
            plan.verdict.driver["restarts"] = 0
        else:
            waits.append(spec.restart_policy.stable_seconds - stable_for)
    last = max(ctx.observed.last_progress_at or started, started)
    idle = (now - last).total_seconds()
    # A driver that reports its commits (heartbeats included) proves it is alive by them; only
    # one that does not (an older release) is taken at its last reported lag.
    caught_up = (
        phase == "Streaming"
        and progress is not None
        and progress.last_commit_at is None
        and progress.lag_seconds is not None
        and progress.lag_seconds < settings.stall_seconds
    )
    if idle >= settings.stall_seconds and not caught_up:
        message = f"no snapshot split finished and the binlog offset did not move for {idle:.0f}s"
        plan.verdict.ready = ("False", "NoProgress", message)
        plan.verdict.stalled = ("True", "NoProgress", message)
    else:
        waits.append(settings.stall_seconds - idle)
    plan.requeue = min(waits) if waits else None
    return plan


def _pending(ctx: _Context, pod: DriverPod) -> _Plan:
    timeout = ctx.spec.restart_policy.pending_timeout_seconds
    waited = (ctx.now - pod.created_at).total_seconds()
    cause, detail = pending_cause(pod)
    message = f"driver {pod.name} is {pod.phase}: {detail}"
    # A known cause is named right away; the Pending timeout only decides when to give up.
    reason = "DriverPending" if cause == "PendingTimeout" else cause
    plan = _Plan(Verdict("Pending", ("False", reason, message), ("True", "DriverStarting", message)))
    plan.requeue = max(timeout - waited, 1.0)
    return plan


def _refused(reason: str, text: str, attempts: int, wait: float, due: datetime) -> _Plan:
    # The time, not a countdown: reconciles while waiting then leave the status as it is.
    retry = f"creating the driver pod again at {format_time(due)} (refused {attempts} time(s) in a row)"
    verdict = Verdict("Pending", ("False", reason, text), ("True", "BackOff", retry), ("True", reason, text))
    return _Plan(verdict, requeue=wait)


def _refused_wait(ctx: _Context) -> _Plan | None:
    """While the backoff after a refused driver pod runs: say so and wait. None: try now (the
    backoff is over, or the spec changed since, which may be the fix)."""
    failure = ctx.create_failure
    status = ctx.status
    if failure is None or status is None or status.observed_generation != ctx.observed.generation:
        return None
    at = parse_time(failure.at)
    if at is None:
        return None
    due = at + timedelta(seconds=backoff_seconds(ctx.spec.restart_policy, failure.attempts))
    if ctx.now >= due:
        return None
    return _refused(failure.reason, failure.message, failure.attempts, (due - ctx.now).total_seconds(), due)


def _wait_for_old(ctx: _Context) -> _Plan:
    names = ", ".join(p.name for p in ctx.observed.pods)
    message = f"waiting for the previous driver pod to be gone: {names}"
    reason = "WaitingForPreviousDriver"
    return _Plan(Verdict("Pending", ("False", reason, message), ("True", reason, message)), requeue=2.0)


def _start(ctx: _Context) -> _Plan:
    epoch = ctx.epoch + 1
    name = driver_pod_name(ctx.observed.pipeline, epoch)
    message = f"starting driver {name} (epoch {epoch})"
    starting = ("False", "DriverStarting", message)
    plan = _Plan(Verdict("Pending", starting, ("True", "DriverStarting", message)))
    plan.verdict.driver.update(epoch=epoch, pod=name, startedAt=format_time(ctx.now))
    plan.pod_actions.append(CreatePod(epoch))
    plan.events.append(Event("Normal", "DriverStarting", message))
    plan.requeue = float(ctx.spec.restart_policy.pending_timeout_seconds)
    return plan
