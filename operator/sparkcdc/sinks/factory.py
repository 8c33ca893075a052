"""Turning a pipeline's ``spec.sink`` (with its password resolved) into a sink configuration."""

from __future__ import annotations

from sparkcdc.api.sinks import ChangelogSink, ConsoleSink, DeltaSink, JdbcSink, Sink
from sparkcdc.mysql.tls import TlsSettings
from sparkcdc.sinks.base import SinkConfig, SinkError
from sparkcdc.sinks.changelog import ChangelogSinkConfig
from sparkcdc.sinks.console import ConsoleSinkConfig
from sparkcdc.sinks.delta import DeltaSinkConfig
from sparkcdc.sinks.jdbc.config import JdbcSinkConfig


def sink_config(spec: Sink, password: str | None, tls_ca: str | None = None) -> SinkConfig:
    """``password`` and ``tls_ca`` (PEM): the JDBC sink's secrets, resolved by the caller."""
    if isinstance(spec, JdbcSink):
        url = spec.parsed_url
        tls = None if spec.tls is None else TlsSettings(spec.tls.mode, tls_ca, "spec.sink.tls")
        return JdbcSinkConfig(
            scheme=url.scheme,
            host=url.host,
            port=url.port,
            database=url.database,
            user=spec.user,
            password=password or "",
            batch_rows=spec.batch_rows,
            create_tables=spec.create_tables,
            bulk_load=spec.bulk_load,
            params=dict(url.params),
            tls=tls,
        )
    if isinstance(spec, ChangelogSink):
        return ChangelogSinkConfig(spec.path)
    if isinstance(spec, ConsoleSink):
        return ConsoleSinkConfig(spec.max_rows_per_table)
    if isinstance(spec, DeltaSink):
        return DeltaSinkConfig(
            path=spec.path,
            partition_by=tuple((table, tuple(cols)) for table, cols in sorted(spec.partition_by.items())),
            table_properties=tuple(sorted(spec.table_properties.items())),
            change_data_feed=spec.change_data_feed,
            optimize_every_commits=spec.optimize_every_commits,
            merge_schema=spec.merge_schema,
        )
    raise SinkError(f"spec.sink.type: unknown sink {type(spec).__name__}")
