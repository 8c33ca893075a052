"""The source database and where the pipeline starts reading it."""

from __future__ import annotations

import re
import string
import warnings
import zoneinfo
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    AwareDatetime,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)

from sparkcdc.api.base import (
    ApiModel,
    NonEmpty253,
    NonEmpty256,
    SecretKeyRef,
    SpecError,
    cel,
    cel_or_default,
    cel_string,
)
from sparkcdc.core.offsets import binlog_file_index
from sparkcdc.core.tables import is_table_pattern

MAX_SERVER_ID = 4294967295
SERVER_ID_PATTERN = r"^[0-9]{1,10}(-[0-9]{1,10})?$"
# Same language as SERVER_ID_PATTERN (the CRD's), with groups for the two ends.
_SERVER_ID_RX = re.compile(r"^([0-9]{1,10})(?:-([0-9]{1,10}))?$")
UTC_OFFSET_PATTERN = r"^[+-](0[0-9]|1[0-4]):[0-5][0-9]$"
_UTC_OFFSET_RX = re.compile(UTC_OFFSET_PATTERN)
BINLOG_FILE_PATTERN = r"^[^/]+\.[0-9]+$"

TlsMode = Literal["disabled", "preferred", "required", "verify-ca", "verify-identity"]
StartupMode = Literal["initial", "snapshot-only", "latest", "earliest", "specific-offset", "timestamp"]


def check_table_entry(entry: str) -> None:
    """A ``source.tables`` entry: ``db.table``, or a regular expression matching all of a ``db.table``."""
    if is_table_pattern(entry):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # FutureWarnings about odd but valid syntax
                re.compile(entry)
        except re.error as err:
            raise SpecError(f"{entry!r} is not a valid regular expression: {err}") from None
        return
    database, dot, table = entry.partition(".")
    if not dot or not database or not table:
        raise SpecError(f"{entry!r} must be db.table or a regular expression matching db.table")


def check_table_name(entry: str) -> None:
    """A plain ``db.table`` name (no patterns), as used for per-table settings."""
    database, dot, table = entry.partition(".")
    if not dot or not database or not table:
        raise SpecError(f"{entry!r} must be db.table")


def _table_entry(entry: str) -> str:
    check_table_entry(entry)
    return entry


def _table_name(entry: str) -> str:
    check_table_name(entry)
    return entry


# The characters that make an entry a regular expression (as the runtime decides), as an RE2 class.
TABLE_PATTERN_CHARS = "[" + "".join(re.escape(c) for c in string.printable if is_table_pattern(c)) + "]"
PLAIN_TABLE_PATTERN = r"^[^.]+[.].+$"
TABLE_ENTRY_RULE = cel(
    f"self.matches({cel_string(TABLE_PATTERN_CHARS)}) || self.matches({cel_string(PLAIN_TABLE_PATTERN)})",
    "must be db.table or a regular expression matching db.table",
)
# A source.tables entry, and a plain table name (per-table settings, resnapshotTables).
TableEntry = Annotated[
    str,
    StringConstraints(min_length=1, max_length=512),
    AfterValidator(_table_entry),
    Field(json_schema_extra={"x-kubernetes-validations": [TABLE_ENTRY_RULE]}),
]
TableName = Annotated[str, StringConstraints(min_length=1, max_length=512), AfterValidator(_table_name)]


def parse_server_id_range(text: str) -> tuple[int, int]:
    """``"5400"`` -> (5400, 5400); ``"5400-5404"`` -> (5400, 5404). Raises SpecError."""
    match = _SERVER_ID_RX.match(text)
    if match is None:
        raise SpecError(f'must be a server id like "5400" or a range like "5400-5404", got {text!r}')
    start = int(match.group(1))
    end = int(match.group(2)) if match.group(2) is not None else start
    for value in (start, end):
        if not 1 <= value <= MAX_SERVER_ID:
            raise SpecError(f"server ids must be between 1 and {MAX_SERVER_ID}, got {value}")
    if start > end:
        raise SpecError(f'range start {start} is greater than its end {end}; write it as "{end}-{start}"')
    return start, end


DEFAULT_TLS_MODE: TlsMode = "verify-identity"
_TLS_MODE = cel_or_default("mode", cel_string(DEFAULT_TLS_MODE))
TLS_MODE_DESCRIPTION = (
    "disabled: plain text; preferred: TLS when the server offers it, else plain text, certificate not "
    "checked; required: TLS without certificate checks; verify-ca: the server certificate must be signed "
    "by the CA in caSecretRef; verify-identity: signed by a trusted CA (caSecretRef, else the system's "
    "trust store) and naming the host."
)
CA_DESCRIPTION = (
    "PEM CA certificate(s) the server's certificate must chain to; required for verify-ca. Unset: "
    "verify-identity trusts the system's CA bundle."
)


