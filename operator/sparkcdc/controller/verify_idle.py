"""The operator's part in verification, after each reconcile (``verify_status.upkeep``).

Verification runs in the driver pod (``driver/verify_loop.py``). A ``verifyNonce`` set while the pipeline
is suspended, Failed or Completed (snapshot-only) would otherwise wait silently: the operator sets
the ``Verified`` condition to say why nothing runs. The request stays unanswered, so a driver that
starts later (resume, ``restartNonce``) runs it. An answered request's condition is carried to the
current generation when other spec fields change, so it never reads as stale.
"""

from __future__ import annotations

import logging
from datetime import datetime, timezone

from pydantic import ValidationError

from sparkcdc.api.resource import CdcPipeline
from sparkcdc.controller.verify_status import upkeep
from sparkcdc.kube.client import ConflictError, KubeClient

log = logging.getLogger(__name__)


def answer_idle_request(kube: KubeClient, namespace: str, name: str) -> None:
    """The ``Verified`` condition after a reconcile (``verify_status.upkeep``)."""
    obj = kube.get_pipeline(namespace, name)
    if obj is None:
        return
    try:
        pipeline = CdcPipeline.from_k8s(obj)
    except ValidationError:
        return  # the reconcile reports the invalid spec
    conditions = (obj.get("status") or {}).get("conditions") or []
    now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    generation = obj["metadata"].get("generation")
    updated = upkeep(pipeline.spec, pipeline.status, conditions, generation, now)
    if updated is None:
        return
    try:
        kube.patch_pipeline_status(
            namespace, name, {"conditions": updated}, obj["metadata"]["resourceVersion"]
        )
    except ConflictError:
        log.debug("CdcPipeline %s/%s changed; Verified is set at the next reconcile", namespace, name)
