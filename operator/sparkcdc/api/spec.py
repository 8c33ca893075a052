"""``CdcPipeline.spec``: snapshot, binlog, Spark and restart settings, and the spec itself."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, ConfigDict, Field, StringConstraints, field_validator, model_validator
from pydantic.config import JsonDict

from sparkcdc.api.base import ApiModel, SpecError, Str253, Str4096, cel, cel_or_default
from sparkcdc.api.routing import RouteSpec, TransformSpec, build_routing
from sparkcdc.api.sinks import ColumnList, DeltaSink, Sink
from sparkcdc.api.source import SourceSpec, StartupSpec, TableName
from sparkcdc.api.spark_conf import check_spark_conf, conf_rules
from sparkcdc.api.verify import VerifySpec
from sparkcdc.core.routing import Routing, excluded, find_collisions
from sparkcdc.core.tables import TableId, is_table_pattern

DEFAULT_SPARK_IMAGE = "ghcr.io/sparkcdc/sparkcdc-spark:0.1.0"
# Spark's units (k, m, g, t are binary: 1g = 1024m), and Kubernetes' binary suffixes (Ki, Mi, Gi, Ti).
MEMORY_PATTERN = r"^[1-9][0-9]{0,8}(k|m|g|t|K|M|G|T|Ki|Mi|Gi|Ti)$"
_MEMORY_RX = re.compile(MEMORY_PATTERN)
_MEMORY_KIB = {"k": 1, "m": 1024, "g": 1024**2, "t": 1024**3}
MASTER_PATTERN = r"^(local(\[([1-9][0-9]*|\*)(,[1-9][0-9]*)?\])?|k8s://.+|spark://.+)$"
_MASTER_RX = re.compile(MASTER_PATTERN)

_MEMORY_SCHEMA: JsonDict = {"pattern": MEMORY_PATTERN}


def memory_mib(quantity: str) -> int:
    """MiB in a memory setting, rounded up: ``"1g"`` -> 1024, ``"512m"`` -> 512, ``"2Gi"`` -> 2048.

    Lower-case ``m`` means mebibytes as in Spark, not Kubernetes' milli: the value is Spark's setting,
    and the pod's memory request is derived from it.
    """
    match = _MEMORY_RX.match(quantity)
    if match is None:
        raise SpecError(f"{quantity!r} is not a memory size; expected e.g. 512m, 1g or 2Gi")
    number = int(quantity[: match.start(1)])
    kib = number * _MEMORY_KIB[match.group(1)[0].lower()]
    return -(-kib // 1024)


def _check_memory(value: str) -> str:
    memory_mib(value)
    return value


Memory = Annotated[str, StringConstraints(min_length=2, max_length=16), AfterValidator(_check_memory)]


class DistributionFactor(ApiModel):
    """Bounds of ``(max - min + 1) / rows`` within which a numeric key is split evenly (architecture §3.1)."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                cel(
                    f"{cel_or_default('lower', '0.05')} <= {cel_or_default('upper', '1000.0')}",
                    "lower must not be greater than upper",
                )
            ]
        }
    )

    lower: float = Field(default=0.05, gt=0, description="Lower bound.")
    upper: float = Field(default=1000.0, gt=0, description="Upper bound.")

    @model_validator(mode="after")
    def _ordered(self) -> DistributionFactor:
        if self.lower > self.upper:
            raise SpecError(f"lower ({self.lower}) must not be greater than upper ({self.upper})")
        return self


class SnapshotSpec(ApiModel):
    """How the initial snapshot is split and read."""

    chunk_size: int = Field(default=8096, gt=0, le=100_000_000, description="Rows per split.")
    parallelism: int = Field(default=4, ge=1, le=1024, description="Splits read at the same time.")
    fetch_size: int = Field(default=10000, gt=0, le=1_000_000, description="Rows fetched per round trip.")
    chunk_key_columns: dict[TableName, ColumnList] = Field(
        default_factory=dict,
        max_length=1024,
        description='Split key columns per table, keyed by "db.table"; default: the primary key, else '
        "the narrowest unique NOT NULL key. Any columns may be named, also of a table without a key: "
        "when they are not a unique NOT NULL key, rows are identified in the sink by the chunk key "
        "followed by sinkKeyColumns, or by the table's primary key, or else by all columns "
        "(docs/reference.md, tables without a primary key).",
    )
    sink_key_columns: dict[TableName, ColumnList] = Field(
        default_factory=dict,
        max_length=1024,
        description='Columns that identify a row in the sink, per "db.table", for a table without a '
        "primary key or unique NOT NULL key; the target's key is the chunk key followed by these. "
        "Default: all columns.",
    )
    even_distribution_factor: DistributionFactor = Field(
        default_factory=DistributionFactor,
        description="When a numeric key is split evenly instead of by querying chunk ends.",
    )
    read_in_driver: Literal["auto", "never", "always"] = Field(
        default="auto",
        description="Where snapshot splits are read. auto: the driver reads the first waves itself "
        "while Spark (on Kubernetes: its executor pods) starts, and hands the rest to Spark once it "
        "is up and the remaining splits are worth it; never: every wave on Spark, which starts at "
        "once; always: every wave in the driver, Spark is not started. A Delta sink on an object "
        "store always uses Spark; on a local path its waves stay in the driver under a local "
        "master (delta-rs appends them).",
    )
    splits_per_task: int = Field(
        default=4,
        ge=1,
        le=1024,
        description=(
            "Splits one Spark task reads per wave. Left unset, waves start at 4 and grow while a wave "
            "takes under 2 s (checkpoints every few seconds); set, every wave uses it."
        ),
    )


