"""A stand-in for ``sparkcdc driver`` in operator tests (``SPARKCDC_DRIVER_COMMAND``).

Behaviour by the pipeline name's first word: ``crash-*`` fails at once with a termination
message; ``done-*`` checkpoints and exits 0; anything else checkpoints and keeps running.
Each start appends its epoch to ``epochs`` in the checkpoint, so a test sees every resume.
"""

from __future__ import annotations

import os
import sys
import time

from sparkcdc.controller.builders import secret_env_name
from sparkcdc.controller.client import KubeClient, load_config
from sparkcdc.state.status_store import StatusCheckpointStore


def main() -> int:
    name, namespace = os.environ["SPARKCDC_PIPELINE_NAME"], os.environ["SPARKCDC_PIPELINE_NAMESPACE"]
    epoch = int(os.environ["SPARKCDC_EPOCH"])
    mode = name.split("-", 1)[0]
    has_secret = bool(os.environ.get(secret_env_name("spec.source.passwordSecretRef")))
    print(f"fake driver {namespace}/{name} epoch {epoch} secret-present={has_secret}", flush=True)
    if mode == "crash":
        with open(os.environ["SPARKCDC_TERMINATION_MESSAGE_PATH"], "w") as out:
            out.write("boom from the fake driver")
        return 3
    store = StatusCheckpointStore(KubeClient.from_config(load_config()).api, namespace, name, epoch)
    document = store.load() or {"version": 1, "epochs": [], "nothing": None}
    document["epochs"] = [*document["epochs"], epoch]
    store.save(document, {"splitsTotal": 4, "splitsFinished": 1, "tables": 2})
    store.flush()
    print("checkpointed", flush=True)
    if mode == "done":
        return 0
    while True:
        time.sleep(1)


if __name__ == "__main__":
    sys.exit(main())
