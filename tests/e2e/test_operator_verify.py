"""``spec.verifyNonce`` on the real control plane: the streaming driver verifies its replica against
the real MariaDB source without being replaced, finds a row altered in the sink in the right
chunk, and repairs it with ``spec.verify.repair``; without a running driver the condition says why."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from operator_harness import Pipelines, RunningOperator, condition, create_driver_account
from operator_realdriver import (
    driver_log,
    epoch_of,
    real_operator,  # noqa: F401 - the real_operator fixture
    real_pipeline,
    replica_equals,
    wait_caught_up,
)

from harness.source_tables import source_database
from sparkcdc.testing.kube import ControlPlane, wait_until
from sparkcdc.testing.mariadb import MariaDBServer
from sparkcdc.testing.noderunner import NodeRunner

ROWS, CHUNK = 200, 50
Obj = dict[str, Any]


@pytest.fixture
def shop(mariadb: MariaDBServer) -> Iterator[str]:
    with source_database(mariadb, "verify", {"items": ROWS}) as db:
        yield db


def wait_streaming(op: RunningOperator, pipelines: Pipelines, name: str) -> None:
    def streaming() -> bool:
        op.assert_alive()
        progress = pipelines.status(name).get("progress") or {}
        done = progress.get("splitsFinished") == progress.get("splitsTotal")
        return done and bool(progress.get("binlogOffset"))

    wait_until(streaming, timeout=180, every=0.2, what="the pipeline streaming")


def verify(
    op: RunningOperator, pipelines: Pipelines, runner: NodeRunner, name: str, nonce: str, **verify_spec: Any
) -> Obj:
    """Set a new verifyNonce (and spec.verify); wait for the driver's answer to it."""
    spec: Obj = {"verifyNonce": nonce}
    if verify_spec:
        spec["verify"] = verify_spec
    pipelines.patch(name, {"spec": spec})
    return wait_answered(op, pipelines, runner, name, nonce)


def wait_answered(
    op: RunningOperator, pipelines: Pipelines, runner: NodeRunner, name: str, nonce: str
) -> Obj:
    def answered() -> Obj:
        op.assert_alive()
        status = pipelines.status(name)
        done = status.get("verification") or {}
        return status if done.get("nonce") == nonce and done.get("finishedAt") else {}

    try:
        status: Obj = wait_until(answered, timeout=180, every=0.2, what=f"verifyNonce {nonce} answered")
    except TimeoutError:
        log = driver_log(runner, pipelines.namespace, name, epoch_of(pipelines, name))
        raise AssertionError(f"{nonce} not answered; driver log tail:\n{log[-4000:]}") from None
    return status


def events(core: Any, namespace: str, name: str) -> list[Obj]:
    items: list[Obj] = json.loads(core.list_namespaced_event(namespace, _preload_content=False).data)["items"]
    return [e for e in items if e["involvedObject"]["name"] == name]


def in_range(key: int, text: str) -> bool:
    """Whether ``key`` lies in a status range such as ``[101, 151)``, ``[-∞, 51)`` or ``[151, +∞)``."""
    match = re.fullmatch(r"\[(-∞|-?\d+), (\+∞|-?\d+)\)", text)
    assert match is not None, text
    start, end = match.groups()
    return (start == "-∞" or int(start) <= key) and (end == "+∞" or key < int(end))