class BinlogSpec(ApiModel):
    """How the binlog is streamed."""

    batch_rows: int = Field(
        default=10000, gt=0, le=10_000_000, description="Most row events per micro-batch."
    )
    batch_interval_ms: int = Field(default=500, gt=0, le=3_600_000, description="Longest micro-batch wait.")
    heartbeat_interval_seconds: int = Field(
        default=30, gt=0, le=3600, description="Replication heartbeat period; keeps lag accurate when idle."
    )
    parallel_catchup_threshold_bytes: int = Field(
        default=256 * 1024 * 1024,
        ge=0,
        description="Binlog backlog above which ranges are decoded by parallel Spark tasks, at the start and "
        "whenever the live reader falls this far behind; 0 turns it off.",
    )


class DriverResources(ApiModel):
    """Resources of the Spark driver pod."""

    cores: int = Field(default=1, ge=1, le=64, description="CPU cores.")
    memory: Memory = Field(
        default="1g",
        description="Memory (Spark units: 512m, 1g; or 2Gi); locally, the heap of sparkcdc run's JVM "
        "(the largest of its pipelines').",
        json_schema_extra=_MEMORY_SCHEMA,
    )


class ExecutorResources(ApiModel):
    """Resources and count of Spark executors."""

    cores: int = Field(default=1, ge=1, le=64, description="CPU cores per executor.")
    memory: Memory = Field(
        default="1g",
        description="Memory per executor (Spark units: 512m, 1g; or 2Gi).",
        json_schema_extra=_MEMORY_SCHEMA,
    )
    instances: int = Field(default=2, ge=1, le=1000, description="Number of executors.")


class SparkSpec(ApiModel):
    """The Spark application that runs the pipeline."""

    image: Annotated[str, StringConstraints(min_length=1, max_length=512)] = Field(
        default=DEFAULT_SPARK_IMAGE, description="Image of the driver and executor pods."
    )
    image_pull_policy: Literal["Always", "IfNotPresent", "Never"] | None = Field(
        default=None, description="Pull policy of the image; unset: the Kubernetes default."
    )
    master: Annotated[str, StringConstraints(min_length=1, max_length=256)] | None = Field(
        default=None,
        description="Spark master; unset: Kubernetes, in the driver's cluster. local[N] runs Spark "
        "inside the driver pod.",
        json_schema_extra={"pattern": MASTER_PATTERN},
    )
    driver: DriverResources = Field(default_factory=DriverResources, description="Driver resources.")
    executor: ExecutorResources = Field(default_factory=ExecutorResources, description="Executor resources.")
    conf: dict[str, Str4096] = Field(
        default_factory=dict,
        max_length=256,
        description="Extra Spark configuration (spark.* keys). Keys that decide where and how the pods "
        "run or what code they load (spark.kubernetes.*, spark.master, spark.jars*, ...) and keys "
        "that look like credentials are refused (docs/install.md, Security model).",
        json_schema_extra={"x-kubernetes-validations": conf_rules()},
    )

    @field_validator("conf")
    @classmethod
    def _check_conf(cls, value: dict[str, str]) -> dict[str, str]:
        check_spark_conf(value)
        return value

    @field_validator("master")
    @classmethod
    def _check_master(cls, value: str | None) -> str | None:
        if value is not None and not _MASTER_RX.match(value):
            raise SpecError(
                f"{value!r} is not a supported Spark master; expected local, local[N], local[*], "
                "k8s://URL or spark://URL (unset: this Kubernetes cluster)"
            )
        return value


