"""Operator-wide settings: command-line flags with environment-variable defaults.

:data:`FLAG_VARIABLES` names each flag's variable once: :func:`build_parser` takes the defaults from
it, and docs/configuration.md (``sparkcdc.configuration``) lists it next to the flag.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from sparkcdc.controller.builders import DEFAULT_SPARK_MASTER, DRIVER_METRICS_PORT
from sparkcdc.controller.leader import LeaseTiming

# The variable of each flag, by the flag's dest, in the order of --help: read when the flag is not
# given. SPARKCDC_WATCH_NAMESPACES and SPARKCDC_ALLOWED_IMAGES are comma-separated lists (the flags
# are repeated instead).
FLAG_VARIABLES: dict[str, str] = {
    "namespace": "SPARKCDC_WATCH_NAMESPACES",
    "allowed_image": "SPARKCDC_ALLOWED_IMAGES",
    "spark_master": "SPARKCDC_SPARK_MASTER",
    "driver_service_account": "SPARKCDC_DRIVER_SERVICE_ACCOUNT",
    "scheduler_name": "SPARKCDC_SCHEDULER_NAME",
    "metrics_port": "SPARKCDC_METRICS_PORT",
    "driver_metrics_port": "SPARKCDC_DRIVER_METRICS_PORT",
    "liveness_port": "SPARKCDC_LIVENESS_PORT",
    "resync_seconds": "SPARKCDC_RESYNC_SECONDS",
    "stall_seconds": "SPARKCDC_STALL_SECONDS",
    "binlog_expiry_margin_seconds": "SPARKCDC_BINLOG_EXPIRY_MARGIN_SECONDS",
    "binlog_expiry_margin_files": "SPARKCDC_BINLOG_EXPIRY_MARGIN_FILES",
    "leader_election": "SPARKCDC_LEADER_ELECTION",
    "leader_election_name": "SPARKCDC_LEADER_ELECTION_NAME",
    "leader_election_namespace": "SPARKCDC_LEADER_ELECTION_NAMESPACE",
    "lease_duration": "SPARKCDC_LEADER_ELECTION_LEASE_DURATION",
    "renew_deadline": "SPARKCDC_LEADER_ELECTION_RENEW_DEADLINE",
    "retry_period": "SPARKCDC_LEADER_ELECTION_RETRY_PERIOD",
}
# Not a flag: Kubernetes sets it to the pod's name, which tells replicas apart in Events.
INSTANCE_VARIABLE = "HOSTNAME"


@dataclass(frozen=True)
class OperatorSettings:
    namespaces: tuple[str, ...] = ()  # empty: all namespaces
    # Images (or prefixes, core/reconcile_image.py) pipelines may run; empty: any image.
    allowed_images: tuple[str, ...] = ()
    spark_master: str = DEFAULT_SPARK_MASTER  # for pipelines whose spec.spark.master is unset
    driver_service_account: str = "sparkcdc-driver"
    scheduler_name: str | None = None  # e.g. the test node runner's scheduler
    metrics_port: int = 8080  # 0: no metrics endpoint
    driver_metrics_port: int = DRIVER_METRICS_PORT  # the driver pods' metrics endpoint; 0: none
    liveness_port: int = 0  # 0: no kopf liveness endpoint
    resync_seconds: float = 30.0  # periodic reconcile of every pipeline
    stall_seconds: float = 600.0  # no progress for this long -> Stalled
    # BinlogExpiry: warn this long before the needed binlog may be purged by age, or while it is
    # among this many oldest files the source keeps (core/binlog_retention.py)
    binlog_expiry_margin_seconds: float = 6 * 3600.0
    binlog_expiry_margin_files: int = 1
    instance: str = "sparkcdc-operator"  # this replica in the Events it posts ($HOSTNAME: the pod)
    # Off by hand (one process, no Lease RBAC needed); the chart turns it on for its replicas.
    leader_election: bool = False
    leader_election_name: str = "sparkcdc-operator"
    leader_election_namespace: str | None = None  # None: the pod's (or the kubeconfig's) namespace
    lease_duration: float = LeaseTiming.lease_duration
    renew_deadline: float = LeaseTiming.renew_deadline
    retry_period: float = LeaseTiming.retry_period

    @property
    def lease_timing(self) -> LeaseTiming:
        return LeaseTiming(self.lease_duration, self.renew_deadline, self.retry_period)


def build_parser(env: Mapping[str, str]) -> argparse.ArgumentParser:
    """The operator's flags, each defaulting to its variable in ``env`` (see :data:`FLAG_VARIABLES`)."""
    parser = argparse.ArgumentParser(prog="sparkcdc operator", description="Run the CdcPipeline operator.")
    parser.add_argument(
        "--namespace",
        "-n",
        action="append",
        default=[],  # SPARKCDC_WATCH_NAMESPACES is read after parsing: append would extend a default
        help="watch this namespace (repeatable); default: all namespaces",
    )
    parser.add_argument(
        "--allowed-image",
        action="append",
        default=[],  # like --namespace: SPARKCDC_ALLOWED_IMAGES is read after parsing
        help="an image pipelines may run (spec.spark.image), or a prefix of them ending in '/', ':' or "
        "'@'; a repository without tag allows its tags and digests (repeatable); default: any image",
    )
    parser.add_argument(
        "--spark-master",
        default=_default(env, "spark_master"),
        help="Spark master of the pipelines whose spec.spark.master is unset",
    )
    parser.add_argument(
        "--driver-service-account",
        default=_default(env, "driver_service_account"),
        help="the chart's shared driver ServiceAccount, whose annotations and pull secrets "
        "each pipeline's driver account copies",
    )
    parser.add_argument(
        "--scheduler-name",
        default=_default(env, "scheduler_name", lambda text: text or None),
        help="the driver pods' schedulerName; default: the cluster's default scheduler",
    )
    _add_ports(parser, env)
    parser.add_argument(
        "--resync-seconds",
        type=float,
        default=_default(env, "resync_seconds", float),
        help="reconcile every pipeline at least this often",
    )
    parser.add_argument(
        "--stall-seconds",
        type=float,
        default=_default(env, "stall_seconds", float),
        help="a running pipeline without progress for this long becomes Stalled",
    )
    parser.add_argument(
        "--binlog-expiry-margin-seconds",
        type=float,
        default=_default(env, "binlog_expiry_margin_seconds", float),
        help="BinlogExpiry warns this long before the binlog a pipeline needs may be purged by age",
    )
    parser.add_argument(
        "--binlog-expiry-margin-files",
        type=int,
        default=_default(env, "binlog_expiry_margin_files", int),
        help="BinlogExpiry warns while the binlog file a pipeline needs is among this many oldest "
        "the source keeps (0: never on that count)",
    )
    _add_leader_election(parser, env)
    return parser


