"""Leader election's decisions without a cluster (controller/leader.py).

The tables pin client-go's rules one by one; the property runs two or three candidates against an
in-memory Lease that checks ``resourceVersion`` like the API server, through partitions, lost
responses and arbitrary timing, and checks that no two candidates ever act at the same moment.
The same code against the real API server, with processes killed: tests/e2e/test_operator_leader.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkcdc.controller.leader import (
    LeaderElector,
    LeaseRecord,
    LeaseTiming,
    Observation,
    Verdict,
    deadline_passed,
    decide,
    next_record,
    observe,
    record_of,
    released,
    spec_of,
)
from sparkcdc.controller.settings import parse_settings

T0 = datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=timezone.utc)
T1 = datetime(2026, 1, 2, 3, 4, 9, tzinfo=timezone.utc)
TIMING = LeaseTiming(lease_duration=15, renew_deadline=10, retry_period=2)
HELD_BY_B = LeaseRecord("b", 15, T0, T0, 3)


@pytest.mark.parametrize(
    ("record", "seen_at", "now", "verdict"),
    [
        (None, 0.0, 0.0, Verdict.CREATE),  # no Lease yet
        (LeaseRecord("a", 15, T0, T0, 0), 0.0, 100.0, Verdict.RENEW),  # ours, however old
        (LeaseRecord("", 1, T0, T0, 3), 5.0, 5.0, Verdict.TAKE),  # released: at once
        (HELD_BY_B, 0.0, 14.9, Verdict.WAIT),  # seen unchanged for less than its duration
        (HELD_BY_B, 0.0, 15.0, Verdict.TAKE),  # ... for its whole duration: expired
        (HELD_BY_B, 10.0, 20.0, Verdict.WAIT),  # the clock starts when this candidate saw it
    ],
)
def test_decide(record: LeaseRecord | None, seen_at: float, now: float, verdict: Verdict) -> None:
    assert decide("a", Observation(record, seen_at), now) is verdict


def test_the_expiry_counts_from_the_change_this_candidate_saw_not_from_renew_time() -> None:
    # renewTime lies a year back (another node's clock): irrelevant, only the local observation counts.
    skewed = LeaseRecord("b", 15, T0.replace(year=2025), T0.replace(year=2025), 0)
    seen = observe(None, skewed, 100.0)
    assert decide("a", seen, 114.0) is Verdict.WAIT
    assert observe(seen, skewed, 114.0) is seen  # unchanged: the clock keeps running
    renewed = LeaseRecord("b", 15, skewed.acquire_time, T1, 0)
    again = observe(seen, renewed, 114.0)
    assert again.at == 114.0  # a renewal restarts it
    assert decide("a", again, 128.0) is Verdict.WAIT
    assert decide("a", again, 129.0) is Verdict.TAKE


def test_next_record_counts_transitions_and_keeps_acquire_time_on_renewal() -> None:
    created = next_record("a", Verdict.CREATE, None, T0, TIMING)
    assert created == LeaseRecord("a", 15, T0, T0, 0)
    renewed = next_record("a", Verdict.RENEW, created, T1, TIMING)
    assert renewed == LeaseRecord("a", 15, T0, T1, 0)
    taken = next_record("a", Verdict.TAKE, HELD_BY_B, T1, TIMING)
    assert taken == LeaseRecord("a", 15, T1, T1, 4)
    with pytest.raises(ValueError, match="nothing"):
        next_record("a", Verdict.WAIT, HELD_BY_B, T1, TIMING)


def test_release_frees_the_lease_and_keeps_the_count() -> None:
    assert released(HELD_BY_B, T1) == LeaseRecord("", 1, T1, T1, 3)


def test_lease_seconds_round_up() -> None:
    assert LeaseTiming(4.2, 3, 0.5).lease_seconds == 5
    assert LeaseTiming(0.4, 0.3, 0.1).lease_seconds == 1


@pytest.mark.parametrize(
    ("timing", "problem"),
    [
        (LeaseTiming(15, 10, 2), None),
        (LeaseTiming(10, 10, 2), "lease duration must be longer than the renew deadline"),
        (LeaseTiming(15, 2.4, 2), "renew deadline must be longer than 1.2 x the retry period"),
        (LeaseTiming(15, 10, 0), "retry period must be positive"),
    ],
)
def test_unsafe_timings_are_named(timing: LeaseTiming, problem: str | None) -> None:
    problems = timing.problems()
    assert (problem in " ".join(problems)) if problem else problems == []


def test_deadline() -> None:
    assert not deadline_passed(100.0, 110.0, TIMING)
    assert deadline_passed(100.0, 110.01, TIMING)


def test_lease_spec_round_trip() -> None:
    spec = spec_of(LeaseRecord("a", 15, T0, T1, 2))
    assert spec == {
        "holderIdentity": "a",
        "leaseDurationSeconds": 15,
        "acquireTime": "2026-01-02T03:04:05.123456Z",
        "renewTime": "2026-01-02T03:04:09.000000Z",
        "leaseTransitions": 2,
    }
    assert record_of(spec) == LeaseRecord("a", 15, T0, T1, 2)
    assert record_of({}) == LeaseRecord("", 0)
    assert spec_of(LeaseRecord("", 1))["holderIdentity"] is None  # the API's "no holder"


def test_settings_off_by_hand_and_flags_and_variables() -> None:
    plain = parse_settings([], {})
    assert (plain.leader_election, plain.leader_election_namespace) == (False, None)
    assert plain.lease_timing == LeaseTiming()
    env = {"SPARKCDC_LEADER_ELECTION": "true", "SPARKCDC_LEADER_ELECTION_NAMESPACE": "ops"}
    chart = parse_settings(["--leader-election-name=rel", "--leader-election-lease-duration=20"], env)
    assert (chart.leader_election, chart.leader_election_name) == (True, "rel")
    assert (chart.leader_election_namespace, chart.lease_duration) == ("ops", 20.0)
    assert not parse_settings(["--leader-election=false"], env).leader_election


def test_unsafe_timings_are_refused_at_start(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse_settings(["--leader-election", "--leader-election-renew-deadline=20"], {})
    assert "longer than the renew deadline" in capsys.readouterr().err


# -- the property: never two acting at once ------------------------------------------------------


class UnreachableError(Exception):
    pass


@dataclass
class World:
    """The API server's Lease (with its resourceVersion), the time, and each candidate's link."""

    now: float = 0.0
    record: LeaseRecord | None = None
    version: int = 0
    cut: set[str] = field(default_factory=set)  # candidates partitioned away
    lose_response: set[str] = field(default_factory=set)  # their next write commits, the reply is lost


class MemoryLock:
    namespace, name = "ops", "sparkcdc"

    def __init__(self, world: World, who: str) -> None:
        self.world, self.who = world, who

    def _reach(self) -> None:
        if self.who in self.world.cut:
            raise UnreachableError(self.who)

    def get(self) -> tuple[LeaseRecord, str] | None:
        self._reach()
        w = self.world
        return None if w.record is None else (w.record, str(w.version))

    def create(self, record: LeaseRecord) -> bool:
        return self._write(record, None)

    def replace(self, record: LeaseRecord, version: str) -> bool:
        return self._write(record, version)

    def _write(self, record: LeaseRecord, version: str | None) -> bool:
        self._reach()
        w = self.world
        if (w.record is None) != (version is None) or (version is not None and version != str(w.version)):
            return False  # 409: someone wrote in between
        w.record, w.version = record, w.version + 1
        if self.who in w.lose_response:
            w.lose_response.discard(self.who)
            raise UnreachableError(f"{self.who}: reply lost")
        return True


def acting(elector: LeaderElector, started: bool, now: float) -> bool:
    """Whether the candidate may act now: it acquired, and its watchdog has not stopped it."""
    return started and not deadline_passed(elector._last_renewed, now, elector.timing)


STEP = st.tuples(
    st.integers(0, 2),  # who tries
    st.floats(0.0, 6.0),  # seconds passing first
    st.sampled_from(["try", "try", "try", "cut", "heal", "lose"]),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(STEP, min_size=1, max_size=80))
def test_two_candidates_never_act_at_the_same_time(steps: list[tuple[int, float, str]]) -> None:
    world = World()
    names = ["a", "b", "c"]
    electors = [
        LeaderElector(MemoryLock(world, n), n, TIMING, lambda _: None, clock=lambda: world.now) for n in names
    ]
    started = [False] * len(names)
    for who, dt, what in steps:
        world.now += dt
        if what == "cut":
            world.cut.add(names[who])
        elif what == "heal":
            world.cut.discard(names[who])
        elif what == "lose":
            world.lose_response.add(names[who])
        else:
            ok = electors[who]._attempt()
            if ok and not acting(electors[who], started[who], world.now - 1e-9):
                started[who] = True  # (re)acquired: a restarted process leads from here
        now_acting = [n for n, e, s in zip(names, electors, started, strict=True) if acting(e, s, world.now)]
        assert len(now_acting) <= 1, f"at {world.now:.2f}s {now_acting} act at once"


def test_a_follower_takes_over_after_the_leader_stops_renewing() -> None:
    world = World()
    a = LeaderElector(MemoryLock(world, "a"), "a", TIMING, lambda _: None, clock=lambda: world.now)
    b = LeaderElector(MemoryLock(world, "b"), "b", TIMING, lambda _: None, clock=lambda: world.now)
    assert a._attempt() and not b._attempt()
    world.cut.add("a")  # a partitioned away (or killed)
    for _ in range(7):
        world.now += 2
        assert not b._attempt()  # 14 s: not yet
    world.now += 1
    assert b._attempt()  # 15 s after b saw a's last renewal
    assert world.record is not None and (world.record.holder, world.record.transitions) == ("b", 1)
    assert deadline_passed(a._last_renewed, world.now, TIMING)  # a had stopped 5 s before
