"""Operator-wide settings: command-line flags with environment-variable defaults.

:data:`FLAG_VARIABLES` names each flag's variable once: :func:`build_parser` takes the defaults from
it, and docs/configuration.md (``sparkcdc.configuration``) lists it next to the flag.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from sparkcdc.controller.builders import DEFAULT_SPARK_MASTER, DRIVER_METRICS_PORT

# The variable of each flag, by the flag's dest, in the order of --help: read when the flag is not
# given. SPARKCDC_WATCH_NAMESPACES is a comma-separated list (--namespace is repeated instead).
FLAG_VARIABLES: dict[str, str] = {
    "namespace": "SPARKCDC_WATCH_NAMESPACES",
    "spark_master": "SPARKCDC_SPARK_MASTER",
    "driver_service_account": "SPARKCDC_DRIVER_SERVICE_ACCOUNT",
    "scheduler_name": "SPARKCDC_SCHEDULER_NAME",
    "metrics_port": "SPARKCDC_METRICS_PORT",
    "driver_metrics_port": "SPARKCDC_DRIVER_METRICS_PORT",
    "liveness_port": "SPARKCDC_LIVENESS_PORT",
    "resync_seconds": "SPARKCDC_RESYNC_SECONDS",
    "stall_seconds": "SPARKCDC_STALL_SECONDS",
}
# Not a flag: Kubernetes sets it to the pod's name, which tells replicas apart in Events.
INSTANCE_VARIABLE = "HOSTNAME"


@dataclass(frozen=True)
class OperatorSettings:
    namespaces: tuple[str, ...] = ()  # empty: all namespaces
    spark_master: str = DEFAULT_SPARK_MASTER  # for pipelines whose spec.spark.master is unset
    driver_service_account: str = "sparkcdc-driver"
    scheduler_name: str | None = None  # e.g. the test node runner's scheduler
    metrics_port: int = 8080  # 0: no metrics endpoint
    driver_metrics_port: int = DRIVER_METRICS_PORT  # the driver pods' metrics endpoint; 0: none
    liveness_port: int = 0  # 0: no kopf liveness endpoint
    resync_seconds: float = 30.0  # periodic reconcile of every pipeline
    stall_seconds: float = 600.0  # no progress for this long -> Stalled
    instance: str = "sparkcdc-operator"  # this replica in the Events it posts ($HOSTNAME: the pod)


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
    return parser


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
    args = build_parser(env).parse_args(argv)
    listed = env.get(FLAG_VARIABLES["namespace"], "")
    watch = args.namespace or [n for n in listed.split(",") if n]
    return OperatorSettings(
        namespaces=tuple(watch),
        spark_master=args.spark_master,
        driver_service_account=args.driver_service_account,
        scheduler_name=args.scheduler_name,
        metrics_port=args.metrics_port,
        driver_metrics_port=args.driver_metrics_port,
        liveness_port=args.liveness_port,
        resync_seconds=args.resync_seconds,
        stall_seconds=args.stall_seconds,
        instance=env.get(INSTANCE_VARIABLE) or OperatorSettings.instance,
    )
