"""The Event a finished verification (``spec.verifyNonce``) posts: counts, never key ranges or errors.

The ``Verified`` condition and ``status.verification`` name the chunks that differ by their key
ranges (primary-key values of the source) and a failed run by its error's text. Events are read
more widely than a pipeline's status (the namespace's ``view`` role, event exporters), so the Event
of a run that found something says which reason it ended with and where to look, and only a run
that matched (or repaired everything) repeats its message, which holds nothing but counts.
"""

from __future__ import annotations

from sparkcdc.controller.verify_status import MATCHED, REPAIRED, ConditionState

__all__ = ["verification_event"]

_COUNTS_ONLY = (MATCHED, REPAIRED)


def verification_event(state: ConditionState) -> str:
    """The Event message of a verification that ended in ``state`` (the Verified condition)."""
    _, reason, message = state
    if reason in _COUNTS_ONLY:
        return message
    return (
        f"verification ended: {reason}; the Verified condition and status.verification name the "
        "chunks (by key range) or the error"
    )
