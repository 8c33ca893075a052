"""``statePolicy: Retain``: the checkpoint outlives the CdcPipeline in ``<name>-sparkcdc-state``.

A GitOps prune followed by a re-create of the same name resumes instead of snapshotting again.
The ConfigMap has no owner (it must survive the pipeline) and is removed once restored.
"""

from __future__ import annotations

import base64
import json
import zlib
from typing import Any

from sparkcdc.controller.builders import LABEL_COMPONENT, LABEL_NAME, LABEL_PIPELINE, driver_selector
from sparkcdc.kube.client import KubeClient
from sparkcdc.kube.status_store import StatusCheckpointStore, epoch_of, read_checkpoint

Obj = dict[str, Any]
DATA_KEY = "checkpoint.json.zz"


def state_map_name(pipeline: str) -> str:
    return f"{pipeline}-sparkcdc-state"


def retain_state(kube: KubeClient, obj: Obj, now: str) -> bool:
    """Stop the driver, then copy its checkpoint aside. False while a driver pod still exists
    (it could still write a newer checkpoint): call again later."""
    md = obj["metadata"]
    namespace, name = md["namespace"], md["name"]
    pods = kube.list_pods(namespace, driver_selector(name))
    for pod in pods:
        if pod["metadata"].get("deletionTimestamp") is None:
            kube.delete_pod(namespace, pod["metadata"]["name"])
    if pods:
        return False
    document = read_checkpoint(kube, obj)
    if document is None:
        return True
    packed = zlib.compress(json.dumps(document, separators=(",", ":")).encode(), 9)
    body = {
        "metadata": {
            "name": state_map_name(name),
            "namespace": namespace,
            "labels": {LABEL_NAME: "sparkcdc", LABEL_COMPONENT: "retained-state", LABEL_PIPELINE: name},
            "annotations": {
                "sparkcdc.io/retained-from-uid": md.get("uid", ""),
                "sparkcdc.io/retained-at": now,
            },
        },
        "binaryData": {DATA_KEY: base64.b64encode(packed).decode("ascii")},
    }
    kube.put_config_map(body)
    kube.post_event(
        obj, "Normal", "StateRetained", f"checkpoint kept in ConfigMap {state_map_name(name)}", now=now
    )
    return True


def restore_state(kube: KubeClient, obj: Obj, now: str) -> bool:
    """Give a new pipeline (no driver started yet, no checkpoint) the checkpoint retained under its
    name. Runs before the first driver pod exists, as the epoch-0 writer."""
    status = obj.get("status") or {}
    if status.get("checkpoint") is not None or epoch_of(obj) != 0:
        return False
    md = obj["metadata"]
    namespace, name = md["namespace"], md["name"]
    retained = kube.get_config_map(namespace, state_map_name(name))
    if retained is None:
        return False
    packed = base64.b64decode((retained.get("binaryData") or {}).get(DATA_KEY, ""))
    document = json.loads(zlib.decompress(packed))
    store = StatusCheckpointStore(kube, namespace, name, 0, min_interval=0.0)
    store.save_document(document)
    store.close()
    kube.delete_config_map(namespace, state_map_name(name))
    message = f"resumed from the checkpoint retained in ConfigMap {state_map_name(name)}"
    kube.post_event(obj, "Normal", "StateRestored", message, now=now)
    return True
