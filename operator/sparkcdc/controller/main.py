"""``sparkcdc operator``: run the kopf operator until SIGTERM/SIGINT.

With ``--leader-election`` (the chart's replicas) the process first waits to hold the Lease and
only then starts kopf: a follower watches nothing and acts on nothing. A leader that cannot renew
in time exits at once (controller-runtime does the same) rather than stopping kopf gracefully:
handlers in flight could still create a driver pod after a follower took over. The pod restarts
and queues up as a follower.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Sequence

import kopf
from kubernetes import client, config

from sparkcdc.controller.handlers import Operator, register
from sparkcdc.controller.leader import FollowerHealth, LeaderElector, LeaseLock
from sparkcdc.controller.settings import OperatorSettings, parse_settings
from sparkcdc.kube.client import KubeConfig, load_config

log = logging.getLogger(__name__)
LOST_LEASE_EXIT_CODE = 3


def operator_main(argv: Sequence[str] | None = None) -> int:
    """The operator's composition root: the one place it reads its environment."""
    settings = parse_settings(argv, os.environ)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    kube = load_config(os.environ)
    elector = _lead(settings, kube) if settings.leader_election else None
    registry = kopf.OperatorRegistry()
    operator = Operator(settings, kube)
    register(registry, operator)
    liveness = f"http://0.0.0.0:{settings.liveness_port}/healthz" if settings.liveness_port else None
    try:
        kopf.run(
            registry=registry,
            standalone=True,  # no kopf peering: the Lease (or a single replica) keeps one acting
            clusterwide=not settings.namespaces,
            namespaces=settings.namespaces,
            liveness_endpoint=liveness,
        )
    finally:
        if elector is not None:
            elector.release()  # a follower takes over at its next try, not after the duration
    return 0


def _lead(settings: OperatorSettings, kube: KubeConfig) -> LeaderElector:
    """Block until this process holds the Lease; it then renews it in the background."""
    namespace = settings.leader_election_namespace or kube.namespace or _kubeconfig_namespace()
    timing = settings.lease_timing
    # The pod's name says who leads; the suffix tells a restarted container from its predecessor.
    identity = f"{settings.instance}_{uuid.uuid4().hex[:8]}"
    lock = LeaseLock(
        client.ApiClient(kube.configuration),
        namespace,
        settings.leader_election_name,
        timing.renew_deadline / 2,
    )
    elector = LeaderElector(lock, identity, timing, _lost)
    health = FollowerHealth(settings.liveness_port) if settings.liveness_port else None
    try:
        elector.acquire()
    finally:
        if health is not None:
            health.close()  # kopf serves /healthz from here on
    elector.hold()
    return elector


def _lost(reason: str) -> None:
    log.critical("lost the leader election: %s; exiting so that this pod restarts as a follower", reason)
    logging.shutdown()
    os._exit(LOST_LEASE_EXIT_CODE)  # not sys.exit: no handler in flight may act after this line


def _kubeconfig_namespace() -> str:
    """The current context's namespace, as kubectl resolves it (outside a cluster)."""
    try:
        _, active = config.list_kube_config_contexts()  # type: ignore[no-untyped-call]
    except Exception:  # no kubeconfig: load_config has failed before this for lack of one
        return "default"
    return str((active or {}).get("context", {}).get("namespace") or "default")
