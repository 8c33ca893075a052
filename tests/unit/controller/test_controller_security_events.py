"""Nothing sensitive in Events: they carry the classified reason and a fixed sentence, never the
driver's own words (an exception's text may quote SQL with key values or a credential), never a
verification's key ranges; and the operator itself refuses a pipeline with a forbidden image."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any, cast

import pytest

from harness.reconcile_fixtures import (
    NOW,
    apply_status,
    failed_pod,
    make_pod,
    make_spec,
    make_status,
    merge,
    observed,
    pipeline_obj,
)
from sparkcdc.controller.metrics import OperatorMetrics
from sparkcdc.controller.reconciler import Reconciler
from sparkcdc.controller.settings import OperatorSettings
from sparkcdc.controller.verify_events import verification_event
from sparkcdc.controller.verify_status import verified_condition
from sparkcdc.core.reconcile import reconcile
from sparkcdc.core.reconcile_types import Event
from sparkcdc.kube.client import KubeClient

pytestmark = pytest.mark.unit

PASSWORD = "Hunter2-S3cr3t"
SQL = "INSERT INTO `shop`.`customers` (`id`, `email`) VALUES (4711, 'alice@example.com')"
CRASH = (
    "OperationalError: (1062, \"Duplicate entry '4711' for key 'PRIMARY'\") while running "
    f"{SQL} on mysql://cdc:{PASSWORD}@replica:3306/shop_replica"
)
LEAKS = (PASSWORD, "4711", "alice@example.com", "INSERT INTO", "Duplicate entry")

Obj = dict[str, Any]


def events(actions: list[Any]) -> list[Event]:
    return [a for a in actions if isinstance(a, Event)]


def test_a_driver_crash_posts_an_event_without_its_message() -> None:
    pod = replace(failed_pod(), termination_message=CRASH)
    actions = reconcile(make_spec(), make_status(phase="Streaming"), observed(pod), NOW)
    (event,) = events(actions)
    assert (event.type, event.reason) == ("Warning", "DriverFailed")
    assert event.message.startswith("driver shop-driver-1: exit code 1: Error: the driver failed")
    assert "status.driver.lastFailure" in event.message
    for leak in LEAKS:
        assert leak not in event.message, leak
    # The status, readable by those who may read the pipeline, keeps the driver's words.
    status = apply_status(make_status(phase="Streaming"), actions)
    assert status.driver is not None and CRASH in (status.driver.last_failure or "")


@pytest.mark.parametrize(
    ("reason", "message", "says"),
    [
        ("SourceChanged", f"the source changed: server uuid-b is not uuid-a; {SQL}", "refused its source"),
        ("BinlogLost", f"binlog lost: mysql-bin.000007:4 is gone; {PASSWORD}", "binlog position"),
    ],
)
def test_a_refusing_driver_posts_its_reason_in_fixed_words(reason: str, message: str, says: str) -> None:
    pod = replace(failed_pod(), termination_message=message)
    (event,) = events(reconcile(make_spec(), make_status(phase="Streaming"), observed(pod), NOW))
    assert event.reason == reason and says in event.message
    assert PASSWORD not in event.message and "INSERT" not in event.message and "uuid" not in event.message


def test_a_pending_timeout_says_what_kubernetes_said() -> None:
    """The scheduler's and kubelet's messages name objects, never their data: they stay."""
    pod = make_pod(1, "Pending", age=400, unschedulable="0/3 nodes are available: 3 Insufficient memory")
    (event,) = events(reconcile(make_spec(), make_status(phase="Pending"), observed(pod), NOW))
    assert event.reason == "Unschedulable" and "3 Insufficient memory" in event.message


def test_a_verification_event_leaves_key_ranges_and_errors_to_the_status() -> None:
    differs = {
        "nonce": "v1", "startedAt": "2024-05-01T12:00:00Z", "finishedAt": "2024-05-01T12:01:00Z",
        "repair": False, "tables": 1, "chunksChecked": 4, "chunksDiffering": 1, "rowsChecked": 40,
        "chunks": [{
            "table": "shop.customers", "chunk": 2, "range": "[4711, 4800)", "state": "differ",
            "sourceRows": 10, "sinkRows": 9, "differingRows": 1,
        }],
    }  # fmt: skip
    state = verified_condition(differs)
    assert "4711" in state[2]  # the condition names the chunk by its key range ...
    said = verification_event(state)
    assert "Differs" in said and "4711" not in said  # ... the Event does not
    failed = {**differs, "chunks": [], "chunksDiffering": 0, "error": f"OperationalError: {SQL}"}
    said = verification_event(verified_condition(failed))
    assert "Failed" in said and "INSERT" not in said
    matched = {**differs, "chunks": [], "chunksDiffering": 0}
    assert verification_event(verified_condition(matched)) == verified_condition(matched)[2]


# -- the operator's own refusals, through the reconciler ----------------------------------------------


class FakeKube:
    """Just the calls one reconcile of a new pipeline makes; records what it posts and creates."""

    def __init__(self, obj: Obj) -> None:
        self.obj = obj
        self.events: list[tuple[str, str, str]] = []
        self.created: list[Obj] = []

    def get_pipeline(self, namespace: str, name: str) -> Obj | None:
        return copy.deepcopy(self.obj)

    def list_pipelines(self, namespace: str | None = None) -> list[Obj]:
        return [copy.deepcopy(self.obj)]

    def get_config_map(self, namespace: str, name: str) -> Obj | None:
        return None

    def list_pods(self, namespace: str, labels: dict[str, str]) -> list[Obj]:
        return []

    def service_exists(self, namespace: str, name: str) -> bool:
        return False

    def patch_pipeline_status(self, namespace: str, name: str, status: Obj, version: str | None) -> Obj:
        self.obj = {**self.obj, "status": merge(self.obj.get("status") or {}, status)}
        return copy.deepcopy(self.obj)

    def post_event(self, obj: Obj, type_: str, reason: str, message: str, *, now: str) -> None:
        self.events.append((type_, reason, message))

    def __getattr__(self, name: str) -> Any:  # creating anything is what these pipelines must not do
        def record(*args: Any, **_: Any) -> None:
            self.created.append({"call": name, "args": args})

        return record


def reconciler(obj: Obj, settings: OperatorSettings) -> tuple[Reconciler, FakeKube]:
    kube = FakeKube({**obj, "metadata": {**obj["metadata"], "resourceVersion": "1"}})
    return Reconciler(cast(KubeClient, kube), settings, OperatorMetrics(), clock=lambda: NOW), kube


def test_the_operator_refuses_a_pipeline_whose_image_is_not_allowed() -> None:
    settings = replace(OperatorSettings(), allowed_images=("ghcr.io/sparkcdc/",))
    rec, kube = reconciler(pipeline_obj(spark={"image": "docker.io/attacker/miner:1"}), settings)
    rec.reconcile("ns", "shop")
    assert kube.created == []  # no account, no Secret, no pod, no Service
    status = kube.obj["status"]
    assert status["phase"] == "Pending"
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "ImageNotAllowed")
    assert "spec.spark.image 'docker.io/attacker/miner:1'" in ready["message"]
    assert [(t, r) for t, r, _ in kube.events] == [("Warning", "ImageNotAllowed")]


def test_an_invalid_spec_event_names_no_field_value() -> None:
    """A pipeline stored before the CRD refused credentials in spec.spark.conf: the operator refuses
    it too, and neither the Event nor the condition repeats the value."""
    obj = pipeline_obj(spark={"conf": {"spark.hadoop.fs.s3a.secret.key": PASSWORD}})
    rec, kube = reconciler(obj, OperatorSettings())
    rec.reconcile("ns", "shop")
    (event,) = kube.events
    assert event[:2] == ("Warning", "InvalidSpec") and PASSWORD not in event[2]
    assert PASSWORD not in str(kube.obj["status"]) and kube.created == []
