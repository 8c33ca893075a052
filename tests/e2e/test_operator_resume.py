"""Resuming with the real driver: a table added to a running pipeline (or one named in a resnapshot)
is snapshotted alone by the same driver while the others stream on, and a driver of a superseded
epoch can write neither the status nor the sink."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from operator_harness import Pipelines, RunningOperator, create_driver_account, pods_of
from operator_realdriver import (
    checkpoint_of,
    driver_log,
    epoch_of,
    real_operator,  # noqa: F401 - the real_operator fixture
    real_pipeline,
    replica_equals,
    table_rows,
    wait_caught_up,
)
from zombie_driver import ZombieDriver

from harness.source_tables import source_database
from sparkcdc.core.checkpoint import Phase
from sparkcdc.core.tables import TableId
from sparkcdc.driver.main import EXIT_FENCED
from sparkcdc.kube.client import KubeClient
from sparkcdc.kube.status_store import read_checkpoint
from sparkcdc.testing.kube import ControlPlane, wait_until
from sparkcdc.testing.mariadb import MariaDBServer
from sparkcdc.testing.noderunner import NodeRunner

ORDERS, ITEMS = 300, 120


@pytest.fixture
def shop(mariadb: MariaDBServer) -> Iterator[str]:
    with source_database(mariadb, "resume", {"orders": ORDERS, "items": ITEMS}) as db:
        yield db


def wait_streaming(op: RunningOperator, pipelines: Pipelines, name: str, epoch: int, tables: int) -> None:
    """The driver of ``epoch`` finished its snapshot and committed a binlog batch."""

    def streaming() -> bool:
        op.assert_alive()
        status = pipelines.status(name)
        assert status.get("phase") != "Failed", status
        progress = status.get("progress") or {}
        return (
            epoch_of(pipelines, name) == epoch
            and bool(progress.get("binlogOffset"))
            and progress.get("tables") == tables
            and progress.get("splitsFinished") == progress.get("splitsTotal")
        )

    wait_until(streaming, timeout=180, every=0.2, what=f"epoch {epoch} streaming {tables} table(s)")


def test_an_added_table_or_a_resnapshot_snapshots_only_that_table(
    real_operator: RunningOperator, control_plane: ControlPlane, core: Any, namespace: str,  # noqa: F811
    mariadb: MariaDBServer, shop: str, node_runner: NodeRunner,
) -> None:  # fmt: skip
    """The driver follows both edits itself (driver/spec_watch.py): the same pod throughout."""
    create_driver_account(control_plane, core, namespace, str(mariadb.cdc_password))
    pipelines = Pipelines(control_plane, namespace)
    pipelines.create(real_pipeline("grow", mariadb, shop, ["orders"], real_operator.driver_image))
    wait_streaming(real_operator, pipelines, "grow", 1, tables=1)
    wait_until(lambda: replica_equals(mariadb, shop, "orders"), timeout=60, what="orders replicated")
    uid = driver_uid(core, namespace, "grow")
    # A row only the replica has: a new snapshot of orders would delete it (rule 3), streaming never.
    mariadb.execute(f"INSERT INTO `{shop}_replica`.orders VALUES (-1, 'canary', 0)")
    before = checkpoint_of(control_plane, core, pipelines, "grow")
    assert before is not None
    orders, items = TableId(shop, "orders"), TableId(shop, "items")
    watermark = before.max_watermark(orders)
    mariadb.execute(f"INSERT INTO `{shop}`.items VALUES (1000, 'before the edit', 1)")
    mariadb.execute(f"UPDATE `{shop}`.orders SET name = 'changed while adding' WHERE id <= 10")

    pipelines.patch("grow", {"spec": {"source": {"tables": [f"{shop}.orders", f"{shop}.items"]}}})
    wait_streaming(real_operator, pipelines, "grow", 1, tables=2)
    wait_until(
        lambda: streams(control_plane, core, pipelines, "grow", items), timeout=180, what=f"{items} streaming"
    )
    mariadb.execute(f"UPDATE `{shop}`.items SET price = 7 WHERE id <= 5")
    mariadb.execute(f"DELETE FROM `{shop}`.orders WHERE id BETWEEN 20 AND 29")
    wait_caught_up(real_operator, control_plane, core, pipelines, "grow", mariadb)

    assert driver_uid(core, namespace, "grow") == uid, "the driver pod was replaced"
    assert replica_equals(mariadb, shop, "items")
    replica = table_rows(mariadb, f"{shop}_replica", "orders")
    assert replica[0][:2] == (-1, "canary"), "orders was snapshotted again"
    assert replica[1:] == table_rows(mariadb, shop, "orders")
    after = checkpoint_of(control_plane, core, pipelines, "grow")
    assert after is not None and after.snapshot_done
    assert after.max_watermark(orders) == watermark  # orders kept its snapshot state
    assert items in after.plans and after.finished[items]
    log = driver_log(node_runner, namespace, "grow", 1)
    assert f"{items}: snapshotting it while the other tables stream" in log
    assert f"{orders}: snapshotting" not in log
    mariadb.execute(f"DELETE FROM `{shop}_replica`.orders WHERE id = -1")
    assert replica_equals(mariadb, shop, "orders")

    # spec.resnapshotNonce with resnapshotTables: orders alone is snapshotted again (its canary
    # goes) while items keeps its checkpoint (its canary stays) and streams on meanwhile.
    mariadb.execute(f"INSERT INTO `{shop}_replica`.orders VALUES (-2, 'canary', 0)")
    mariadb.execute(f"INSERT INTO `{shop}_replica`.items VALUES (-3, 'canary', 0)")
    pipelines.patch("grow", {"spec": {"resnapshotNonce": "r1", "resnapshotTables": [f"{shop}.orders"]}})
    mariadb.execute(f"UPDATE `{shop}`.items SET price = 8 WHERE id <= 3")
    wait_until(lambda: replica_equals(mariadb, shop, "orders"), timeout=120, what="orders snapshotted again")
    mariadb.execute(f"UPDATE `{shop}`.items SET price = 9 WHERE id > {ITEMS - 3}")
    wait_caught_up(real_operator, control_plane, core, pipelines, "grow", mariadb)
    assert driver_uid(core, namespace, "grow") == uid, "the driver pod was replaced"
    assert epoch_of(pipelines, "grow") == 1
    assert replica_equals(mariadb, shop, "orders")
    replica_items = table_rows(mariadb, f"{shop}_replica", "items")
    assert replica_items[0][:2] == (-3, "canary") and replica_items[1:] == table_rows(mariadb, shop, "items")
    log = driver_log(node_runner, namespace, "grow", 1)
    assert f"snapshotting {orders} again while streaming" in log and f"snapshotting {items} again" not in log
    # The nonce is recorded with the reset: a restart does not snapshot orders once more.
    obj = pipelines.get("grow") or {}
    assert (read_checkpoint(KubeClient(control_plane.api_client()), obj) or {}).get("resnapshotNonce") == "r1"


def streams(cp: ControlPlane, core: Any, pipelines: Pipelines, name: str, table: TableId) -> bool:
    """``table``'s every split is written and it streams (its snapshot beside the stream is over)."""
    checkpoint = checkpoint_of(cp, core, pipelines, name)
    state = checkpoint.tables.get(table) if checkpoint else None
    return state is not None and state.phase is Phase.BINLOG


