"""Property: in any history of pod events, spec edits and reconciles, the epoch never goes down,
never rises while a driver pod of the pipeline exists, and at most one live driver pod exists."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.reconcile_fixtures import NOW, make_spec, merge
from sparkcdc.api import CdcPipelineStatus
from sparkcdc.core.reconcile import reconcile
from sparkcdc.core.reconcile_status import driver_pod_name
from sparkcdc.core.reconcile_types import CreatePod, DeletePod, DriverPod, Event, Observed, PatchStatus

# Kubernetes convention for condition and Event reasons: a non-empty CamelCase word.
CAMEL_CASE = re.compile(r"[A-Z][a-z0-9]*(?:[A-Z][a-z0-9]*)*")
STEPS = ("reconcile", "tick", "run", "fail", "succeed", "vanish", "user_delete", "suspend", "nonce", "edit")


@dataclass
class World:
    now: datetime = NOW
    status: dict[str, Any] = field(default_factory=dict)
    pods: dict[str, DriverPod] = field(default_factory=dict)
    suspend: bool = False
    nonce: int = 0
    spec_hash: str = "h0"
    generation: int = 1

    @property
    def epoch(self) -> int:
        return int((self.status.get("driver") or {}).get("epoch", 0))

    def pick(self, index: int) -> DriverPod | None:
        names = sorted(self.pods)
        return self.pods[names[index % len(names)]] if names else None


def reconcile_once(world: World) -> None:
    spec = make_spec(suspend=world.suspend, restartNonce=str(world.nonce), restartPolicy={"maxRestarts": 5})
    status = CdcPipelineStatus.model_validate(world.status) if world.status else None
    seen = Observed("shop", world.generation, world.spec_hash, tuple(world.pods.values()), True)
    before, pods_before = world.epoch, dict(world.pods)
    for action in reconcile(spec, status, seen, world.now):
        if isinstance(action, PatchStatus):
            world.status = merge(world.status, dict(action.fields))
            for cond in action.fields.get("conditions") or []:  # the CRD's Reason column shows them
                assert CAMEL_CASE.fullmatch(cond["reason"]), f"{cond['type']} reason {cond['reason']!r}"
            assert world.epoch >= before, "the epoch went down"
            if world.epoch > before:
                assert not pods_before, f"epoch raised while pods exist: {sorted(pods_before)}"
        elif isinstance(action, CreatePod):
            assert action.epoch == world.epoch, "a pod was created for an epoch status does not hold"
            assert not world.pods, "a second driver pod was created"
            name = driver_pod_name("shop", action.epoch)
            world.pods[name] = DriverPod(
                name, world.now, action.epoch, world.spec_hash, restart_nonce=str(world.nonce)
            )
        elif isinstance(action, Event):
            assert CAMEL_CASE.fullmatch(action.reason), f"event reason {action.reason!r}"
        elif isinstance(action, DeletePod) and action.name in world.pods:
            world.pods[action.name] = replace(world.pods[action.name], deleting=True)
    live = [p for p in world.pods.values() if not p.deleting]
    assert len(live) <= 1


def step(world: World, kind: str, amount: int) -> None:
    pod = world.pick(amount)
    if kind == "reconcile":
        reconcile_once(world)
    elif kind == "tick":
        world.now += timedelta(seconds=amount * 7)
    elif kind == "run" and pod and pod.phase == "Pending":
        world.pods[pod.name] = replace(pod, phase="Running", started_at=world.now)
    elif kind == "fail" and pod and pod.phase in ("Pending", "Running"):
        world.pods[pod.name] = replace(pod, phase="Failed", exit_code=1, finished_at=world.now)
    elif kind == "succeed" and pod and pod.phase == "Running":
        world.pods[pod.name] = replace(pod, phase="Succeeded", exit_code=0, finished_at=world.now)
    elif kind == "vanish" and pod and pod.deleting:
        del world.pods[pod.name]
    elif kind == "user_delete" and pod:
        world.pods[pod.name] = replace(pod, deleting=True)
    elif kind == "suspend":
        world.suspend, world.generation = not world.suspend, world.generation + 1
    elif kind == "nonce":
        world.nonce, world.generation = world.nonce + 1, world.generation + 1
    elif kind == "edit":
        world.spec_hash, world.generation = f"h{amount}", world.generation + 1


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(STEPS), st.integers(0, 60)), max_size=60))
def test_epoch_is_monotonic_and_fenced(history: list[tuple[str, int]]) -> None:
    world = World()
    for kind, amount in history:
        step(world, kind, amount)
        epoch = world.epoch
        reconcile_once(world)
        assert world.epoch >= epoch


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(STEPS), st.integers(0, 60)), max_size=40))
def test_pods_that_vanish_are_always_replaced(history: list[tuple[str, int]]) -> None:
    """Liveness: whatever happened, once nothing else fails and time passes, an unsuspended
    pipeline has a running driver of the current epoch again (or a completed one, which stays)."""
    world = World()
    for kind, amount in history:
        step(world, kind, amount)
    world.suspend = False
    world.generation += 1  # also lifts a Failed phase
    for _ in range(50):
        reconcile_once(world)
        for pod in list(world.pods.values()):
            if pod.deleting:
                del world.pods[pod.name]
            elif pod.phase == "Pending":
                world.pods[pod.name] = replace(pod, phase="Running", started_at=world.now)
        world.now += timedelta(seconds=60)
    live = [p for p in world.pods.values() if p.phase in ("Running", "Succeeded") and not p.deleting]
    assert [p.epoch for p in live] == [world.epoch]
