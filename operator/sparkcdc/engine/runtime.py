"""A pipeline with its secrets resolved: what the driver needs to connect to source and sink."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pydantic import SecretStr

from sparkcdc.api.base import SecretKeyRef
from sparkcdc.api.resource import CdcPipeline
from sparkcdc.api.sinks import JdbcSink
from sparkcdc.mysql.connection import SourceConfig
from sparkcdc.options import EngineOptions
from sparkcdc.sinks.base import SinkConfig
from sparkcdc.sinks.factory import sink_config

# Resolves a secret reference found at a field path (e.g. spec.source.passwordSecretRef).
SecretResolver = Callable[[SecretKeyRef, str], SecretStr]


@dataclass(frozen=True)
class PipelineRuntime:
    pipeline: CdcPipeline
    source: SourceConfig
    sink: SinkConfig
    options: EngineOptions = field(default_factory=EngineOptions)  # the engine's switches

    @property
    def name(self) -> str:
        return self.pipeline.metadata.name


def build_runtime(
    pipeline: CdcPipeline, resolve: SecretResolver, options: EngineOptions | None = None
) -> PipelineRuntime:
    """The runtime of ``pipeline`` with its secrets resolved and the engine's ``options`` (built
    at the composition root; default: the production choices)."""
    options = options or EngineOptions()
    spec = pipeline.spec
    source_password = resolve(spec.source.password_secret_ref, "spec.source.passwordSecretRef")
    ca_pem: str | None = None
    if spec.source.tls.ca_secret_ref is not None:
        ca_pem = resolve(spec.source.tls.ca_secret_ref, "spec.source.tls.caSecretRef").get_secret_value()
    source = SourceConfig(
        host=spec.source.host,
        port=spec.source.port,
        user=spec.source.user,
        password=source_password.get_secret_value(),
        server_time_zone=spec.source.server_time_zone,
        tls_mode=spec.source.tls.mode,
        ca_pem=ca_pem,
        connect_timeout=spec.source.connect_timeout_seconds,
        chunk_reader=options.chunk_reader,
    )
    sink_password: str | None = None
    sink_ca: str | None = None
    if isinstance(spec.sink, JdbcSink):
        sink_password = resolve(
            spec.sink.password_secret_ref, "spec.sink.passwordSecretRef"
        ).get_secret_value()
        if spec.sink.tls is not None and spec.sink.tls.ca_secret_ref is not None:
            sink_ca = resolve(spec.sink.tls.ca_secret_ref, "spec.sink.tls.caSecretRef").get_secret_value()
    return PipelineRuntime(pipeline, source, sink_config(spec.sink, sink_password, sink_ca), options)