class TlsSpec(ApiModel):
    """TLS for the connection to a database: the source's and the JDBC sink's."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                cel(
                    f"{_TLS_MODE} != 'verify-ca' || has(self.caSecretRef)",
                    "caSecretRef is required when mode is verify-ca",
                )
            ]
        }
    )

    mode: TlsMode = Field(default=DEFAULT_TLS_MODE, description=TLS_MODE_DESCRIPTION)
    ca_secret_ref: SecretKeyRef | None = Field(default=None, description=CA_DESCRIPTION)

    @model_validator(mode="after")
    def _needs_ca(self) -> TlsSpec:
        # verify-ca against the public trust store would accept any publicly certified server
        # under any name: only a CA of one's own makes it a check.
        if self.mode == "verify-ca" and self.ca_secret_ref is None:
            raise SpecError(
                f"required when mode is {self.mode} (a Secret key holding the PEM CA certificate)",
                loc=("caSecretRef",),
            )
        return self


class SourceSpec(ApiModel):
    """The MySQL or MariaDB server to capture changes from."""

    host: NonEmpty253 = Field(description="Host name or IP address of the server.")
    port: int = Field(default=3306, ge=1, le=65535, description="TCP port.")
    user: NonEmpty256 = Field(
        description="User with SELECT, RELOAD, REPLICATION SLAVE and REPLICATION CLIENT privileges."
    )
    password_secret_ref: SecretKeyRef = Field(description="The user's password.")
    tables: list[TableEntry] = Field(
        min_length=1,
        max_length=1024,
        description='Tables to capture: "db.table", or a regular expression that must match all of '
        '"db.table" (e.g. "shop\\\\.order_.*").',
    )
    exclude_tables: list[TableEntry] = Field(
        default_factory=list,
        max_length=1024,
        description='Tables left out of what tables captures: "db.table", or a regular expression that '
        'must match all of "db.table" (e.g. "shop\\\\..*_archive").',
    )
    server_id: Annotated[str, StringConstraints(max_length=21)] | None = Field(
        default=None,
        description='Replication server id or inclusive range ("5400" or "5400-5404"); parallel binlog '
        "readers each take one id of the range. Unset: the operator assigns a range.",
        json_schema_extra={
            "pattern": SERVER_ID_PATTERN,
            "x-kubernetes-validations": [
                # Guarded by the pattern so that a malformed value gets the pattern's message only.
                cel(
                    f"!self.matches({cel_string(SERVER_ID_PATTERN)})"
                    f" || self.split('-').all(p, int(p) >= 1 && int(p) <= {MAX_SERVER_ID})",
                    f"server ids must be between 1 and {MAX_SERVER_ID}",
                ),
                cel(
                    f"!self.matches({cel_string(SERVER_ID_PATTERN)}) || !self.contains('-')"
                    " || int(self.split('-')[0]) <= int(self.split('-')[1])",
                    "range start must not be greater than its end",
                ),
            ],
        },
    )
    server_time_zone: Annotated[str, StringConstraints(min_length=1, max_length=64)] | None = Field(
        default=None,
        description='Time zone of the server\'s TIMESTAMP values: an IANA name ("Europe/Berlin") or an '
        'offset ("+02:00"). Unset: the server\'s own time zone.',
    )
    tls: TlsSpec = Field(
        default_factory=TlsSpec,
        description="TLS to the source, used by every reader (queries, snapshot reads, binlog decoders). "
        "Default: verify-identity against the system's CAs.",
    )
    connect_timeout_seconds: int = Field(default=10, gt=0, le=3600, description="Connect timeout.")

    @field_validator("server_id")
    @classmethod
    def _check_server_id(cls, value: str | None) -> str | None:
        if value is not None:
            parse_server_id_range(value)
        return value

    @field_validator("server_time_zone")
    @classmethod
    def _check_time_zone(cls, value: str | None) -> str | None:
        if value is None or _UTC_OFFSET_RX.match(value):
            return value
        try:
            zoneinfo.ZoneInfo(value)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise SpecError(
                f"unknown time zone {value!r}; expected an IANA name like Europe/Berlin "
                "or an offset like +02:00"
            ) from None
        return value

    def server_id_range(self) -> tuple[int, int] | None:
        """The inclusive server id range, or None when the operator is to assign one."""
        return None if self.server_id is None else parse_server_id_range(self.server_id)


_START_MODE = cel_or_default("mode", cel_string("initial"))


class StartupSpec(ApiModel):
    """Where the pipeline starts: snapshot then binlog, binlog only, or snapshot only."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                cel(
                    f"{_START_MODE} != 'timestamp' || has(self.timestamp)",
                    "timestamp is required when mode is timestamp",
                ),
                cel(
                    f"{_START_MODE} != 'specific-offset' || (has(self.file) && has(self.position))"
                    " || has(self.gtidSet)",
                    "mode specific-offset needs file and position, or gtidSet",
                ),
                cel("has(self.file) == has(self.position)", "file and position must be given together"),
                cel(
                    f"{_START_MODE} == 'specific-offset'"
                    " || !(has(self.file) || has(self.position) || has(self.gtidSet))",
                    "file, position and gtidSet are only allowed when mode is specific-offset",
                ),
                cel(
                    f"{_START_MODE} == 'timestamp' || !has(self.timestamp)",
                    "timestamp is only allowed when mode is timestamp",
                ),
            ]
        }
    )

    mode: StartupMode = Field(
        default="initial",
        description="initial: snapshot, then stream the binlog; snapshot-only: snapshot and stop; "
        "latest: stream from the current binlog end; earliest: stream from the oldest binlog file; "
        "specific-offset: stream from file+position or gtidSet; timestamp: stream from the first "
        "event at or after timestamp.",
    )
    file: Annotated[str, StringConstraints(min_length=1, max_length=255)] | None = Field(
        default=None,
        description="Binlog file name (specific-offset).",
        json_schema_extra={"pattern": BINLOG_FILE_PATTERN},
    )
    position: int | None = Field(default=None, ge=4, description="Binlog position in file (specific-offset).")
    gtid_set: Annotated[str, StringConstraints(min_length=1, max_length=65536)] | None = Field(
        default=None, description="GTID set already applied (specific-offset)."
    )
    timestamp: AwareDatetime | None = Field(
        default=None,
        strict=False,
        description="RFC 3339 time with a zone offset (timestamp mode).",
        json_schema_extra={"maxLength": 64},
    )
    on_binlog_lost: Literal["fail", "resnapshot"] = Field(
        default="fail",
        description="What to do when the checkpointed binlog file was purged from the server.",
    )
    on_source_change: Literal["fail", "resnapshot"] = Field(
        default="fail",
        description="What to do when the source is not the server that wrote the checkpoint and the "
        "pipeline cannot follow it by GTID (GTIDs not recorded, a replica that lacks transactions "
        "already applied, a source restored from an older backup): fail naming both servers, or "
        "forget the progress and start over on the new server (mode initial: a new snapshot). A "
        "promoted replica that has every applied transaction is followed by GTID either way.",
    )

    @field_validator("file")
    @classmethod
    def _check_file(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                binlog_file_index(value)
            except ValueError:
                raise SpecError(
                    f"{value!r} is not a binlog file name; expected a name like mysql-bin.000003"
                ) from None
            if "/" in value:
                raise SpecError(f"{value!r} must be a file name without a directory")
        return value

    @model_validator(mode="after")
    def _check_mode(self) -> StartupSpec:
        offset_fields = {"file": self.file, "position": self.position, "gtidSet": self.gtid_set}
        if self.mode != "specific-offset":
            for name, value in offset_fields.items():
                if value is not None:
                    raise SpecError(
                        f"only allowed when mode is specific-offset (mode is {self.mode})", loc=(name,)
                    )
        if self.mode != "timestamp" and self.timestamp is not None:
            raise SpecError(f"only allowed when mode is timestamp (mode is {self.mode})", loc=("timestamp",))
        if self.mode == "timestamp" and self.timestamp is None:
            raise SpecError(
                "required when mode is timestamp (an RFC 3339 time with offset, e.g. 2024-05-01T12:00:00Z)",
                loc=("timestamp",),
            )
        if self.position is not None and self.file is None:
            raise SpecError("needs file (the binlog file the position is in)", loc=("position",))
        if self.file is not None and self.position is None:
            raise SpecError("needs position (e.g. 4, the start of the file)", loc=("file",))
        if self.mode == "specific-offset" and self.file is None and self.gtid_set is None:
            raise SpecError("mode specific-offset needs file and position, or gtidSet")
        return self