def driver_uid(core: Any, namespace: str, name: str) -> str:
    """The uid of the pipeline's one live driver pod (a replaced pod has another)."""
    live = [p for p in pods_of(core, namespace, name) if not p["metadata"].get("deletionTimestamp")]
    assert len(live) == 1, [p["metadata"]["name"] for p in live]
    return str(live[0]["metadata"]["uid"])


def test_a_driver_of_a_superseded_epoch_cannot_write_status(
    real_operator: RunningOperator, control_plane: ControlPlane, core: Any, namespace: str,  # noqa: F811
    mariadb: MariaDBServer, shop: str, node_runner: NodeRunner, tmp_path: Path,
) -> None:  # fmt: skip
    """The driver of epoch 1 starts again after epoch 2 took over (a paused process, a partitioned
    node), with credentials that outlive its pod (the pod-bound token would be refused anyway):
    it is refused before it wrote anything (its first status write, or its claim of the sink's
    fence, whichever comes first), it exits with the fenced code, epoch 2 carries on."""
    create_driver_account(control_plane, core, namespace, str(mariadb.cdc_password))
    pipelines = Pipelines(control_plane, namespace)
    pipelines.create(real_pipeline("stale", mariadb, shop, ["orders"], real_operator.driver_image))
    wait_streaming(real_operator, pipelines, "stale", 1, tables=1)
    assert node_runner.process(namespace, "stale-driver-1") is not None
    zombie = ZombieDriver.of(control_plane, core, namespace, "stale-driver-1", tmp_path)
    assert zombie.env["SPARKCDC_EPOCH"] == "1"
    core.delete_namespaced_pod("stale-driver-1", namespace, grace_period_seconds=0)
    wait_streaming(real_operator, pipelines, "stale", 2, tables=1)

    with zombie.running():
        code = zombie.wait(timeout=240)
    assert code == EXIT_FENCED, zombie.log()[-3000:]
    assert "now driven by epoch 2; this driver (epoch 1) stops without writing" in zombie.message()

    # Epoch 2 was not disturbed: still its driver, still streaming into an exact replica.
    assert epoch_of(pipelines, "stale") == 2
    assert node_runner.process(namespace, "stale-driver-2") is not None
    mariadb.execute(f"UPDATE `{shop}`.orders SET price = 3 WHERE id > 250")
    wait_caught_up(real_operator, control_plane, core, pipelines, "stale", mariadb)
    assert replica_equals(mariadb, shop, "orders")


