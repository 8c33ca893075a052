"""Where the replica is written. ``spec.sink`` is one of these, chosen by ``type``."""

from __future__ import annotations

from typing import Annotated, Literal
from urllib.parse import parse_qsl, urlsplit

from pydantic import Field, StringConstraints, field_validator, model_validator

from sparkcdc.api.base import ApiModel, NonEmpty256, SecretKeyRef, SpecError, Str64, Str1024
from sparkcdc.api.credentials import (
    CREDENTIALS_DESCRIPTION,
    JDBC_URL_RULE,
    Credentials,
    ObjectPath,
    ObjectStoreCredential,
    check_object_path,
    check_unique_keys,
    credential_param,
)
from sparkcdc.api.routing import TABLE_NAME_DESCRIPTION, NameTemplate
from sparkcdc.api.source import TableName, TlsSpec

JDBC_SCHEMES = ("mysql", "mariadb", "postgresql")
JDBC_DEFAULT_PORTS = {"mysql": 3306, "mariadb": 3306, "postgresql": 5432}
# Loose on purpose: the operator's own check (below) gives the precise message; this keeps obviously
# wrong URLs out of the apiserver, including ones that carry credentials ("user:pw@host").
JDBC_URL_PATTERN = r"^(mysql|mariadb|postgresql)://[^/@?#]+/[^/?#]+([?].*)?$"
_URL_EXAMPLE = "mysql://host:3306/database"

ColumnList = Annotated[list[Str64], Field(min_length=1, max_length=16)]
MetadataColumns = Annotated[
    list[Literal["op", "ts_ms", "binlog_file", "binlog_pos", "gtid", "source_db", "source_table"]],
    Field(max_length=7),
]
DeleteMode = Literal["hard", "soft"]
OnTableDrop = Literal["keep", "drop"]
METADATA_DESCRIPTION = (
    "Columns added to every target row, each named with a leading _ (op -> _op): op (r read by the "
    "snapshot, c, u, d), ts_ms (source time of the change; of the read for snapshot rows), "
    "binlog_file and binlog_pos (of the change; the split's high watermark for snapshot rows), gtid, "
    "source_db, source_table. E.g. [op, ts_ms]."
)
PATH_DESCRIPTION = (
    "Directory or URI the sink writes below; no credentials in it (user:secret@, ?sig=...): see credentials."
)
DELETE_MODE_DESCRIPTION = (
    "hard: a source delete deletes the target row; soft: the row stays with its last image and "
    "_deleted = 1, and a later insert of its key revives it (_deleted = 0)."
)
ON_TABLE_DROP_DESCRIPTION = (
    "What a source DROP TABLE (also DROP DATABASE, CREATE OR REPLACE TABLE, or a RENAME TABLE to a "
    "name the pipeline does not capture) does to the table's target while streaming: keep leaves it "
    "as it was; drop removes it (only that table's rows in a target merged by a route). Either way "
    "the table stops being captured at that place in the binlog."
)


class JdbcUrl:
    """The parts of a validated ``jdbc`` sink URL."""

    def __init__(self, scheme: str, host: str, port: int, database: str, params: dict[str, str]) -> None:
        self.scheme = scheme
        self.host = host
        self.port = port
        self.database = database
        self.params = params

    @property
    def is_postgres(self) -> bool:
        return self.scheme == "postgresql"

    @property
    def jdbc_url(self) -> str:
        """The URL for a JDBC driver; MySQL and MariaDB both use ``jdbc:mysql`` (architecture §4)."""
        prefix = "jdbc:postgresql" if self.is_postgres else "jdbc:mysql"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{prefix}://{host}:{self.port}/{self.database}"

    def __repr__(self) -> str:
        return f"JdbcUrl({self.scheme}://{self.host}:{self.port}/{self.database})"


