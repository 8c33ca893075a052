"""The operator's part in verification: say so when no driver is there to answer a request.

Verification runs in the driver pod (``driver_verify``). A ``verifyNonce`` set while the pipeline
is suspended, Failed or Completed (snapshot-only) would otherwise wait silently; after each
reconcile the operator sets the ``Verified`` condition to say why nothing runs
(``verify_status.idle_condition``). The request stays unanswered, so a driver that starts later
(resume, ``restartNonce``) runs it.
"""

from __future__ import annotations

import logging
from datetime import datetime, timezone
from typing import Any

from pydantic import ValidationError

from sparkcdc.api.resource import CdcPipeline
from sparkcdc.controller.client import ConflictError, KubeClient
from sparkcdc.controller.verify_status import CONDITION, idle_condition, with_condition

log = logging.getLogger(__name__)


def answer_idle_request(kube: KubeClient, namespace: str, name: str) -> None:
    """Set ``Verified`` for a pending request of a pipeline without a running driver."""
    obj = kube.get_pipeline(namespace, name)
    if obj is None:
        return
    try:
        pipeline = CdcPipeline.from_k8s(obj)
    except ValidationError:
        return  # the reconcile reports the invalid spec
    state = idle_condition(pipeline.spec, pipeline.status)
    if state is None:
        return
    conditions = (obj.get("status") or {}).get("conditions") or []
    current: dict[str, Any] = next((c for c in conditions if c.get("type") == CONDITION), {})
    if (current.get("status"), current.get("reason"), current.get("message")) == state:
        return
    now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    patch = {"conditions": with_condition(conditions, state, obj["metadata"].get("generation"), now)}
    try:
        kube.patch_pipeline_status(namespace, name, patch, obj["metadata"]["resourceVersion"])
    except ConflictError:
        log.debug("CdcPipeline %s/%s changed; Verified is set at the next reconcile", namespace, name)