def test_a_stale_drivers_batch_is_refused_inside_its_sink_transaction(
    real_operator: RunningOperator, control_plane: ControlPlane, core: Any, namespace: str,  # noqa: F811
    mariadb: MariaDBServer, shop: str, node_runner: NodeRunner, tmp_path: Path,
) -> None:  # fmt: skip
    """A driver of epoch 1 that is still running, with a binlog batch in hand, when epoch 2 claims
    the sink's fence: its transaction waits for the claim, reads epoch 2 and is refused before it
    wrote anything, and it exits with the fenced code. (Heartbeats are off, so the batch is the
    first thing it does after its pause: neither a status write nor anything else fences it first.)

    The zombie is a real driver container run outside the node runner, so deleting its pod does
    not stop it; a test transaction holding the fence row orders the steps: epoch 2's claim waits
    first, the zombie's batch second, as when the zombie's batch starts during the claim."""
    create_driver_account(control_plane, core, namespace, str(mariadb.cdc_password))
    pipelines = Pipelines(control_plane, namespace)
    binlog = {"batchIntervalMs": 300, "heartbeatIntervalSeconds": 3600}
    body = real_pipeline("zombie", mariadb, shop, ["orders"], real_operator.driver_image, binlog=binlog)
    pipelines.create(body)
    wait_streaming(real_operator, pipelines, "zombie", 1, tables=1)
    assert node_runner.process(namespace, "zombie-driver-1") is not None
    zombie = ZombieDriver.of(control_plane, core, namespace, "zombie-driver-1", tmp_path)
    assert zombie.env["SPARKCDC_EPOCH"] == "1"
    node_runner.pause(namespace, "zombie-driver-1")  # the pod's container pauses; ours runs as epoch 1
    with zombie.running():
        wait_until(lambda: "streaming the binlog from" in zombie.log(), timeout=180, what="zombie streams")
        # A batch only the zombie can apply (the pod's container is paused): once it is in the
        # replica and checkpointed, the zombie is idle, with nothing half-done when it is paused.
        mariadb.execute(f"UPDATE `{shop}`.orders SET name = 'by the zombie' WHERE id = 21")
        row = f"SELECT name FROM `{shop}_replica`.orders WHERE id = 21"
        wait_until(
            lambda: mariadb.execute(row) == [("by the zombie",)], timeout=60, what="the zombie applying"
        )
        wait_caught_up(real_operator, control_plane, core, pipelines, "zombie", mariadb)
        zombie.pause()
        fence_row = mariadb.root_connection(f"{shop}_replica")
        try:
            with fence_row.cursor() as cur:
                cur.execute("BEGIN")
                cur.execute(
                    "SELECT epoch FROM sparkcdc_fence WHERE pipeline = %s FOR UPDATE",
                    (f"{namespace}/zombie",),
                )
                assert cur.fetchall() == ((1,),)
                core.delete_namespaced_pod("zombie-driver-1", namespace, grace_period_seconds=0)
                wait_until(
                    lambda: fence_waiters(mariadb) == 1, timeout=180, what="epoch 2 claiming the fence"
                )
                assert epoch_of(pipelines, "zombie") == 2
                mariadb.execute(f"UPDATE `{shop}`.orders SET name = 'after the claim' WHERE id <= 20")
                zombie.unpause()
                wait_until(lambda: fence_waiters(mariadb) == 2, timeout=60, what="the zombie's batch waiting")
            fence_row.commit()
        finally:
            fence_row.close()
        code = zombie.wait(timeout=120)
    log = zombie.log()
    assert code == EXIT_FENCED, log[-3000:]
    # Its batch waited on the fence row (the second waiter above) and can only read epoch 2 there:
    # the sink refuses it (logged where it happens). Under load a progress write of the zombie may
    # meet the new epoch in the status first while the batch still waits, and the process exits
    # fenced from there; nothing was written either way (test_sink_fence.py proves the refusal
    # inside the transaction on its own).
    in_sink = f"/{shop}_replica refused a write: {namespace}/zombie is now driven by epoch 2"
    in_status = f"CdcPipeline {namespace}/zombie is now driven by epoch 2"
    assert in_sink in log or in_status in log, log[-3000:]
    assert "now driven by epoch 2; this driver (epoch 1) stops without writing" in zombie.message()

    wait_streaming(real_operator, pipelines, "zombie", 2, tables=1)
    mariadb.execute(f"UPDATE `{shop}`.orders SET price = 5 WHERE id > 250")
    wait_caught_up(real_operator, control_plane, core, pipelines, "zombie", mariadb)
    assert replica_equals(mariadb, shop, "orders")


def fence_waiters(mariadb: MariaDBServer) -> int:
    """Transactions waiting for a lock on a sink's fence row."""
    rows = mariadb.execute(
        "SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT'"
        " AND trx_query LIKE %s",
        ("%sparkcdc_fence%",),
    )
    return int(rows[0][0])