def parse_jdbc_url(url: str) -> JdbcUrl:
    """Split a sink URL into its parts. Messages never repeat the URL: it might hold a password."""
    scheme, sep, _ = url.partition("://")
    if not sep:
        raise SpecError(f"must be a URL like {_URL_EXAMPLE}")
    if scheme not in JDBC_SCHEMES:
        raise SpecError(
            f"unsupported scheme {scheme[:20]!r}; expected a URL starting with mysql://, mariadb:// or postgresql://"
        )
    parts = urlsplit(url)
    if "@" in parts.netloc:
        raise SpecError("must not contain a user name or password; use user and passwordSecretRef")
    try:
        port = parts.port
    except ValueError:
        raise SpecError(f"has an invalid port; expected a URL like {_URL_EXAMPLE}") from None
    host = parts.hostname
    if not host:
        raise SpecError(f"has no host; expected a URL like {_URL_EXAMPLE}")
    database = parts.path.lstrip("/")
    if not database or "/" in database:
        raise SpecError(f"must name one database; expected a URL like {_URL_EXAMPLE}")
    if parts.fragment:
        raise SpecError(f"must not have a #fragment; expected a URL like {_URL_EXAMPLE}")
    param = credential_param(url)
    if param is not None:
        raise SpecError(
            f"must not carry credentials: query parameter {param!r} would keep a credential in plain "
            "text in the spec; give the user in user and the password in passwordSecretRef"
        )
    return JdbcUrl(
        scheme=scheme,
        host=host,
        port=port if port is not None else JDBC_DEFAULT_PORTS[scheme],
        database=database,
        params=dict(parse_qsl(parts.query)),
    )


class JdbcSink(ApiModel):
    """A MySQL, MariaDB or PostgreSQL database that holds the replica tables."""

    type: Literal["jdbc"] = Field(description="Sink kind.")
    url: Annotated[str, StringConstraints(min_length=1, max_length=2048)] = Field(
        description="mysql://, mariadb:// or postgresql:// URL with host, optional port and database, "
        "e.g. mysql://replica:3306/shop_replica; no credentials.",
        json_schema_extra={"pattern": JDBC_URL_PATTERN, "x-kubernetes-validations": [JDBC_URL_RULE]},
    )
    user: NonEmpty256 = Field(description="Database user of the sink.")
    password_secret_ref: SecretKeyRef = Field(description="The sink user's password.")
    tls: TlsSpec | None = Field(
        default=None,
        description="TLS to the sink, for the driver and every executor (a block without mode is "
        "verify-identity). Unset: preferred (TLS when the server offers it, unverified), or the "
        "sslmode/sslrootcert a postgresql:// URL names.",
    )
    batch_rows: int = Field(default=1000, gt=0, le=1_000_000, description="Rows per multi-row statement.")
    create_tables: bool = Field(default=True, description="Create missing replica tables.")
    bulk_load: bool = Field(
        default=True,
        description="Write snapshot splits into MySQL/MariaDB with LOAD DATA LOCAL INFILE where the target "
        "allows it (local_infile=ON); a split it cannot load exactly, or a target that refuses it, gets "
        "INSERTs. PostgreSQL targets always use COPY.",
    )
    table_name: NameTemplate = Field(
        default="{table}", description=f"{TABLE_NAME_DESCRIPTION} Here a table in the URL's database."
    )
    metadata_columns: MetadataColumns = Field(default_factory=list, description=METADATA_DESCRIPTION)
    delete_mode: DeleteMode = Field(default="hard", description=DELETE_MODE_DESCRIPTION)
    on_table_drop: OnTableDrop = Field(default="keep", description=ON_TABLE_DROP_DESCRIPTION)

    @field_validator("table_name")
    @classmethod
    def _check_table_name(cls, value: str) -> str:
        if "/" in value:
            raise SpecError(f"{value!r} must be a table name, without /")
        return value

    @field_validator("url")
    @classmethod
    def _check_url(cls, url: str) -> str:
        parse_jdbc_url(url)
        return url

    @model_validator(mode="after")
    def _one_tls_setting(self) -> JdbcSink:
        given = sorted(k for k in self.parsed_url.params if k.startswith("ssl"))
        if self.tls is not None and given:
            raise SpecError(
                f"the URL's {', '.join(given)} and tls both set TLS; keep one (tls takes its CA from a "
                "Secret)",
                loc=("tls",),
            )
        return self

    @property
    def parsed_url(self) -> JdbcUrl:
        return parse_jdbc_url(self.url)

    @property
    def scheme(self) -> str:
        return self.parsed_url.scheme

    @property
    def host(self) -> str:
        return self.parsed_url.host

    @property
    def port(self) -> int:
        return self.parsed_url.port

    @property
    def database(self) -> str:
        return self.parsed_url.database


