"""``CdcPipeline.status``: written by the operator, except ``checkpoint``, ``progress``,
``verification`` and the ``Verified`` condition (the driver)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, SerializationInfo, SerializerFunctionWrapHandler, model_serializer

from sparkcdc.api.base import StatusModel
from sparkcdc.api.verify import VerificationStatus

Phase = Literal["Pending", "Snapshotting", "Streaming", "Suspended", "Failed", "Completed"]
PHASES: tuple[Phase, ...] = ("Pending", "Snapshotting", "Streaming", "Suspended", "Failed", "Completed")


class Condition(StatusModel):
    """A Kubernetes-style condition."""

    type: str = Field(description="Condition type, e.g. Ready.")
    status: Literal["True", "False", "Unknown"] = Field(description="True, False or Unknown.")
    reason: str = Field(default="", description="CamelCase reason of the last transition.")
    message: str = Field(default="", description="Human-readable detail.")
    last_transition_time: str | None = Field(default=None, description="RFC 3339 time status last changed.")
    observed_generation: int | None = Field(default=None, description="Spec generation this reflects.")


class DriverCreateFailure(StatusModel):
    """The API server refused to create the driver pod; cleared once a driver pod exists."""

    reason: str = Field(
        description="QuotaExceeded, DriverPodForbidden, DriverPodInvalid, DriverAccountMissing or "
        "DriverPodCreateFailed."
    )
    message: str = Field(default="", description="The refusal, and what to do about it.")
    attempts: int = Field(
        default=1, description="Refusals in a row; the next attempt waits as restartPolicy's backoff."
    )
    at: str | None = Field(default=None, description="RFC 3339 time of the last refusal.")


class DriverStatus(StatusModel):
    """The current driver pod."""

    pod: str | None = Field(default=None, description="Driver pod name.")
    epoch: int = Field(
        default=0, description="Fencing token: only the driver started with this epoch may write status."
    )
    restarts: int = Field(default=0, description="Driver restarts since the pipeline was created.")
    last_failure: str | None = Field(default=None, description="Why the previous driver ended.")
    started_at: str | None = Field(default=None, description="RFC 3339 time the driver was started.")
    create_failure: DriverCreateFailure | None = Field(
        default=None, description="Why the driver pod could not be created, while it cannot."
    )


class FailedTable(StatusModel):
    """A captured table that stopped while the others go on."""

    table: str = Field(description='The table, "db.table".')
    error: str = Field(default="", description="Why it stopped (statement, column) and how to resnapshot it.")


class BinlogRetention(StatusModel):
    """What the driver last saw of the source's binlog retention for the file the pipeline needs;
    the operator's ``BinlogExpiry`` condition judges it, also while no driver runs."""

    needed_file: str = Field(description="The binlog file the checkpoint resumes from.")
    current_file: str = Field(description="The file the source wrote when observed.")
    files_before: int = Field(default=0, description="Retained binlog files older than neededFile.")
    expire_seconds: float | None = Field(
        default=None,
        description="The source's age-based retention in seconds (binlog_expire_logs_seconds); unset: none.",
    )
    purge_not_before: str | None = Field(
        default=None,
        description="Earliest time (RFC 3339) an age-based purge may remove neededFile (a lower bound).",
    )
    observed_at: str | None = Field(default=None, description="When the driver looked (RFC 3339).")


class Progress(StatusModel):
    """Progress reported by the driver with each checkpoint."""

    splits_total: int = Field(default=0, description="Snapshot splits planned.")
    splits_finished: int = Field(default=0, description="Snapshot splits committed to the sink.")
    splits_display: str | None = Field(
        default=None, description='"finished/total", for kubectl get. Derived when written.'
    )
    rows_snapshotted: int = Field(default=0, description="Rows written by the snapshot.")
    events_applied: int = Field(default=0, description="Binlog row events applied to the sink.")
    lag_seconds: float | None = Field(default=None, description="Age of the newest applied event.")
    last_commit_at: str | None = Field(
        default=None,
        description="When the binlog phase last committed a batch (RFC 3339), heartbeats of an idle "
        "source included: the operator's proof that a streaming driver is alive (Stalled: NoProgress).",
    )
    binlog_offset: str | None = Field(default=None, description="Binlog position committed (file:pos).")
    gtid_position: str | None = Field(
        default=None, description="GTID position at the committed binlog position (followed on failover)."
    )
    source: str | None = Field(
        default=None,
        description="The source server read from: flavor, address, server_id and server_uuid or GTID domain.",
    )
    tables: int = Field(default=0, description="Tables captured.")
    binlog_retention: BinlogRetention | None = Field(
        default=None, description="The source's retention of the binlog this pipeline needs."
    )
    warnings: list[str] = Field(default_factory=list, description="Conditions worth a look, newest last.")
    failed_tables: list[FailedTable] = Field(
        default_factory=list,
        description="Tables that stopped (rows the sink refused, undecodable rows, unsupported DDL) while "
        "the others go on; they stay stopped until resnapshotted (resnapshotNonce, resnapshotTables).",
    )

    @model_serializer(mode="wrap")
    def _with_display(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        # Derived on every dump, so a model_copy(update=...) that changes the counts can't leave it
        # stale, and exclude_none can't drop it.
        data = handler(self)
        if isinstance(data, dict) and self.splits_total > 0:
            key = "splitsDisplay" if info.by_alias else "splits_display"
            data[key] = f"{self.splits_finished}/{self.splits_total}"
        return data


class CdcPipelineStatus(StatusModel):
    """Observed state of a pipeline."""

    phase: Phase | None = Field(default=None, description="Lifecycle phase.")
    observed_generation: int | None = Field(default=None, description="Last spec generation acted on.")
    conditions: list[Condition] = Field(
        default_factory=list,
        description="Current conditions.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )
    driver: DriverStatus | None = Field(default=None, description="The driver pod.")
    checkpoint: dict[str, Any] | None = Field(
        default=None,
        description="The driver's versioned checkpoint (splits, watermarks, binlog offset); opaque here.",
    )
    progress: Progress | None = Field(default=None, description="Progress.")
    server_id_range: str | None = Field(default=None, description="Server ids assigned to this pipeline.")
    verification: VerificationStatus | None = Field(
        default=None, description="The last verification (spec.verifyNonce) and its result."
    )

    def condition(self, type_: str) -> Condition | None:
        """The condition of this type, if present."""
        return next((c for c in self.conditions if c.type == type_), None)
