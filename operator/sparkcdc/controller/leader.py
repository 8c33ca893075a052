"""Leader election on a ``coordination.k8s.io/v1`` Lease, by client-go's rules.

The chart runs two operator replicas so that a lost node does not leave pipelines unsupervised
for the minutes a rescheduled pod takes; only one of them may act, or two would race over the
same driver pods. kopf's peering does not give that: it is priority-based (a lower-priority
operator pauses when it sees a higher one's heartbeat), so during a network partition both sides
keep acting. A Lease written with ``resourceVersion`` is a lock: of two candidates replacing the
same version, the API server accepts one and refuses the other with 409.

The rules are client-go's ``leaderelection`` (what controller-runtime and kube-controller-manager
use), so they can be checked against its documentation:

* a candidate takes a Lease that is free, or whose record it has seen unchanged for the record's
  ``leaseDurationSeconds``. Expiry counts from when *this* candidate saw the record change, on its
  own monotonic clock, never from ``renewTime``: two nodes' clocks need not agree;
* the leader renews every ``retry_period``; when it has not renewed for ``renew_deadline`` it stops
  acting at once (the caller exits the process). ``renew_deadline < lease_duration``, and a renewal
  counts from the moment it was *sent*, so the old leader has stopped before any follower can
  see the Lease expire;
* ``leaseTransitions`` counts changes of holder; ``acquireTime`` is when the holder took it; a
  leader stopping cleanly releases the Lease (empty holder) so that a follower takes over at its
  next retry instead of waiting out the duration.

The decisions (:func:`observe`, :func:`decide`, :func:`next_record`) are pure and tested without a
cluster (tests/unit/controller/test_controller_leader.py); :class:`LeaseLock` is the thin
Kubernetes part and :class:`LeaderElector` the loop.
"""

from __future__ import annotations

import enum
import logging
import math
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

from kubernetes import client
from kubernetes.client.exceptions import ApiException

log = logging.getLogger(__name__)

JITTER = 1.2  # client-go's JitterFactor: retries wait retry_period * (1 + up to 0.2)
RELEASED_DURATION = 1  # what client-go writes on release: any follower may take it at once


@dataclass(frozen=True)
class LeaseTiming:
    """client-go's three durations, in seconds (its defaults: 15, 10, 2)."""

    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def problems(self) -> list[str]:
        """Why these durations are unsafe (client-go refuses the same), empty when they are not."""
        out = []
        if self.retry_period <= 0:
            out.append("the retry period must be positive")
        if self.lease_duration <= self.renew_deadline:
            out.append("the lease duration must be longer than the renew deadline")
        if self.renew_deadline <= JITTER * self.retry_period:
            out.append(f"the renew deadline must be longer than {JITTER} x the retry period")
        return out

    @property
    def lease_seconds(self) -> int:
        """``leaseDurationSeconds`` is an integer; rounding up only makes followers wait longer."""
        return max(1, math.ceil(self.lease_duration))


@dataclass(frozen=True)
class LeaseRecord:
    """The Lease's spec: who holds it, for how long, since when."""

    holder: str  # "": nobody (released)
    duration_seconds: int
    acquire_time: datetime | None = None
    renew_time: datetime | None = None
    transitions: int = 0


@dataclass(frozen=True)
class Observation:
    """The record a candidate last saw, and when (its monotonic clock) it saw it change."""

    record: LeaseRecord | None
    at: float


class Verdict(enum.Enum):
    CREATE = "create"  # no Lease yet: create it, holding it
    RENEW = "renew"  # ours: renew it
    TAKE = "take"  # free, or expired in this candidate's eyes: take it over
    WAIT = "wait"  # another holds it and it has not expired


def observe(previous: Observation | None, record: LeaseRecord | None, now: float) -> Observation:
    """What the candidate knows after reading ``record`` at ``now``: the clock starts again only
    when the record changed (the holder renewed, released, or someone took it)."""
    if previous is not None and previous.record == record:
        return previous
    return Observation(record, now)


def decide(identity: str, seen: Observation, now: float) -> Verdict:
    record = seen.record
    if record is None:
        return Verdict.CREATE
    if record.holder == identity:
        return Verdict.RENEW
    if not record.holder or now - seen.at >= record.duration_seconds:
        return Verdict.TAKE
    return Verdict.WAIT