class DeltaSink(ApiModel):
    """Delta Lake tables, one per source table, below ``path``."""

    type: Literal["delta"] = Field(description="Sink kind.")
    path: ObjectPath = Field(description=PATH_DESCRIPTION)
    credentials: Credentials = Field(default_factory=list, description=CREDENTIALS_DESCRIPTION)
    table_name: NameTemplate = Field(
        default="{db}/{table}",
        description=f"{TABLE_NAME_DESCRIPTION} Here a directory below path; / makes subdirectories.",
    )
    metadata_columns: MetadataColumns = Field(default_factory=list, description=METADATA_DESCRIPTION)
    delete_mode: DeleteMode = Field(default="hard", description=DELETE_MODE_DESCRIPTION)
    on_table_drop: OnTableDrop = Field(default="keep", description=ON_TABLE_DROP_DESCRIPTION)
    partition_by: dict[TableName, ColumnList] = Field(
        default_factory=dict,
        max_length=1024,
        description='Partition columns per table, keyed by "db.table".',
    )
    table_properties: dict[str, Str1024] = Field(
        default_factory=dict, max_length=64, description="Delta table properties set on created tables."
    )
    change_data_feed: bool = Field(default=False, description="Enable Delta's change data feed.")
    optimize_every_commits: int = Field(
        default=0, ge=0, description="Run OPTIMIZE after this many commits per table; 0 never."
    )
    merge_schema: bool = Field(
        default=True,
        description="Add columns the source gains to the Delta tables (schema evolution); when false, "
        "a source column the table lacks stops the pipeline.",
    )

    @field_validator("path")
    @classmethod
    def _check_path(cls, value: str) -> str:
        return check_object_path(value)

    @field_validator("credentials")
    @classmethod
    def _check_credentials(cls, value: list[ObjectStoreCredential]) -> list[ObjectStoreCredential]:
        return check_unique_keys(value)


class ChangelogSink(ApiModel):
    """JSON lines, one change per line (see architecture §2), below ``path``."""

    type: Literal["changelog"] = Field(description="Sink kind.")
    path: ObjectPath = Field(
        description="Directory or URI the sink writes below; no credentials in it (user:secret@, ?sig=...)."
    )
    table_name: NameTemplate = Field(
        default="{db}.{table}",
        description=f"{TABLE_NAME_DESCRIPTION} Here a directory below path; / makes subdirectories.",
    )

    @field_validator("path")
    @classmethod
    def _check_path(cls, value: str) -> str:
        return check_object_path(value, "the changelog sink writes to a directory: mount the storage there")


class ConsoleSink(ApiModel):
    """Prints changes to the driver's standard output; for trying things out."""

    type: Literal["console"] = Field(description="Sink kind.")
    max_rows_per_table: int = Field(
        default=20, gt=0, le=1_000_000, description="Rows printed per table and batch."
    )


Sink = Annotated[JdbcSink | DeltaSink | ChangelogSink | ConsoleSink, Field(discriminator="type")]
SINK_TYPES: tuple[type[ApiModel], ...] = (JdbcSink, DeltaSink, ChangelogSink, ConsoleSink)
