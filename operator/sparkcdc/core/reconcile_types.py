"""What ``reconcile`` reads and returns: views of spec and status, the observation, the actions.

``core`` sits below ``api`` in the layers, so the spec and status arrive as structural views
(``Protocol``s the pydantic models satisfy) rather than as the models themselves.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Protocol

# -- views of the CdcPipeline models --------------------------------------------------------------


class RestartPolicyView(Protocol):
    @property
    def max_restarts(self) -> int | None: ...
    @property
    def initial_backoff_seconds(self) -> int: ...
    @property
    def max_backoff_seconds(self) -> int: ...
    @property
    def stable_seconds(self) -> int: ...
    @property
    def pending_timeout_seconds(self) -> int: ...


class StartupView(Protocol):
    @property
    def mode(self) -> str: ...


class SnapshotView(Protocol):
    @property
    def parallelism(self) -> int: ...


class SourceView(Protocol):
    @property
    def host(self) -> str: ...
    @property
    def server_id(self) -> str | None: ...


class SpecView(Protocol):
    @property
    def source(self) -> SourceView: ...
    @property
    def startup(self) -> StartupView: ...
    @property
    def snapshot(self) -> SnapshotView: ...
    @property
    def suspend(self) -> bool: ...
    @property
    def restart_policy(self) -> RestartPolicyView: ...
    @property
    def restart_nonce(self) -> str | None: ...
    @property
    def resnapshot_nonce(self) -> str | None: ...


class ConditionView(Protocol):
    @property
    def type(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def reason(self) -> str: ...
    @property
    def message(self) -> str: ...
    @property
    def last_transition_time(self) -> str | None: ...
    @property
    def observed_generation(self) -> int | None: ...


class CreateFailureView(Protocol):
    @property
    def reason(self) -> str: ...
    @property
    def message(self) -> str: ...
    @property
    def attempts(self) -> int: ...
    @property
    def at(self) -> str | None: ...


class DriverView(Protocol):
    @property
    def pod(self) -> str | None: ...
    @property
    def epoch(self) -> int: ...
    @property
    def restarts(self) -> int: ...
    @property
    def last_failure(self) -> str | None: ...
    @property
    def started_at(self) -> str | None: ...
    @property
    def create_failure(self) -> CreateFailureView | None: ...


class RetentionView(Protocol):
    """``status.progress.binlogRetention`` (api/status.py), judged by core/binlog_retention.py."""

    @property
    def needed_file(self) -> str: ...
    @property
    def current_file(self) -> str: ...
    @property
    def files_before(self) -> int: ...
    @property
    def expire_seconds(self) -> float | None: ...
    @property
    def purge_not_before(self) -> str | None: ...


class ProgressView(Protocol):
    @property
    def splits_total(self) -> int: ...
    @property
    def splits_finished(self) -> int: ...
    @property
    def binlog_offset(self) -> str | None: ...
    @property
    def lag_seconds(self) -> float | None: ...
    @property
    def last_commit_at(self) -> str | None: ...
    @property
    def binlog_retention(self) -> RetentionView | None: ...


class StatusView(Protocol):
    @property
    def phase(self) -> str | None: ...
    @property
    def observed_generation(self) -> int | None: ...
    @property
    def conditions(self) -> Sequence[ConditionView]: ...
    @property
    def driver(self) -> DriverView | None: ...
    @property
    def progress(self) -> ProgressView | None: ...
    @property
    def server_id_range(self) -> str | None: ...


# -- the observation -------------------------------------------------------------------------------


@dataclass(frozen=True)
class DriverPod:
    """One driver pod of the pipeline as the handler saw it (any epoch, possibly terminating)."""

    name: str
    created_at: datetime
    epoch: int | None = None  # sparkcdc.io/epoch annotation
    spec_hash: str | None = None  # sparkcdc.io/spec-hash annotation
    restart_nonce: str | None = None
    resnapshot_nonce: str | None = None
    phase: str = "Pending"  # Pending, Running, Succeeded, Failed, Unknown
    deleting: bool = False  # metadata.deletionTimestamp is set
    started_at: datetime | None = None  # the container's running.startedAt
    finished_at: datetime | None = None
    exit_code: int | None = None  # of a terminated container
    termination_reason: str | None = None
    termination_message: str | None = None
    waiting_reason: str | None = None  # e.g. ImagePullBackOff, CreateContainerConfigError
    waiting_message: str | None = None
    unschedulable: str | None = None  # PodScheduled=False message


@dataclass(frozen=True)
class Observed:
    """Everything ``reconcile`` needs besides spec and status; gathered by the handler."""

    pipeline: str  # metadata.name
    generation: int
    spec_hash: str  # hash of the current spec (controller.builders.spec_hash)
    pods: tuple[DriverPod, ...] = ()
    service_exists: bool = False
    deleting: bool = False  # the CdcPipeline has a deletionTimestamp
    last_progress_at: datetime | None = None  # when status.progress last changed, as far as known
    # Server-id ranges of other pipelines on the same source host; None when not looked up.
    server_ids_in_use: tuple[tuple[int, int], ...] | None = None


@dataclass(frozen=True)
class Settings:
    """Operator-wide tunables of the decisions."""

    stall_seconds: float = 600.0  # no progress for this long -> Stalled
    crash_looping_after: int = 2  # consecutive failures that make the CrashLooping condition
    server_id_block: int = 64  # size of an assigned server-id range
    server_id_base: int = 1_000_000  # where assigned ranges start (away from hand-picked replica ids)
    # BinlogExpiry warns this long before the needed binlog file may be purged by age ...
    binlog_expiry_margin_seconds: float = 6 * 3600.0
    # ... or while it is among this many oldest files the source keeps (0: never on that count)
    binlog_expiry_margin_files: int = 1


# -- actions ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PatchStatus:
    """A JSON merge patch of ``status`` (camelCase), guarded by the resourceVersion that was read."""

    fields: Mapping[str, Any]


@dataclass(frozen=True)
class CreateService:
    pass


@dataclass(frozen=True)
class CreatePod:
    epoch: int


@dataclass(frozen=True)
class DeletePod:
    name: str
    reason: str


@dataclass(frozen=True)
class Event:
    type: str  # Normal | Warning
    reason: str
    message: str


@dataclass(frozen=True)
class Requeue:
    seconds: float


Action = PatchStatus | CreateService | CreatePod | DeletePod | Event | Requeue


@dataclass
class Verdict:
    """The conditions and phase one reconcile arrives at (internal to ``reconcile``)."""

    phase: str
    ready: tuple[str, str, str]  # status, reason, message
    reconciling: tuple[str, str, str]
    stalled: tuple[str, str, str] | None = None  # None: keep what status says
    driver: dict[str, Any] = field(default_factory=dict)  # changes to status.driver


def format_time(moment: datetime) -> str:
    """RFC 3339 in UTC with a ``Z``, second precision: what Kubernetes writes."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)
