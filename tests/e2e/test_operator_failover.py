"""Source failover through the operator, with the real driver, on real MariaDB GTID replication
(issue 15, docs/operations.md "Failover").

* A pipeline streams from a primary into a JDBC sink under a writer; the GTID replica is
  promoted, the primary killed and the writer continues on the new primary; ``spec.source`` is
  patched to the new primary: the operator rolls the driver (a new epoch), which follows by GTID.
  The sink ends equal to the new primary (nothing lost, nothing doubled) and
  ``status.progress.source`` names the new server. The same when the address the pipeline reads
  moves to the new primary (a forwarder standing in for a VIP or MaxScale; no manifest edit):
  the running driver's reader finds the other server at its reconnect and stops, and its
  successor follows by GTID.
* Pointed at a replica that stopped before the last writes the pipeline has applied, the driver
  refuses: phase Failed with reason ``SourceChanged`` on Ready and Stalled, a Warning Event, both
  servers named, no restart, and nothing written to the sink after the refusal; then
  ``onSourceChange: resnapshot`` starts over on the replica and the sink equals it.

Both servers share the ``mariadb`` fixture's CDC password, so one driver Secret serves source
and sink (the sink databases live on the ``mariadb`` fixture server).
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from operator_harness import Pipelines, RunningOperator, condition, create_driver_account
from operator_realdriver import (
    driver_log,
    epoch_of,
    real_operator,  # noqa: F401 - the real_operator fixture
    real_pipeline,
    table_rows,
    wait_caught_up,
)

from harness.mariadb import unique_name
from harness.source_tables import Writer, create_table
from sparkcdc.testing.kube import ControlPlane, wait_until
from sparkcdc.testing.mariadb import MariaDBServer
from sparkcdc.testing.noderunner import NodeRunner
from sparkcdc.testing.replication import ReplicationPair, caught_up, promote, stop_replication

Obj = dict[str, Any]
ROWS = 300


@pytest.fixture
def pair(mariadb: MariaDBServer, tmp_path: Path) -> Iterator[ReplicationPair]:
    assert mariadb.cdc_password
    created = ReplicationPair(tmp_path / "servers", mariadb.cdc_password, time_zone=mariadb.time_zone)
    try:
        yield created
    finally:
        created.cleanup()


@pytest.fixture
def source_db(pair: ReplicationPair, mariadb: MariaDBServer) -> Iterator[str]:
    """``<db>.items`` on the primary (replicated to the replica); its sink database is dropped after."""
    db = unique_name("failover")
    pair.primary.execute(f"CREATE DATABASE `{db}`")
    create_table(pair.primary, db, "items", ROWS)
    try:
        yield db
    finally:
        mariadb.execute(f"DROP DATABASE IF EXISTS `{db}_replica`")


class Proxy:
    """A TCP forwarder on a loopback port to ``127.0.0.1:target``: an address that can be moved
    to another server (``switch``), breaking the connections made through it, as a VIP or a
    proxy such as MaxScale does at a failover."""

    def __init__(self, target: int) -> None:
        self.target = target
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, name="proxy", daemon=True).start()

    def __enter__(self) -> Proxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self._listener.close()
        self._break()

    def switch(self, target: int) -> None:
        self.target = target
        self._break()

    def _break(self) -> None:
        with self._lock:
            for sock in self._open:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
            self._open.clear()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:  # closed
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target), timeout=5)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._open.update((client, upstream))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        for sock in (source, sink):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


def pipeline(name: str, source: MariaDBServer, sink: MariaDBServer, db: str, image: str) -> Obj:
    body = real_pipeline(name, sink, db, ["items"], image)
    body["spec"]["source"].update(host=source.host, port=source.port)
    return body


def point_at(pipelines: Pipelines, name: str, server: MariaDBServer) -> None:
    """The manifest edit of a failover: ``spec.source`` names the new primary."""
    pipelines.patch(name, {"spec": {"source": {"host": server.host, "port": server.port}}})


def sink_equals(sink: MariaDBServer, source: MariaDBServer, db: str) -> bool:
    try:
        return table_rows(source, db, "items") == table_rows(sink, f"{db}_replica", "items")
    except Exception:  # the sink table does not exist yet
        return False


def warnings_of(core: Any, namespace: str, name: str, reason: str) -> list[Obj]:
    items: list[Obj] = json.loads(core.list_namespaced_event(namespace, _preload_content=False).data)["items"]
    return [
        e
        for e in items
        if e["involvedObject"].get("name") == name and e["reason"] == reason and e["type"] == "Warning"
    ]


@pytest.mark.parametrize("move", ["manifest-edit", "address-moved"])
def test_a_promoted_replica_is_followed_by_gtid(
    real_operator: RunningOperator, control_plane: ControlPlane, core: Any, namespace: str,  # noqa: F811
    mariadb: MariaDBServer, pair: ReplicationPair, source_db: str, node_runner: NodeRunner, move: str,
) -> None:  # fmt: skip
    primary, replica = pair.primary, pair.second
    create_driver_account(control_plane, core, namespace, str(mariadb.cdc_password))
    pipelines = Pipelines(control_plane, namespace)
    with Proxy(primary.port) as proxy:
        body = pipeline("fo", primary, mariadb, source_db, real_operator.driver_image)
        if move == "address-moved":  # the pipeline reads through an address that moves (a VIP, MaxScale)
            body["spec"]["source"]["port"] = proxy.port
        pipelines.create(body)
        writer = Writer(primary, source_db, "items", next_id=ROWS, seed=15)
        writer.start()
        try:
            wait_caught_up(real_operator, control_plane, core, pipelines, "fo", primary, timeout=180)
            assert "server_id 1" in (pipelines.status("fo").get("progress") or {}).get("source", "")
        finally:
            writer.stop()
        # The failover: the replica has everything the primary binlogged, it is promoted, the
        # primary dies and the writer goes on on the new primary.
        caught_up(replica, primary)
        promote(replica)
        before = epoch_of(pipelines, "fo")
        if move == "address-moved":
            # The address now leads to the new primary; the running driver's connections break,
            # its reader reconnects, finds server_id 2 and stops the driver.
            proxy.switch(replica.port)
        primary.kill()
        writer = Writer(replica, source_db, "items", next_id=writer.next_id + 1000, seed=16)
        writer.start()
        try:
            if move == "manifest-edit":
                point_at(pipelines, "fo", replica)

            def rolled() -> int:
                real_operator.assert_alive()
                epoch = epoch_of(pipelines, "fo")
                source = (pipelines.status("fo").get("progress") or {}).get("source") or ""
                return epoch if epoch > before and "server_id 2" in source else 0

            epoch = wait_until(rolled, timeout=180, every=0.5, what="a new driver reading the new primary")
            wait_caught_up(real_operator, control_plane, core, pipelines, "fo", replica)
        finally:
            writer.stop()
        assert sum(writer.ops.values()) > 0
        wait_caught_up(real_operator, control_plane, core, pipelines, "fo", replica)
        wait_until(
            lambda: sink_equals(mariadb, replica, source_db), timeout=60, what="sink equal to the new primary"
        )
        assert table_rows(mariadb, f"{source_db}_replica", "items") == table_rows(replica, source_db, "items")
        status = pipelines.status("fo")
        progress = status["progress"]
        address = f"127.0.0.1:{proxy.port if move == 'address-moved' else replica.port}"
        assert "server_id 2" in progress["source"] and address in progress["source"], progress
        assert progress.get("gtidPosition"), progress
        # The phase follows the new driver's progress at the operator's next reconcile.
        wait_until(lambda: pipelines.status("fo").get("phase") == "Streaming", timeout=60, what="Streaming")
        logs = [driver_log(node_runner, namespace, "fo", e) for e in range(before, epoch + 1)]
        assert any("resuming by GTID position" in log for log in logs[1:]), logs[-1][-4000:]
        if move == "address-moved":  # the running driver noticed the other server at its reconnect
            assert "is now server_id 2, not server_id 1" in logs[0], logs[0][-4000:]
            assert "is now server_id 2" in status["driver"]["lastFailure"], status["driver"]


def test_a_replica_that_lacks_the_checkpoints_transactions_is_refused(
    real_operator: RunningOperator, control_plane: ControlPlane, core: Any, namespace: str,  # noqa: F811
    mariadb: MariaDBServer, pair: ReplicationPair, source_db: str, node_runner: NodeRunner,
) -> None:  # fmt: skip
    primary, replica = pair.primary, pair.second
    create_driver_account(control_plane, core, namespace, str(mariadb.cdc_password))
    caught_up(replica, primary)
    stop_replication(replica)  # it lags from here on
    pipelines = Pipelines(control_plane, namespace)
    pipelines.create(pipeline("lag", primary, mariadb, source_db, real_operator.driver_image))
    for i in range(1, 41):  # the pipeline applies these; the replica never gets them
        primary.execute(f"UPDATE `{source_db}`.items SET name = 'only on the primary' WHERE id = {i}")
    wait_caught_up(real_operator, control_plane, core, pipelines, "lag", primary, timeout=180)
    wait_until(lambda: sink_equals(mariadb, primary, source_db), timeout=60, what="sink equal to the primary")
    primary.kill()
    promote(replica)
    replica.execute(f"INSERT INTO `{source_db}`.items VALUES (-5, 'after the failover', 1)")
    sink_before = table_rows(mariadb, f"{source_db}_replica", "items")
    before = epoch_of(pipelines, "lag")
    point_at(pipelines, "lag", replica)

    def refused() -> Obj:
        real_operator.assert_alive()
        status = pipelines.status("lag")
        ready = condition(status, "Ready")
        return status if status.get("phase") == "Failed" and ready.get("reason") == "SourceChanged" else {}

    status = wait_until(refused, timeout=180, every=0.5, what="the refusal: Failed, SourceChanged")
    assert epoch_of(pipelines, "lag") > before  # the operator rolled the driver; the new one refused
    message = condition(status, "Ready")["message"]
    assert "the source changed" in message and "lacks transactions" in message, message
    assert "server_id 1" in message and "server_id 2" in message, message
    assert str(replica.port) in message, message
    assert "onSourceChange: resnapshot" in message, message
    assert condition(status, "Stalled")["reason"] == "SourceChanged", status
    events = wait_until(
        lambda: warnings_of(core, namespace, "lag", "SourceChanged"), what="the Warning Event"
    )
    # Events carry a classified sentence, never the driver's own text (core/reconcile_events.py);
    # the servers are named in the condition above and in status.driver.lastFailure.
    event = events[0]["message"]
    assert "not the server its checkpoint was written on" in event and "lastFailure" in event, events
    assert "server_id 1" in str((status.get("driver") or {}).get("lastFailure")), status
    # Nothing was written after the refusal: the sink still holds what the old primary had.
    assert table_rows(mariadb, f"{source_db}_replica", "items") == sink_before
    # Not restarted: the refused driver's pod is the current epoch's, kept for its log.
    epoch = epoch_of(pipelines, "lag")
    assert "the source changed" in driver_log(node_runner, namespace, "lag", epoch)
    # The way out, a spec change: start over on the new server; the sink then equals it (the
    # changes it never got are undone there, its own are added).
    pipelines.patch("lag", {"spec": {"startup": {"onSourceChange": "resnapshot"}}})
    wait_until(
        lambda: sink_equals(mariadb, replica, source_db), timeout=180, what="sink equal to the replica"
    )
    wait_until(lambda: pipelines.status("lag").get("phase") == "Streaming", timeout=60, what="Streaming")
    assert epoch_of(pipelines, "lag") == epoch + 1  # one driver started over; no crash loop
