"""Why a driver pod could not be created, and what the user can do about it (pure).

The API server refuses a pod for reasons no retry fixes by itself soon: a ResourceQuota is
exhausted, PodSecurity admission or a webhook forbids it, the operator lacks RBAC, or the pod is
invalid. The controller reports the refusal; ``classify`` names it for the Event and the
conditions. The messages are the API server's (they echo pod fields, and the pod carries
credentials only as secret references, so they hold no secret), shortened.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DRIVER_ACCOUNT_MISSING", "Refusal", "classify"]

DRIVER_ACCOUNT_MISSING = "DriverAccountMissing"
_MAX_MESSAGE = 512


@dataclass(frozen=True)
class Refusal:
    """The failed creation of the driver pod (or of what it needs, e.g. its ServiceAccount)."""

    code: int | None  # HTTP status; None without a response (a network error, an operator check)
    reason: str  # the API's Status reason (Forbidden, Invalid, ...), or the operator's own
    message: str


def classify(refusal: Refusal) -> tuple[str, str, str]:
    """(condition and Event reason, the refusal's message, what to do)."""
    message = " ".join(refusal.message.split())
    if len(message) > _MAX_MESSAGE:
        message = message[: _MAX_MESSAGE - 3] + "..."
    lowered = message.lower()
    if refusal.reason == DRIVER_ACCOUNT_MISSING:
        return DRIVER_ACCOUNT_MISSING, message, "see the message"
    if refusal.code == 403 and "exceeded quota" in lowered:
        hint = "raise the namespace's ResourceQuota, or lower spec.spark.driver resources"
        return "QuotaExceeded", message, hint
    if refusal.code == 403:
        hint = (
            "the namespace refuses the driver pod (PodSecurity level, an admission webhook) or the "
            "operator may not create it (RBAC): fix what the message names"
        )
        return "DriverPodForbidden", message, hint
    if refusal.code in (400, 422):
        return "DriverPodInvalid", message, "fix the spec fields the message names (spec.spark)"
    return "DriverPodCreateFailed", message or refusal.reason, "retrying; see the operator's log"