class RestartPolicy(ApiModel):
    """How the operator restarts a failed driver."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                cel(
                    f"{cel_or_default('initialBackoffSeconds', '10')}"
                    f" <= {cel_or_default('maxBackoffSeconds', '300')}",
                    "initialBackoffSeconds must not be greater than maxBackoffSeconds",
                )
            ]
        }
    )

    max_restarts: int | None = Field(
        default=None, ge=0, description="Restarts before the pipeline is Failed; unset: no limit."
    )
    initial_backoff_seconds: int = Field(default=10, ge=1, le=86400, description="First restart delay.")
    max_backoff_seconds: int = Field(default=300, ge=1, le=86400, description="Longest restart delay.")
    stable_seconds: int = Field(
        default=600, ge=0, le=86400, description="Run time after which the backoff resets."
    )
    pending_timeout_seconds: int = Field(
        default=300, ge=1, le=86400, description="How long the driver pod may stay Pending before a restart."
    )

    @model_validator(mode="after")
    def _ordered(self) -> RestartPolicy:
        if self.initial_backoff_seconds > self.max_backoff_seconds:
            raise SpecError(
                f"must not be greater than maxBackoffSeconds ({self.max_backoff_seconds})",
                loc=("initialBackoffSeconds",),
            )
        return self


def _captured(name: str, entries: list[str]) -> bool:
    for entry in entries:
        if is_table_pattern(entry):
            if re.fullmatch(entry, name):
                return True
        elif entry == name:
            return True
    return False


class CdcPipelineSpec(ApiModel):
    """A change-data-capture pipeline from one MySQL server to one sink."""

    source: SourceSpec = Field(description="The source server and tables.")
    startup: StartupSpec = Field(default_factory=StartupSpec, description="Where reading starts.")
    snapshot: SnapshotSpec = Field(default_factory=SnapshotSpec, description="Snapshot settings.")
    sink: Sink = Field(description="Where the replica is written; type selects the kind.")
    transforms: list[TransformSpec] = Field(
        default_factory=list,
        max_length=256,
        description="Column rules for chosen tables (the first matching entry applies). E.g. "
        '[{sourceTables: "shop\\\\.customers", excludeColumns: [notes], maskColumns: {email: sha256}}].',
    )
    routes: list[RouteSpec] = Field(
        default_factory=list,
        max_length=256,
        description="Targets for chosen tables, before sink.tableName; the first matching route wins. "
        'E.g. [{sourceTables: "shop_[0-9]+\\\\.orders", sinkTable: orders}] merges every shop_N.orders '
        "into one orders table keyed by (_source_db, _source_table, id).",
    )
    binlog: BinlogSpec = Field(default_factory=BinlogSpec, description="Binlog streaming settings.")
    spark: SparkSpec = Field(default_factory=SparkSpec, description="Spark settings.")
    suspend: bool = Field(default=False, description="Stop the driver, keeping the checkpoint.")
    restart_policy: RestartPolicy = Field(default_factory=RestartPolicy, description="Driver restarts.")
    state_policy: Literal["Delete", "Retain"] = Field(
        default="Delete",
        description="Delete: the checkpoint goes with the resource; Retain: kept, for a new resource "
        "of the same name to resume from.",
    )
    restart_nonce: Str253 | None = Field(
        default=None, description="Change to any new value to restart the driver."
    )
    resnapshot_nonce: Str253 | None = Field(
        default=None, description="Change to any new value to snapshot resnapshotTables again."
    )
    resnapshot_tables: list[TableName] = Field(
        default_factory=list,
        max_length=1024,
        description='Tables ("db.table") that a new resnapshotNonce snapshots again; empty: all.',
    )
    verify: VerifySpec = Field(
        default_factory=VerifySpec, description="What a new verifyNonce verifies, and whether it repairs."
    )
    verify_nonce: Str253 | None = Field(
        default=None,
        description="Change to any new value to verify the replica against its source while streaming "
        "goes on; the driver answers in status.verification and the Verified condition.",
    )

    @model_validator(mode="after")
    def _tables_are_captured(self) -> CdcPipelineSpec:
        entries = self.source.tables
        for table in self.snapshot.chunk_key_columns:
            if not _captured(table, entries):
                raise SpecError(
                    "table is not among source.tables", loc=("snapshot", "chunkKeyColumns", table)
                )
        for table in self.snapshot.sink_key_columns:
            if not _captured(table, entries):
                raise SpecError("table is not among source.tables", loc=("snapshot", "sinkKeyColumns", table))
        if isinstance(self.sink, DeltaSink):
            for table in self.sink.partition_by:
                if not _captured(table, entries):
                    raise SpecError(
                        "table is not among source.tables", loc=("sink", "delta", "partitionBy", table)
                    )
        for index, table in enumerate(self.resnapshot_tables):
            if not _captured(table, entries):
                raise SpecError("table is not among source.tables", loc=("resnapshotTables", index))
        return self

    @model_validator(mode="after")
    def _targets_apart(self) -> CdcPipelineSpec:
        """Two plain source.tables names into one target are refused here already; tables named
        by patterns are checked by the driver against the source's list (engine/discovery.py)."""
        named = [
            TableId.parse(entry)
            for entry in self.source.tables
            if not is_table_pattern(entry) and not excluded(TableId.parse(entry), self.source.exclude_tables)
        ]
        collisions = find_collisions(self.routing().targets(named))
        if collisions:
            raise SpecError(collisions[0].message(), loc=("source", "tables"))
        return self

    def routing(self) -> Routing:
        """Where each captured table is written (core/routing.py)."""
        table_name = getattr(self.sink, "table_name", "{db}.{table}")  # the console prints db.table
        metadata = list(getattr(self.sink, "metadata_columns", ()))
        soft = getattr(self.sink, "delete_mode", "hard") == "soft"
        return build_routing(table_name, self.routes, self.transforms, metadata, soft)
