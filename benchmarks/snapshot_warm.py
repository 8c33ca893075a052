"""A snapshot by a driver whose Spark is already up: the snapshot engine's own rate.

architecture §4 compares read paths in warm runs, and a driver on Kubernetes keeps its session for the
pipeline's life, so what a snapshot of a table costs there excludes the JVM's and the workers'
start-up. This script does what ``sparkcdc run MANIFEST`` does (``driver/local.py``: the manifest's
runtime, a local context, a ``SplitEnumerator`` with a file checkpoint store), except that it
starts the context and its Python workers (with the modules a snapshot task imports) first,
then creates the file ``READY`` in the state directory and runs the snapshot. snapshot.py times
the run from ``READY`` to the checkpoint saying the snapshot is done.

Usage: python benchmarks/snapshot_warm.py MANIFEST STATE_DIR
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path

from sparkcdc.api.manifest import load_manifests
from sparkcdc.driver.local import runtimes_of
from sparkcdc.engine.enumerator import SplitEnumerator
from sparkcdc.engine.listener import PipelineListener
from sparkcdc.engine.wave_runner import snapshot_modules
from sparkcdc.options import EngineOptions
from sparkcdc.spark.lazy_session import LazySession
from sparkcdc.spark.session import create_context, local_master, warm_up
from sparkcdc.state.file_store import FileCheckpointStore

READY = "READY"


def main(manifest: str, state_dir: str) -> int:
    # The waves on the Spark started here, not the driver's threads.
    options = EngineOptions.from_environment(os.environ)
    (runtime,) = runtimes_of(load_manifests([manifest]), replace(options, snapshot_in_driver="never"))
    parallelism = runtime.pipeline.spec.snapshot.parallelism
    spark = LazySession(lambda: create_context("sparkcdc-bench-warm", local_master(parallelism), options))
    try:
        # What SplitEnumerator does while it plans, but waited for before the clock starts.
        warm_up(spark, parallelism, snapshot_modules(runtime.sink), lambda: True).wait()
        state = Path(state_dir)
        state.mkdir(parents=True, exist_ok=True)
        (state / READY).touch()
        store = FileCheckpointStore(state, runtime.name)
        SplitEnumerator(runtime, store, spark, PipelineListener()).run(exit_when_caught_up=True)
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
