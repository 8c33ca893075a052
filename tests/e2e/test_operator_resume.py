"""Resuming with the real driver: a table added to a running pipeline (or one named in a resnapshot)
is snapshotted alone while the others keep their checkpoint, and a driver of a superseded epoch
cannot write the status."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from operator_harness import Pipelines, RunningOperator, create_driver_account
from operator_realdriver import (
    checkpoint_of,
    create_table,
    driver_log,
    epoch_of,
    process_env,
    real_operator,  # noqa: F401 - the real_operator fixture
    real_pipeline,
    replica_equals,
    table_rows,
    wait_caught_up,
)

from harness.mariadb import unique_name
from sparkcdc.controller.driver_main import EXIT_FENCED
from sparkcdc.core.tables import TableId
from sparkcdc.testing.kube import ControlPlane, wait_until
from sparkcdc.testing.mariadb import MariaDBServer
from sparkcdc.testing.noderunner import NodeRunner

ORDERS, ITEMS = 300, 120


@pytest.fixture
def shop(mariadb: MariaDBServer) -> Iterator[str]:
    db = unique_name("resume")
    mariadb.execute(f"CREATE DATABASE `{db}`")
    create_table(mariadb, db, "orders", ORDERS)
    create_table(mariadb, db, "items", ITEMS)
    try:
        yield db
    finally:
        mariadb.execute(f"DROP DATABASE IF EXISTS `{db}`")
        mariadb.execute(f"DROP DATABASE IF EXISTS `{db}_replica`")


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
    create_driver_account(control_plane, core, namespace, str(mariadb.cdc_password))
    pipelines = Pipelines(control_plane, namespace)
    pipelines.create(real_pipeline("grow", mariadb, shop, ["orders"]))
    wait_streaming(real_operator, pipelines, "grow", 1, tables=1)
    wait_until(lambda: replica_equals(mariadb, shop, "orders"), timeout=60, what="orders replicated")
    # A row only the replica has: a new snapshot of orders would delete it (rule 3), streaming never.
    mariadb.execute(f"INSERT INTO `{shop}_replica`.orders VALUES (-1, 'canary', 0)")
    before = checkpoint_of(control_plane, core, pipelines, "grow")
    assert before is not None
    orders, items = TableId(shop, "orders"), TableId(shop, "items")
    watermark = before.max_watermark(orders)
    mariadb.execute(f"INSERT INTO `{shop}`.items VALUES (1000, 'before the roll', 1)")
    mariadb.execute(f"UPDATE `{shop}`.orders SET name = 'changed while rolling' WHERE id <= 10")

    pipelines.patch("grow", {"spec": {"source": {"tables": [f"{shop}.orders", f"{shop}.items"]}}})
    wait_streaming(real_operator, pipelines, "grow", 2, tables=2)
    mariadb.execute(f"UPDATE `{shop}`.items SET price = 7 WHERE id <= 5")
    mariadb.execute(f"DELETE FROM `{shop}`.orders WHERE id BETWEEN 20 AND 29")
    wait_caught_up(real_operator, control_plane, core, pipelines, "grow", mariadb)

    assert replica_equals(mariadb, shop, "items")
    replica = table_rows(mariadb, f"{shop}_replica", "orders")
    assert replica[0][:2] == (-1, "canary"), "orders was snapshotted again"
    assert replica[1:] == table_rows(mariadb, shop, "orders")
    after = checkpoint_of(control_plane, core, pipelines, "grow")
    assert after is not None and after.snapshot_done
    assert after.max_watermark(orders) == watermark  # orders kept its snapshot state
    assert items in after.plans and after.finished[items]
    log = driver_log(node_runner, namespace, "grow", 2)
    assert f"planning splits of {items}" in log and f"planning splits of {orders}" not in log
    progress = pipelines.status("grow")["progress"]
    assert progress["rowsSnapshotted"] == ORDERS + ITEMS + 1
    mariadb.execute(f"DELETE FROM `{shop}_replica`.orders WHERE id = -1")
    assert replica_equals(mariadb, shop, "orders")

    # spec.resnapshotNonce with resnapshotTables: orders alone is snapshotted again (its canary
    # goes), items keeps its checkpoint (its canary stays) and streams on.
    mariadb.execute(f"INSERT INTO `{shop}_replica`.orders VALUES (-2, 'canary', 0)")
    mariadb.execute(f"INSERT INTO `{shop}_replica`.items VALUES (-3, 'canary', 0)")
    pipelines.patch("grow", {"spec": {"resnapshotNonce": "r1", "resnapshotTables": [f"{shop}.orders"]}})
    wait_streaming(real_operator, pipelines, "grow", 3, tables=2)
    mariadb.execute(f"UPDATE `{shop}`.items SET price = 8 WHERE id <= 3")
    wait_caught_up(real_operator, control_plane, core, pipelines, "grow", mariadb)
    assert replica_equals(mariadb, shop, "orders"), "orders was not snapshotted again"
    replica_items = table_rows(mariadb, f"{shop}_replica", "items")
    assert replica_items[0][:2] == (-3, "canary") and replica_items[1:] == table_rows(mariadb, shop, "items")
    log = driver_log(node_runner, namespace, "grow", 3)
    assert f"planning splits of {orders}" in log and f"planning splits of {items}" not in log


def test_a_driver_of_a_superseded_epoch_cannot_write_status(
    real_operator: RunningOperator, control_plane: ControlPlane, core: Any, namespace: str,  # noqa: F811
    mariadb: MariaDBServer, shop: str, node_runner: NodeRunner, tmp_path: Path,
) -> None:  # fmt: skip
    """The driver of epoch 1 runs again after epoch 2 took over (a paused process, a partitioned
    node), with credentials that outlive its pod (the pod-bound token would be refused anyway):
    its first status write is refused, it exits with the fenced code, epoch 2 carries on."""
    create_driver_account(control_plane, core, namespace, str(mariadb.cdc_password))
    pipelines = Pipelines(control_plane, namespace)
    pipelines.create(real_pipeline("stale", mariadb, shop, ["orders"]))
    wait_streaming(real_operator, pipelines, "stale", 1, tables=1)
    first = node_runner.process(namespace, "stale-driver-1")
    assert first is not None
    env = process_env(first.pid)
    core.delete_namespaced_pod("stale-driver-1", namespace, grace_period_seconds=0)
    wait_streaming(real_operator, pipelines, "stale", 2, tables=1)

    sa_dir = tmp_path / "serviceaccount"
    sa_dir.mkdir()
    request = {"spec": {"expirationSeconds": 3600}}
    token = core.create_namespaced_service_account_token("sparkcdc-driver", namespace, request).status.token
    (sa_dir / "token").write_text(token)
    (sa_dir / "ca.crt").write_bytes((control_plane.pki / "ca.crt").read_bytes())
    (sa_dir / "namespace").write_text(namespace)
    message = tmp_path / "termination-log"
    env.update({
        "SPARKCDC_SERVICEACCOUNT_DIR": str(sa_dir), "SPARKCDC_TERMINATION_MESSAGE_PATH": str(message),
        "SPARKCDC_DRIVER_METRICS_PORT": "0",
    })  # fmt: skip
    assert env["SPARKCDC_EPOCH"] == "1"
    with (tmp_path / "zombie.log").open("wb") as out:
        zombie = subprocess.Popen(
            [sys.executable, "-m", "sparkcdc", "driver"], env=env, stdout=out, stderr=subprocess.STDOUT
        )
        try:
            code = zombie.wait(timeout=240)
        finally:
            zombie.kill()
    log = (tmp_path / "zombie.log").read_text(errors="replace")
    assert code == EXIT_FENCED, log[-3000:]
    assert "now driven by epoch 2; this driver (epoch 1) stops without writing" in message.read_text()

    # Epoch 2 was not disturbed: still its driver, still streaming into an exact replica.
    assert epoch_of(pipelines, "stale") == 2
    assert node_runner.process(namespace, "stale-driver-2") is not None
    mariadb.execute(f"UPDATE `{shop}`.orders SET price = 3 WHERE id > 250")
    wait_caught_up(real_operator, control_plane, core, pipelines, "stale", mariadb)
    assert replica_equals(mariadb, shop, "orders")
