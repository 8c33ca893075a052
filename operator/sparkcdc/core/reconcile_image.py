"""The operator's image allow-list: a pipeline whose ``spec.spark.image`` is not on it runs nothing.

Whoever may create a CdcPipeline chooses the image its driver and executor pods run, as the
pipeline's ServiceAccount. A cluster admin who lists the images pipelines may run
(``--allowed-image``, the chart's ``pipelines.allowedImages``) gets them enforced twice: at admission
by the chart's ValidatingAdmissionPolicy, and here, by the operator, which is what holds for
pipelines created before the list changed or where the policy is not installed. A refused
pipeline gets no driver pod (a running one is stopped, its checkpoint kept) and stays Pending with
``Ready=False, reason ImageNotAllowed`` and ``Stalled=True`` until its image or the list changes;
not Failed, since phase Failed sticks until the spec changes and a widened list must suffice.

An entry allows an image when it is the image itself; when it ends in ``/``, ``:`` or ``@``, every
image it starts (a registry or a path of one, a repository's tags or digests); otherwise, as a
repository, every tag and digest of it. Matching is on the image as written in the spec: the
entries must be written the way pipelines write images (``docker.io/library/x`` is not ``x``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from sparkcdc.core.reconcile_status import assemble
from sparkcdc.core.reconcile_types import (
    Action,
    DeletePod,
    Event,
    Observed,
    Settings,
    SpecView,
    StatusView,
    Verdict,
)

__all__ = ["IMAGE_NOT_ALLOWED", "image_allowed", "image_refusal", "refuse_image"]

IMAGE_NOT_ALLOWED = "ImageNotAllowed"
_PREFIX_ENDS = ("/", ":", "@")
_SHOWN_ENTRIES = 5


def image_allowed(image: str, allowed: Sequence[str]) -> bool:
    """Whether ``allowed`` (empty: anything) lets a pipeline run ``image``."""
    return not allowed or any(_allows(entry, image) for entry in allowed)


def _allows(entry: str, image: str) -> bool:
    if image == entry:
        return True
    if entry.endswith(_PREFIX_ENDS):
        return image.startswith(entry)
    # A repository: its tags and digests, never a longer repository name (x-evil for x).
    return image.startswith((entry + ":", entry + "@"))


def image_refusal(image: str, allowed: Sequence[str]) -> str | None:
    """The condition message for an image the list does not allow, or None when it does."""
    if image_allowed(image, allowed):
        return None
    shown = ", ".join(allowed[:_SHOWN_ENTRIES]) + (", ..." if len(allowed) > _SHOWN_ENTRIES else "")
    return (
        f"spec.spark.image {image!r} is not allowed by the operator's --allowed-image list "
        f"(chart value pipelines.allowedImages: {shown}): use an image from the list, or ask the "
        "cluster admin to add it; no driver runs until then"
    )


def refuse_image(
    spec: SpecView,
    status: StatusView | None,
    observed: Observed,
    now: datetime,
    message: str,
    settings: Settings,
) -> list[Action]:
    """The actions for a pipeline whose image is refused: stop its driver, say why once."""
    verdict = Verdict(
        "Pending",
        ("False", IMAGE_NOT_ALLOWED, message),
        ("False", "", ""),
        ("True", IMAGE_NOT_ALLOWED, message),
    )
    actions: list[Action] = [DeletePod(p.name, IMAGE_NOT_ALLOWED) for p in observed.pods if not p.deleting]
    if not _reported(status, observed, message):
        actions.append(Event("Warning", IMAGE_NOT_ALLOWED, message))
    # No driver Service either: nothing would ever use it.
    quiet = replace(observed, service_exists=True)
    return assemble(spec, status, quiet, now, settings, verdict, actions, None)


def _reported(status: StatusView | None, observed: Observed, message: str) -> bool:
    """Whether the status says so already for this generation (no second Event on each resync)."""
    if status is None or status.observed_generation != observed.generation:
        return False
    ready = next((c for c in status.conditions if c.type == "Ready"), None)
    return ready is not None and ready.reason == IMAGE_NOT_ALLOWED and ready.message == message
