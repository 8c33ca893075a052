"""The JDBC sink's settings: where the target database is and how the driver writes to it.

They are pickled into Spark tasks with the fence the starting driver claimed (sinks/jdbc/fence.py),
so every writer of a pipeline checks the same fence row.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from sparkcdc.core.fence import Fence
from sparkcdc.mysql.tls import TlsSettings
from sparkcdc.sinks.base import Sink


@dataclass(frozen=True)
class JdbcSinkConfig:
    scheme: str
    host: str
    port: int
    database: str
    user: str
    password: str = field(repr=False)
    batch_rows: int = 1000
    create_tables: bool = True
    # Snapshot splits by LOAD DATA LOCAL INFILE into MySQL/MariaDB where exact (bulk_load.py).
    bulk_load: bool = True
    params: dict[str, str] = field(default_factory=dict)
    # spec.sink.tls with its CA resolved (None: the clients' defaults, see dialects.py/postgres.py);
    # pickled into tasks like the password, so executors verify with the same CA.
    tls: TlsSettings | None = None
    # Set by claim_fence in the starting driver; pickled with the config into Spark tasks.
    fence: Fence | None = None

    def open(self) -> Sink:
        # Imported here: settings pickled into a Spark task import the sink (and its database
        # drivers) only when a task opens it, and the sink's module may import these settings.
        from sparkcdc.sinks.jdbc.sink import JdbcSink

        return JdbcSink(self)

    def claim_fence(self, fence: Fence) -> JdbcSinkConfig:
        """Raise the sink's fence for ``fence.pipeline`` to this driver's, and return the settings
        whose sinks write only while it is still this driver's (sinks.base.start_fenced)."""
        from sparkcdc.sinks.jdbc.sink import JdbcSink

        fenced = replace(self, fence=fence)
        sink = JdbcSink(fenced)
        try:
            sink.claim_fence()
        finally:
            sink.close()
        return fenced

    def describe(self) -> str:
        return f"{self.scheme}://{self.host}:{self.port}/{self.database}"
