"""What a Warning Event about a failed driver may say: the classified reason, never the driver's words.

A driver's termination message is whatever ended it: a refusal the driver worded itself, but also
``<exception type>: <text>`` of any error, and an error's text can quote a SQL statement with the
key values it was about, a URL with credentials in it, or a server message echoing a row. The
status keeps it (``status.driver.lastFailure`` and the Ready condition: read by those who may read
the pipeline, the same people who read its split boundaries). Events are read by a wider audience
(the namespace's ``view`` role, event exporters, log pipelines), so they carry the exit code,
Kubernetes' termination reason (Error, OOMKilled) and a fixed sentence per reason, pointing at the
status for the rest. A driver that never ran (a Pending timeout) is described in the scheduler's
and the kubelet's words, which name objects and never hold their data.
"""

from __future__ import annotations

from typing import Protocol

from sparkcdc.core.reconcile_types import DriverPod

__all__ = ["Failure", "failure_event"]

# By the failure's reason (core/reconcile.py): what happened, in words that hold no data.
_SAYS = {
    "SourceChanged": "it refused its source, which is not the server its checkpoint was written on",
    "BinlogLost": "the binlog position it was to resume from is gone from the source",
}
_DEFAULT = "the driver failed"
_WHERE = "details in status.driver.lastFailure and the driver's log"


class Failure(Protocol):
    """A failure as core/reconcile.py records it."""

    @property
    def reason(self) -> str: ...
    @property
    def summary(self) -> str: ...  # what the status says, the driver's termination message included
    @property
    def pending(self) -> bool: ...  # the pod never ran: Kubernetes' words only


def failure_event(pod: DriverPod, failure: Failure) -> str:
    """The message of the Warning Event for the failure of ``pod``."""
    if failure.pending:
        return f"driver {pod.name}: {failure.summary}"
    parts = [f"exit code {pod.exit_code}" if pod.exit_code is not None else "failed"]
    if pod.termination_reason:
        parts.append(pod.termination_reason[:64])
    return f"driver {pod.name}: {': '.join(parts)}: {_SAYS.get(failure.reason, _DEFAULT)}; {_WHERE}"
