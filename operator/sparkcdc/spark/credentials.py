"""Object-store credentials (``spec.sink.credentials``) in the Spark session's Hadoop configuration.

The values come from Secrets, resolved at the composition roots (the driver pod's environment,
filled by ``secretKeyRef`` only; a manifest's Secret documents for ``sparkcdc run``). They are
not passed as ``spark.hadoop.<key>`` settings when the session is created, although that is the
usual way: PySpark starts its JVM with every setting as a ``--conf key=value`` argument, readable
in the process list, and Spark keeps the settings in its SparkConf (the Environment page, event
logs), where its redaction pattern misses keys such as ``fs.azure.account.key.*``. Instead they
are set on the running context's Hadoop configuration (what ``spark.hadoop.*`` ends up in), the
base of every session's: a Delta read or write builds its job's configuration from it and
ships that to the executors' tasks over Spark's authenticated, encrypted RPC.

The values cross the local Py4J socket, whose DEBUG log prints every command it sends; that
logger is kept at INFO or above. With no credentials the connector's default provider chain
applies (IRSA, GKE or Azure workload identity, instance profiles): nothing is set.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import SecretStr

from sparkcdc.api.base import SecretKeyRef
from sparkcdc.api.sinks import DeltaSink, Sink
from sparkcdc.sinks.base import SinkError

__all__ = ["HadoopCredentials", "merged_credentials", "sink_credentials"]

# Resolves a secret reference found at a field path; the contract of engine.runtime.SecretResolver.
Resolver = Callable[[SecretKeyRef, str], SecretStr]
_PY4J_LOGGER = "py4j"


@dataclass(frozen=True)
class HadoopCredentials:
    """Hadoop options and their secret values; ``repr`` shows the keys only."""

    options: tuple[tuple[str, SecretStr], ...] = ()

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(key for key, _ in self.options)

    def apply(self, context: Any) -> None:
        """Set the options on ``context``'s (a SparkContext's) Hadoop configuration."""
        if not self.options:
            return
        py4j = logging.getLogger(_PY4J_LOGGER)
        if py4j.getEffectiveLevel() < logging.INFO:
            py4j.setLevel(logging.INFO)
        hadoop = context._jsc.hadoopConfiguration()
        for key, value in self.options:
            hadoop.set(key, value.get_secret_value())


def sink_credentials(sink: Sink, resolve: Resolver) -> HadoopCredentials:
    """The resolved ``spec.sink.credentials``. Field paths are those of ``CdcPipeline.secret_refs``,
    by which the pod builder named the environment variables the driver resolves from."""
    if not isinstance(sink, DeltaSink):
        return HadoopCredentials()
    return HadoopCredentials(
        tuple(
            (c.key, resolve(c.secret_key_ref, f"spec.sink.credentials[{index}].secretKeyRef"))
            for index, c in enumerate(sink.credentials)
        )
    )


def merged_credentials(named: Iterable[tuple[str, HadoopCredentials]]) -> HadoopCredentials:
    """One session's credentials from several pipelines' (``sparkcdc run`` with many manifests
    shares one Spark session). A key given different values by two pipelines is refused."""
    chosen: dict[str, tuple[str, SecretStr]] = {}
    for pipeline, credentials in named:
        for key, value in credentials.options:
            earlier = chosen.setdefault(key, (pipeline, value))
            if earlier[1].get_secret_value() != value.get_secret_value():
                raise SinkError(
                    f"spec.sink.credentials: pipelines {earlier[0]} and {pipeline} give {key} different "
                    "values, and one run shares one Spark session: run them separately, or use "
                    "per-bucket options (fs.s3a.bucket.BUCKET.secret.key)"
                )
    return HadoopCredentials(tuple((key, value) for key, (_, value) in chosen.items()))