def _add_leader_election(parser: argparse.ArgumentParser, env: Mapping[str, str]) -> None:
    parser.add_argument(
        "--leader-election",
        nargs="?",
        const=True,  # the bare flag; =false turns a variable's true off
        type=_flag,
        default=_default(env, "leader_election", _flag),
        metavar="true|false",
        help="act only while holding a coordination.k8s.io Lease, so that replicas take turns",
    )
    parser.add_argument(
        "--leader-election-name",
        default=_default(env, "leader_election_name"),
        help="name of the leader election's Lease",
    )
    parser.add_argument(
        "--leader-election-namespace",
        default=_default(env, "leader_election_namespace", lambda text: text or None),
        help="namespace of the Lease; default: the operator pod's, else the kubeconfig context's",
    )
    for dest, help_ in (
        ("lease_duration", "a Lease not renewed for this long may be taken over by a follower"),
        ("renew_deadline", "the leader stops (exits) when it could not renew for this long"),
        ("retry_period", "the wait between tries to acquire or renew the Lease"),
    ):
        parser.add_argument(
            f"--leader-election-{dest.replace('_', '-')}",
            dest=dest,
            type=float,
            default=_default(env, dest, float),
            help=f"{help_} (seconds)",
        )


def _flag(text: str) -> bool:
    if text.lower() in ("1", "true", "yes", "on"):
        return True
    if text.lower() in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"not a boolean: {text!r}")


def _add_ports(parser: argparse.ArgumentParser, env: Mapping[str, str]) -> None:
    parser.add_argument(
        "--metrics-port",
        type=int,
        default=_default(env, "metrics_port", int),
        help="port of the operator's Prometheus endpoint (0: none)",
    )
    parser.add_argument(
        "--driver-metrics-port",
        type=int,
        default=_default(env, "driver_metrics_port", int),
        help="port of the driver pods' Prometheus endpoint (0: none)",
    )
    parser.add_argument(
        "--liveness-port",
        type=int,
        default=_default(env, "liveness_port", int),
        help="port of the /healthz liveness endpoint (0: none)",
    )


def _default(env: Mapping[str, str], dest: str, convert: Callable[[str], object] = str) -> object:
    """The flag's variable in ``env``, converted, else the :class:`OperatorSettings` default."""
    text = env.get(FLAG_VARIABLES[dest])
    return getattr(OperatorSettings, dest) if text is None else convert(text)


def parse_settings(argv: Sequence[str] | None, env: Mapping[str, str]) -> OperatorSettings:
    """The settings ``argv`` asks for, with defaults from ``env`` (the operator's environment)."""
    parser = build_parser(env)
    args = parser.parse_args(argv)
    listed = env.get(FLAG_VARIABLES["namespace"], "")
    watch = args.namespace or [n for n in listed.split(",") if n]
    images = args.allowed_image or env.get(FLAG_VARIABLES["allowed_image"], "").split(",")
    settings = OperatorSettings(
        namespaces=tuple(watch),
        allowed_images=tuple(i.strip() for i in images if i.strip()),
        spark_master=args.spark_master,
        driver_service_account=args.driver_service_account,
        scheduler_name=args.scheduler_name,
        metrics_port=args.metrics_port,
        driver_metrics_port=args.driver_metrics_port,
        liveness_port=args.liveness_port,
        resync_seconds=args.resync_seconds,
        stall_seconds=args.stall_seconds,
        binlog_expiry_margin_seconds=args.binlog_expiry_margin_seconds,
        binlog_expiry_margin_files=args.binlog_expiry_margin_files,
        instance=env.get(INSTANCE_VARIABLE) or OperatorSettings.instance,
        leader_election=args.leader_election,
        leader_election_name=args.leader_election_name,
        leader_election_namespace=args.leader_election_namespace,
        lease_duration=args.lease_duration,
        renew_deadline=args.renew_deadline,
        retry_period=args.retry_period,
    )
    problems = settings.lease_timing.problems() if settings.leader_election else []
    if problems:
        parser.error("; ".join(problems))
    return settings