def test_verify_nonce_checks_finds_and_repairs_a_streaming_replica(
    real_operator: RunningOperator, control_plane: ControlPlane, core: Any, namespace: str,  # noqa: F811
    mariadb: MariaDBServer, shop: str, node_runner: NodeRunner,
) -> None:  # fmt: skip
    password = str(mariadb.cdc_password)
    create_driver_account(control_plane, core, namespace, password)
    pipelines = Pipelines(control_plane, namespace)
    body = real_pipeline(
        "ver", mariadb, shop, ["items"], real_operator.driver_image, verify={"waitSeconds": 60}
    )
    body["spec"]["snapshot"]["chunkSize"] = CHUNK
    body["spec"]["verifyNonce"] = "v0"  # from the start: answered once the snapshot is done
    pipelines.create(body)
    status = wait_answered(real_operator, pipelines, node_runner, "ver", "v0")
    assert condition(status, "Verified")["reason"] == "Matched", status
    assert status["verification"]["rowsChecked"] == ROWS
    wait_streaming(real_operator, pipelines, "ver")
    wait_until(lambda: replica_equals(mariadb, shop, "items"), timeout=60, what="items replicated")
    pod = f"ver-driver-{epoch_of(pipelines, 'ver')}"

    # 1. A replica that matches: Verified True with counts.
    status = verify(real_operator, pipelines, node_runner, "ver", "v1")
    done, verified = status["verification"], condition(status, "Verified")
    assert (verified["status"], verified["reason"]) == ("True", "Matched"), verified
    assert done["tables"] == 1 and done["rowsChecked"] == ROWS and done["chunksChecked"] >= ROWS // CHUNK
    assert done["chunksDiffering"] == done["chunksUnsettled"] == done["chunksRepaired"] == 0
    assert verified["observedGeneration"] == (pipelines.get("ver") or {})["metadata"]["generation"]
    assert condition(status, "Ready")["status"] == "True"  # the operator's conditions are kept
    # Streaming went on; the same driver carries on.
    mariadb.execute(f"INSERT INTO `{shop}`.items VALUES (1000, 'after v1', 2.5)")
    wait_caught_up(real_operator, control_plane, core, pipelines, "ver", mariadb)
    assert replica_equals(mariadb, shop, "items")

    # 2. One column of one row altered in the sink: found in its chunk.
    mariadb.execute(f"UPDATE `{shop}_replica`.items SET name = 'tampered' WHERE id = 120")
    status = verify(real_operator, pipelines, node_runner, "ver", "v2")
    done, verified = status["verification"], condition(status, "Verified")
    assert (verified["status"], verified["reason"]) == ("False", "Differs"), verified
    assert done["chunksDiffering"] == 1 and len(done["chunks"]) == 1
    chunk = done["chunks"][0]
    assert chunk["table"] == f"{shop}.items" and chunk["state"] == "differ" and in_range(120, chunk["range"])
    assert chunk["sourceRows"] == chunk["sinkRows"] and chunk["differingRows"] == 1
    assert f"{shop}.items chunk {chunk['chunk']} {chunk['range']}" in verified["message"]

    # 3. With repair: the chunk is re-snapshotted while streaming goes on, then matches.
    status = verify(real_operator, pipelines, node_runner, "ver", "v3", waitSeconds=60, repair=True)
    done, verified = status["verification"], condition(status, "Verified")
    assert (verified["status"], verified["reason"]) == ("True", "Repaired"), verified
    assert done["chunksRepaired"] == 1 and done["chunks"][0]["state"] == "repaired" and done["repair"]
    assert replica_equals(mariadb, shop, "items")

    # 4. A run that cannot run (no such table among the captured ones) fails and says why.
    status = verify(real_operator, pipelines, node_runner, "ver", "v4", tables=["nodb.none"], repair=False)
    verified = condition(status, "Verified")
    assert (verified["status"], verified["reason"]) == ("False", "Failed"), verified
    assert "nodb.none" in verified["message"] and "nodb.none" in status["verification"]["error"]

    # Another spec field changes (without replacing the driver): the answer still stands, and the
    # operator carries the condition to the new generation, so it never reads as stale.
    generation = pipelines.patch("ver", {"spec": {"restartPolicy": {"maxRestarts": 50}}})["metadata"][
        "generation"
    ]

    def carried() -> Obj:
        verified = condition(pipelines.status("ver"), "Verified")
        return verified if verified.get("observedGeneration") == generation else {}

    assert wait_until(carried, timeout=60, what="Verified at the new generation")["reason"] == "Failed"
    status = pipelines.status("ver")

    # None of it replaced the driver; each run ended with an Event; no secret anywhere.
    assert status["driver"]["pod"] == pod and not status["driver"].get("restarts")
    reasons = [e["reason"] for e in events(core, namespace, "ver")]
    assert {"Verified", "VerificationDiffers", "VerificationFailed"} <= set(reasons), reasons
    text = json.dumps(pipelines.get("ver")) + json.dumps(events(core, namespace, "ver"))
    assert password not in text


def test_a_request_without_a_running_driver_says_why(
    real_operator: RunningOperator, control_plane: ControlPlane, core: Any, namespace: str,  # noqa: F811
    mariadb: MariaDBServer, shop: str,
) -> None:  # fmt: skip
    create_driver_account(control_plane, core, namespace, str(mariadb.cdc_password))
    pipelines = Pipelines(control_plane, namespace)
    pipelines.create(
        real_pipeline("idle", mariadb, shop, ["items"], real_operator.driver_image, suspend=True)
    )
    wait_until(lambda: pipelines.status("idle").get("phase") == "Suspended", timeout=60, what="Suspended")
    pipelines.patch("idle", {"spec": {"verifyNonce": "v1"}})

    def said() -> Obj:
        real_operator.assert_alive()
        return condition(pipelines.status("idle"), "Verified")

    verified = wait_until(said, timeout=60, what="a Verified condition")
    assert (verified["status"], verified["reason"]) == ("Unknown", "DriverNotRunning"), verified
    assert "suspended" in verified["message"] and "'v1'" in verified["message"]
    assert "verification" not in pipelines.status("idle")  # unanswered: a resumed driver runs it


def test_a_snapshot_only_driver_answers_before_it_exits(
    real_operator: RunningOperator, control_plane: ControlPlane, core: Any, namespace: str,  # noqa: F811
    mariadb: MariaDBServer, shop: str, node_runner: NodeRunner,
) -> None:  # fmt: skip
    create_driver_account(control_plane, core, namespace, str(mariadb.cdc_password))
    pipelines = Pipelines(control_plane, namespace)
    body = real_pipeline(
        "once", mariadb, shop, ["items"], real_operator.driver_image,
        startup={"mode": "snapshot-only"}, verifyNonce="v1",
    )  # fmt: skip
    pipelines.create(body)
    status = wait_answered(real_operator, pipelines, node_runner, "once", "v1")
    verified = condition(status, "Verified")
    assert (verified["status"], verified["reason"]) == ("True", "Matched"), verified
    assert status["verification"]["rowsChecked"] == ROWS

    def completed() -> Obj:
        real_operator.assert_alive()
        current = pipelines.status("once")
        return current if current.get("phase") == "Completed" else {}

    status = wait_until(completed, timeout=120, what="phase Completed")
    assert condition(status, "Verified")["reason"] == "Matched"  # answered: nothing to say about it
    # A request after the driver exited: nobody can answer it, and the condition says so.
    pipelines.patch("once", {"spec": {"verifyNonce": "v2"}})

    def told() -> Obj:
        verified = condition(pipelines.status("once"), "Verified")
        return verified if verified.get("reason") == "DriverNotRunning" else {}

    verified = wait_until(told, timeout=60, what="Verified DriverNotRunning")
    assert (
        verified["status"] == "False" and "Completed" in verified["message"] and "'v2'" in verified["message"]
    )
