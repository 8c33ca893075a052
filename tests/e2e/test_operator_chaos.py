"""The mission's promise, end to end: a pipeline run by the operator with the real driver survives
its driver being killed again and again — in the snapshot, at the handoff to the binlog and while
streaming — under concurrent writes, and the replica ends up equal to the source row for row.

Each kill is one a cluster produces: the pod deleted at once, the pod deleted with a grace period
(SIGTERM: the driver flushes its checkpoint and exits), or every process of the driver's container
SIGKILLed at once (the Spark JVM and the PySpark daemon included), as a runtime's OOM kill does.
Every time the operator starts a new epoch and the new driver resumes from the checkpoint in the
status. Set ``SPARKCDC_CHAOS_SEED`` to replay a run.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Iterator
from typing import Any

import pytest
from operator_harness import Pipelines, RunningOperator, create_driver_account
from operator_realdriver import (
    checkpoint_of,
    driver_log,
    epoch_of,
    metric,
    real_operator,  # noqa: F401 - the real_operator fixture
    real_pipeline,
    replica_equals,
    scrape,
    table_rows,
    wait_caught_up,
)

from harness.source_tables import Writer, source_database
from sparkcdc.testing.kube import ControlPlane, wait_until
from sparkcdc.testing.mariadb import MariaDBServer
from sparkcdc.testing.noderunner import NodeRunner

ROWS = 1000  # 20 splits of 50 (10 waves of 2), more as the writer inserts
PLAN = ["snapshot"] * 3 + ["handoff-end", "handoff-start"] + ["streaming"] * 5
HOW = ("delete-now", "delete-graceful", "sigkill")
STREAMING = "streaming the binlog from"
SNAPSHOT_DONE = "snapshot complete at binlog position"
# How long a driver may take to start or to reach a point: its JVM starts beside the other lanes
# of `make test` on 2 cores (a first wave took 225 s there once).
WAIT = 600
WAVE_DONE = "snapshot splits committed"


@pytest.fixture
def shop(mariadb: MariaDBServer) -> Iterator[str]:
    with source_database(mariadb, "chaos", {"items": ROWS}) as db:
        yield db


class Chaos:
    def __init__(
        self, op: RunningOperator, core: Any, pipelines: Pipelines, runner: NodeRunner, rng: random.Random
    ) -> None:
        self.op, self.core, self.pipelines, self.runner, self.rng = op, core, pipelines, runner, rng
        self.ns, self.name = pipelines.namespace, "chaos"
        self.snapshot_done = False

    def log(self, epoch: int) -> str:
        text = driver_log(self.runner, self.ns, self.name, epoch)
        self.snapshot_done = self.snapshot_done or SNAPSHOT_DONE in text
        return text

    def running_epoch(self, after: int) -> int:
        """Wait for the driver of an epoch after ``after`` to run; its epoch."""

        def running() -> int:
            self.op.assert_alive()
            status = self.pipelines.status(self.name)
            assert status.get("phase") != "Failed", status
            epoch = epoch_of(self.pipelines, self.name)
            pod = f"{self.name}-driver-{epoch}"
            live = epoch > after and self.runner.process(self.ns, pod) is not None
            return epoch if live else 0

        epoch: int = wait_until(running, timeout=WAIT, every=0.1, what=f"a driver after epoch {after}")
        return epoch

    def trigger(self, point: str, epoch: int) -> str:
        """Wait for ``point`` in the driver of ``epoch`` (its log); where the kill lands."""
        marks = {
            "snapshot": (WAVE_DONE, SNAPSHOT_DONE, STREAMING),  # a wave of this driver committed
            "handoff-end": (SNAPSHOT_DONE, STREAMING),
            "handoff-start": (STREAMING,),
            "streaming": (STREAMING,),
        }[point]
        try:
            wait_until(
                lambda: any(m in self.log(epoch) for m in marks), timeout=WAIT, every=0.02,
                what=f"{point} of epoch {epoch}",
            )  # fmt: skip
        except TimeoutError as err:
            raise AssertionError(f"{err}; the driver's log ends:\n{self.log(epoch)[-4000:]}") from None
        if point == "snapshot":
            time.sleep(self.rng.uniform(0, 0.3))
        elif point == "streaming":
            time.sleep(self.rng.uniform(0.3, 2.0))
        text = self.log(epoch)
        if not self.snapshot_done and STREAMING not in text:
            return "snapshot"
        return "streaming" if point == "streaming" else "handoff"

    def kill(self, epoch: int, how: str) -> None:
        pod = f"{self.name}-driver-{epoch}"
        if how == "sigkill":
            running = self.runner.process(self.ns, pod)
            assert running, f"{pod} is not running; its log:\n{self.log(epoch)[-3000:]}"
            self.runner.kill(self.ns, pod)
        else:
            grace = 0 if how == "delete-now" else 5
            self.core.delete_namespaced_pod(pod, self.ns, grace_period_seconds=grace)


@pytest.mark.timeout(1800)  # eleven drivers start one after another (see WAIT)
def test_replica_equals_source_after_kills_at_random_points(
    real_operator: RunningOperator, control_plane: ControlPlane, core: Any, namespace: str,  # noqa: F811
    mariadb: MariaDBServer, shop: str, node_runner: NodeRunner,
) -> None:  # fmt: skip
    seed = int(os.environ.get("SPARKCDC_CHAOS_SEED") or random.randrange(1 << 30))
    print(f"SPARKCDC_CHAOS_SEED={seed}")
    rng = random.Random(seed)
    create_driver_account(control_plane, core, namespace, str(mariadb.cdc_password))
    pipelines = Pipelines(control_plane, namespace)
    chaos = Chaos(real_operator, core, pipelines, node_runner, rng)
    writer = Writer(mariadb, shop, "items", ROWS, seed)
    writer.start()
    started = time.monotonic()
    snapshot = {"chunkSize": 50, "parallelism": 2, "splitsPerTask": 1}  # waves of two splits
    pipelines.create(
        real_pipeline("chaos", mariadb, shop, ["items"], real_operator.driver_image, snapshot=snapshot)
    )
    landed: list[tuple[int, str, str, str]] = []
    ways = [HOW[i % len(HOW)] for i in range(len(PLAN))]
    rng.shuffle(ways)  # every way of killing, in a random order
    epoch = 0
    try:
        for point, how in zip(PLAN, ways, strict=True):
            epoch = chaos.running_epoch(after=epoch)
            where = chaos.trigger(point, epoch)
            chaos.kill(epoch, how)
            landed.append((epoch, point, where, how))
            print(f"{time.monotonic() - started:6.1f}s killed epoch {epoch} ({how}) in the {where}")
        final = chaos.running_epoch(after=epoch)
    finally:
        writer.stop()
    print(f"writer: {writer.ops}")
    offset = wait_caught_up(real_operator, control_plane, core, pipelines, "chaos", mariadb, timeout=180)
    print(f"{time.monotonic() - started:6.1f}s caught up at {offset}")

    # Every kill started a new epoch, and the last driver is the one that caught up.
    assert final == len(PLAN) + 1 == epoch_of(pipelines, "chaos")
    wheres = [w for _, _, w, _ in landed]
    assert len(landed) >= 10 and wheres.count("snapshot") >= 3 and wheres.count("handoff") >= 1, landed
    assert wheres.count("streaming") >= 4, landed
    assert {h for *_, h in landed} == set(HOW), landed
    assert writer.ops["rekey"] and writer.ops["delete"] and writer.ops["txn"]
    source = table_rows(mariadb, shop, "items")
    assert len(source) > ROWS // 2
    assert replica_equals(mariadb, shop, "items"), "the replica differs from the source"

    checkpoint = checkpoint_of(control_plane, core, pipelines, "chaos")
    assert checkpoint is not None and checkpoint.snapshot_done
    status = pipelines.status("chaos")
    assert status["phase"] == "Streaming"
    progress = status["progress"]
    # (Once streaming is past a table's watermarks, its splits collapse into one in the checkpoint.)
    assert progress["splitsFinished"] == progress["splitsTotal"] >= 1
    assert progress["rowsSnapshotted"] >= ROWS // 2 and progress["eventsApplied"] > 0
    assert progress["binlogOffset"] and progress["tables"] == 1 and progress["lagSeconds"] >= 0

    # The last driver's metrics.
    text = scrape(real_operator.driver_metrics_port)
    assert metric(text, "sparkcdc_driver_epoch") == final
    assert (metric(text, "sparkcdc_driver_binlog_events_total") or 0) > 0
    assert (metric(text, "sparkcdc_driver_sink_commit_seconds_count") or 0) > 0
    assert metric(text, "sparkcdc_driver_emit_event_time_lag_seconds") is not None
    assert metric(text, "sparkcdc_driver_snapshot_splits", table=f"{shop}.items", state="pending") == 0
    print(f"{time.monotonic() - started:6.1f}s done; kills: {landed}")
