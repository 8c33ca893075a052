"""Where a snapshot wave runs: as Spark tasks, or on threads of the driver while Spark is not up.

Spark has a fixed cost before its first task reads a row: a local JVM takes 1.6–2 CPU s to start
and its Python workers about one more; on Kubernetes executor pods can take minutes to be
scheduled. On a small machine a snapshot of a million rows costs less than that (~3 CPU s). So the
driver reads the first waves itself, with the same ``run_task`` on one thread per task (each task
its own source connection, sink and server id, as on an executor), and starts Spark only once its
own rate says the splits left would keep it busy for longer than ``SPARK_WORTH_SECONDS``
(``core/waves.py``). Waves go to Spark as soon as it and its workers are up; until then the driver
goes on reading, so executor start-up costs no snapshot time. A session started before the
snapshot (the operator's driver pod, ``make demo``) takes the waves once its workers are up. A
sink that writes with Spark from the driver (Delta) has its session started at once for its own
writes, yet its waves run in the driver as above, appended by delta-rs
(sinks/delta/arrow_append.py) — under a local master all of them, since Spark would only write
them slower — unless its tables are on an object store, which only Spark writes: then every wave
is a Spark job.

``spec.snapshot.readInDriver`` (the ``mode``): ``auto`` (the default, as above), ``never`` (every
wave on Spark, which starts at once), ``always`` (every wave in the driver; Spark is not started).
``EngineOptions.snapshot_in_driver`` overrides it (benchmarks compare the modes with it), and
``EngineOptions.spark_worth_seconds`` replaces ``SPARK_WORTH_SECONDS``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from typing import Any

from sparkcdc.core.waves import SPARK_WORTH_SECONDS, spark_worth_starting
from sparkcdc.engine.listener import PipelineListener
from sparkcdc.options import InDriver
from sparkcdc.sinks.base import SinkConfig, writes_in_driver, writes_splits
from sparkcdc.spark.session import takes_jobs, warm_up
from sparkcdc.spark.snapshot import SnapshotTask, SplitSummary, WaveContext, run_wave, run_wave_in_threads

__all__ = ["WaveRunner", "snapshot_modules"]

log = logging.getLogger(__name__)


def snapshot_modules(sink: SinkConfig) -> list[str]:
    """The modules a snapshot task imports: what warming Spark's Python workers imports."""
    return ["sparkcdc.spark.snapshot", type(sink).__module__]


class WaveRunner:
    """Runs each wave on Spark once it is up, in the driver before (see the module's doc)."""

    def __init__(
        self,
        spark: Any,
        sink: SinkConfig,
        workers: int,
        listener: PipelineListener,
        *,
        threads: int = 0,
        mode: InDriver = "auto",
        worth_seconds: float = SPARK_WORTH_SECONDS,
    ) -> None:
        """``workers``: Spark's Python workers to warm up; ``threads``: tasks the driver runs at
        once (default ``workers``). On Kubernetes that is the driver pod's cores: a task holds up
        to two splits in memory, sized for an executor, and the driver pod is usually smaller."""
        self._spark = spark
        self._threads = threads or workers
        self._sink = sink
        self._workers = workers
        self._listener = listener
        self._mode: InDriver = mode if writes_splits(sink) else "never"
        self._warm: threading.Event | None = None  # set once Spark's start-up thread is done
        self._on_spark = threading.Event()  # a wave was submitted to Spark
        self._driver_splits = 0
        self._driver_seconds = 0.0
        self._worth_seconds = worth_seconds

    def begin(self) -> None:
        """Called before planning: start Spark now unless waves may run in the driver, so the
        JVM boots while the splits are planned and the sink prepared. A session the caller
        started already (not a ``LazySession`` waiting for first use) is used once it is warm."""
        # A Delta sink's session is up for its own writes, not because the waves need it.
        already_started = getattr(self._spark, "started", True) and not writes_in_driver(self._sink)
        if self._mode == "never" or (self._mode == "auto" and already_started):
            self._start_spark("")

    def run(
        self, context: WaveContext, tasks: Sequence[SnapshotTask], remaining_splits: int
    ) -> list[SplitSummary]:
        """Run one wave; ``remaining_splits`` are the splits still unfinished after it."""
        if self.spark_ready():
            if not self._on_spark.is_set() and self._driver_splits:
                self._listener.message(
                    f"Spark is up after {self._driver_splits} splits read in the driver: "
                    "the next waves run as Spark tasks"
                )
            self._on_spark.set()
            return run_wave(self._spark, context, tasks)
        log.debug("wave of %d tasks in the driver (Spark not started or not up yet)", len(tasks))
        began = time.monotonic()
        summaries = run_wave_in_threads(context, tasks, self._threads)
        self._driver_seconds += time.monotonic() - began
        self._driver_splits += len(summaries)
        if (
            self._mode == "auto"
            and self._warm is None
            and not self._driver_writes_faster()
            and spark_worth_starting(
                remaining_splits, self._driver_splits, self._driver_seconds, self._worth_seconds
            )
        ):
            self._start_spark(
                f"{remaining_splits} splits left would take the driver over "
                f"{remaining_splits * self._driver_seconds / self._driver_splits:.0f} s alone: starting Spark"
            )
        return summaries

    def _driver_writes_faster(self) -> bool:
        """A sink that writes with Spark from the driver (Delta) under a local master: Spark's
        tasks would share the driver's cores and their rows would be written by Spark jobs, many
        times slower than the driver's own appends (docs/performance.md, Delta sink); the driver
        keeps the waves."""
        if not writes_in_driver(self._sink):
            return False
        master = getattr(self._spark, "master", None)  # a LazySession knows it before it starts
        if master is None:
            if not getattr(self._spark, "started", True):
                return False
            master = self._spark.sparkContext.master
        return str(master).startswith("local")

    def spark_ready(self) -> bool:
        """Whether the next wave goes to Spark."""
        if self._mode == "never":
            return True  # the wave waits for Spark if it is still starting
        return self._mode == "auto" and takes_jobs(self._spark, self._warm)

    def _start_spark(self, reason: str) -> None:
        if reason:
            self._listener.message(reason)
        modules = snapshot_modules(self._sink)
        self._warm = warm_up(self._spark, self._workers, modules, lambda: not self._on_spark.is_set())
