"""A stand-in for ``sparkcdc driver`` in operator tests: the driver command of the fake driver's test
image (``tests/e2e/fake_driver/Dockerfile``), which pipelines name in ``spec.spark.image``.

Behaviour by the pipeline name's first word: ``crash-*`` fails at once with a termination
message; ``done-*`` checkpoints and exits 0; anything else checkpoints and keeps running.
Each start appends its epoch to ``epochs`` in the checkpoint, so a test sees every resume.
Like the real driver it reads the API with the pod's service account, writes the termination
message to ``/dev/termination-log`` and exits on SIGTERM (as PID 1 of its container it would
otherwise ignore it until the grace period ends).
"""

from __future__ import annotations

import os
import signal
import sys
import time
from types import FrameType

from sparkcdc.controller.builders import secret_env_name
from sparkcdc.driver.support import write_termination_message
from sparkcdc.kube.client import KubeClient, load_config
from sparkcdc.kube.status_store import StatusCheckpointStore


def _exit_on_sigterm(signum: int, frame: FrameType | None) -> None:
    sys.exit(128 + signum)


def main() -> int:
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    name, namespace = os.environ["SPARKCDC_PIPELINE_NAME"], os.environ["SPARKCDC_PIPELINE_NAMESPACE"]
    epoch = int(os.environ["SPARKCDC_EPOCH"])
    mode = name.split("-", 1)[0]
    has_secret = bool(os.environ.get(secret_env_name("spec.source.passwordSecretRef")))
    print(f"fake driver {namespace}/{name} epoch {epoch} secret-present={has_secret}", flush=True)
    if mode == "crash":
        write_termination_message("boom from the fake driver")
        return 3
    kube = load_config(os.environ)
    assert kube.namespace == namespace, "not the in-cluster service account of the pod's namespace"
    store = StatusCheckpointStore(KubeClient.from_config(kube), namespace, name, epoch)
    document = store.load_document() or {"version": 1, "epochs": [], "nothing": None}
    document["epochs"] = [*document["epochs"], epoch]
    store.save_document(document, {"splitsTotal": 4, "splitsFinished": 1, "tables": 2})
    store.flush()
    print("checkpointed", flush=True)
    if mode == "done":
        return 0
    while True:
        time.sleep(1)


if __name__ == "__main__":
    sys.exit(main())