def next_record(
    identity: str, verdict: Verdict, record: LeaseRecord | None, wall_now: datetime, timing: LeaseTiming
) -> LeaseRecord:
    """The record to write for ``verdict`` (not for WAIT, which writes nothing)."""
    if verdict is Verdict.WAIT:
        raise ValueError("a waiting candidate writes nothing")
    if verdict is Verdict.RENEW and record is not None:
        return replace(record, duration_seconds=timing.lease_seconds, renew_time=wall_now)
    transitions = record.transitions + 1 if record is not None else 0
    return LeaseRecord(identity, timing.lease_seconds, wall_now, wall_now, transitions)


def released(record: LeaseRecord, wall_now: datetime) -> LeaseRecord:
    """client-go's release: no holder, a one-second duration, the transition count kept."""
    return replace(
        record, holder="", duration_seconds=RELEASED_DURATION, acquire_time=wall_now, renew_time=wall_now
    )


def deadline_passed(last_renewed: float, now: float, timing: LeaseTiming) -> bool:
    """Whether a leader whose last successful renewal was *sent* at ``last_renewed`` must stop."""
    return now - last_renewed > timing.renew_deadline


# -- the Lease object ------------------------------------------------------------------------------


def _utcnow() -> datetime:
    return datetime.now(timezone.utc)


def _time(value: datetime | None) -> str | None:
    # MicroTime: RFC 3339 with microseconds.
    return value.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ") if value else None


def _parse_time(value: Any) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value
    text = str(value).replace("Z", "+00:00")
    return datetime.fromisoformat(text)


def record_of(spec: dict[str, Any]) -> LeaseRecord:
    return LeaseRecord(
        holder=spec.get("holderIdentity") or "",
        duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
        acquire_time=_parse_time(spec.get("acquireTime")),
        renew_time=_parse_time(spec.get("renewTime")),
        transitions=int(spec.get("leaseTransitions") or 0),
    )


def spec_of(record: LeaseRecord) -> dict[str, Any]:
    return {
        "holderIdentity": record.holder or None,
        "leaseDurationSeconds": record.duration_seconds,
        "acquireTime": _time(record.acquire_time),
        "renewTime": _time(record.renew_time),
        "leaseTransitions": record.transitions,
    }


class Lock(Protocol):
    """What the elector needs of the Lease (:class:`LeaseLock`; in tests, an in-memory one)."""

    namespace: str
    name: str

    def get(self) -> tuple[LeaseRecord, str] | None: ...
    def create(self, record: LeaseRecord) -> bool: ...
    def replace(self, record: LeaseRecord, version: str) -> bool: ...


class LeaseLock:
    """One Lease: read it, create it, replace it at the version read (409: another wrote first)."""

    def __init__(self, api: Any, namespace: str, name: str, timeout: float) -> None:
        self.api: Any = client.CoordinationV1Api(api)
        self.namespace, self.name = namespace, name
        self.timeout = timeout  # no call may outlast the renew deadline's watchdog by much

    def get(self) -> tuple[LeaseRecord, str] | None:
        try:
            lease = self.api.read_namespaced_lease(self.name, self.namespace, _request_timeout=self.timeout)
        except ApiException as err:
            if err.status == 404:
                return None
            raise
        spec = self.api.api_client.sanitize_for_serialization(lease.spec) or {}
        return record_of(spec), str(lease.metadata.resource_version)

    def create(self, record: LeaseRecord) -> bool:
        body = {"metadata": {"name": self.name, "namespace": self.namespace}, "spec": spec_of(record)}
        try:
            self.api.create_namespaced_lease(self.namespace, body, _request_timeout=self.timeout)
        except ApiException as err:
            if err.status == 409:
                return False
            raise
        return True

    def replace(self, record: LeaseRecord, version: str) -> bool:
        body = {
            "metadata": {"name": self.name, "namespace": self.namespace, "resourceVersion": version},
            "spec": spec_of(record),
        }
        try:
            self.api.replace_namespaced_lease(self.name, self.namespace, body, _request_timeout=self.timeout)
        except ApiException as err:
            if err.status == 409:
                return False
            raise
        return True


