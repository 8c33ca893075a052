"""Operator-wide settings: command-line flags with environment-variable defaults."""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sparkcdc.controller.builders import DEFAULT_SPARK_MASTER, DRIVER_METRICS_PORT


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


def parse_settings(argv: Sequence[str] | None, env: Mapping[str, str]) -> OperatorSettings:
    """The settings ``argv`` asks for, with defaults from ``env`` (the operator's environment)."""
    parser = argparse.ArgumentParser(prog="sparkcdc operator", description="Run the CdcPipeline operator.")
    parser.add_argument(
        "--namespace",
        "-n",
        action="append",
        default=[],
        help="watch this namespace (repeatable); default: all",
    )
    parser.add_argument("--spark-master", default=env.get("SPARKCDC_SPARK_MASTER", DEFAULT_SPARK_MASTER))
    parser.add_argument(
        "--driver-service-account", default=env.get("SPARKCDC_DRIVER_SERVICE_ACCOUNT", "sparkcdc-driver")
    )
    parser.add_argument("--scheduler-name", default=env.get("SPARKCDC_SCHEDULER_NAME") or None)
    parser.add_argument("--metrics-port", type=int, default=int(env.get("SPARKCDC_METRICS_PORT", "8080")))
    parser.add_argument(
        "--driver-metrics-port",
        type=int,
        default=int(env.get("SPARKCDC_DRIVER_METRICS_PORT", str(DRIVER_METRICS_PORT))),
        help="port of the driver pods' Prometheus endpoint (0: none)",
    )
    parser.add_argument("--liveness-port", type=int, default=int(env.get("SPARKCDC_LIVENESS_PORT", "0")))
    parser.add_argument(
        "--resync-seconds", type=float, default=float(env.get("SPARKCDC_RESYNC_SECONDS", "30"))
    )
    parser.add_argument(
        "--stall-seconds", type=float, default=float(env.get("SPARKCDC_STALL_SECONDS", "600"))
    )
    args = parser.parse_args(argv)
    watch = args.namespace or [n for n in env.get("SPARKCDC_WATCH_NAMESPACES", "").split(",") if n]
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
        instance=env.get("HOSTNAME") or OperatorSettings.instance,
    )
