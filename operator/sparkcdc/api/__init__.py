"""The CdcPipeline API: pydantic models of spec and status, CRD generation, manifest loading.

The models are the single source of truth: the CRD under ``crds/`` and ``docs/reference.md`` are
generated from them. Python attributes are snake_case, YAML/JSON keys camelCase.
"""

from sparkcdc.api.base import ApiModel, SecretKeyRef, SpecError
from sparkcdc.api.errors import ManifestError, SecretRefError
from sparkcdc.api.resource import API_VERSION, GROUP, KIND, PLURAL, VERSION, CdcPipeline, ObjectMeta
from sparkcdc.api.sinks import ChangelogSink, ConsoleSink, DeltaSink, JdbcSink, Sink
from sparkcdc.api.source import SourceSpec, StartupSpec, TlsSpec, parse_server_id_range
from sparkcdc.api.spec import (
    BinlogSpec,
    CdcPipelineSpec,
    DistributionFactor,
    DriverResources,
    ExecutorResources,
    RestartPolicy,
    SnapshotSpec,
    SparkSpec,
    memory_mib,
)
from sparkcdc.api.status import CdcPipelineStatus, Condition, DriverStatus, Progress

__all__ = [
    "API_VERSION",
    "GROUP",
    "KIND",
    "PLURAL",
    "VERSION",
    "ApiModel",
    "BinlogSpec",
    "CdcPipeline",
    "CdcPipelineSpec",
    "CdcPipelineStatus",
    "ChangelogSink",
    "Condition",
    "ConsoleSink",
    "DeltaSink",
    "DistributionFactor",
    "DriverResources",
    "DriverStatus",
    "ExecutorResources",
    "JdbcSink",
    "ManifestError",
    "ObjectMeta",
    "Progress",
    "RestartPolicy",
    "SecretKeyRef",
    "SecretRefError",
    "Sink",
    "SnapshotSpec",
    "SourceSpec",
    "SparkSpec",
    "SpecError",
    "StartupSpec",
    "TlsSpec",
    "memory_mib",
    "parse_server_id_range",
]