# -- the loop --------------------------------------------------------------------------------------


class LeaderElector:
    """Acquire the Lease (blocking), then renew it in a thread; ``on_lost`` runs (and must stop
    all acting, e.g. exit the process) when renewing failed for the renew deadline."""

    def __init__(
        self,
        lock: Lock,
        identity: str,
        timing: LeaseTiming,
        on_lost: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.lock, self.identity, self.timing, self.on_lost = lock, identity, timing, on_lost
        self.clock = clock
        self._seen: Observation | None = None
        self._version: str | None = None
        self._last_renewed = 0.0
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    @property
    def where(self) -> str:
        return f"Lease {self.lock.namespace}/{self.lock.name}"

    def try_acquire_or_renew(self) -> bool:
        """One attempt; True when this candidate holds the Lease afterwards."""
        started = self.clock()
        found = self.lock.get()
        record, version = found if found is not None else (None, None)
        previous = self._seen.record if self._seen else None
        self._seen = observe(self._seen, record, started)
        verdict = decide(self.identity, self._seen, started)
        if verdict is Verdict.WAIT:
            if record is not None and (previous is None or previous.holder != record.holder):
                log.info("%s is held by %s; waiting to lead", self.where, record.holder)
            return False
        new = next_record(self.identity, verdict, record, _utcnow(), self.timing)
        ok = self.lock.create(new) if version is None else self.lock.replace(new, version)
        if ok:
            self._seen = Observation(new, started)
            self._last_renewed = started
            if verdict is not Verdict.RENEW:
                log.info("acquired %s as %s (transitions: %s)", self.where, self.identity, new.transitions)
        return ok

    def _attempt(self) -> bool:
        try:
            return self.try_acquire_or_renew()
        except Exception as err:  # the API unreachable, a timeout: the next retry may succeed
            log.warning("%s: %s", self.where, err)
            return False

    def _pause(self) -> None:
        self._stop.wait(self.timing.retry_period * (1 + random.uniform(0, JITTER - 1)))

    def acquire(self) -> None:
        """Return once this candidate holds the Lease."""
        log.info("waiting to acquire %s as %s", self.where, self.identity)
        while not self._attempt():
            self._pause()

    def hold(self) -> None:
        """Renew in the background; call after :meth:`acquire`."""
        for target, name in ((self._renew, "lease-renew"), (self._watch, "lease-watchdog")):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)

    def _renew(self) -> None:
        while not self._stop.wait(self.timing.retry_period):
            self._attempt()

    def _watch(self) -> None:
        # Apart from the renewing thread: a call hanging past the deadline must not keep us acting.
        while not self._stop.is_set():
            now = self.clock()
            if deadline_passed(self._last_renewed, now, self.timing):
                self.on_lost(
                    f"could not renew {self.where} for {self.timing.renew_deadline:g}s "
                    f"(holder now: {self._seen.record.holder if self._seen and self._seen.record else '?'})"
                )
                return
            left = self._last_renewed + self.timing.renew_deadline - now
            self._stop.wait(max(0.05, min(left + 0.01, self.timing.retry_period / 2)))

    def release(self) -> None:
        """Stop renewing and free the Lease if this candidate still holds it."""
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=self.timing.renew_deadline)
        try:
            found = self.lock.get()
            if found is not None and found[0].holder == self.identity:
                self.lock.replace(released(found[0], _utcnow()), found[1])
                log.info("released %s", self.where)
        except Exception as err:  # the follower then waits out the duration instead
            log.warning("could not release %s: %s", self.where, err)


class FollowerHealth:
    """``/healthz`` while waiting for the Lease: kopf's own endpoint starts only with kopf, and a
    follower failing its liveness probe would be restarted over and over."""

    def __init__(self, port: int) -> None:
        self.server = ThreadingHTTPServer(("0.0.0.0", port), _HealthHandler)
        self.thread = threading.Thread(target=self.server.serve_forever, name="follower-health", daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class _HealthHandler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        ok = self.path.split("?")[0] == "/healthz"
        body = b'{"leader": false}' if ok else b"not found"
        self.send_response(200 if ok else 404)
        self.send_header("Content-Type", "application/json" if ok else "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # probes every few seconds: no log
        pass
