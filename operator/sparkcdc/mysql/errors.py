"""The one error type the mysql layer raises for problems a user can fix."""

from __future__ import annotations


class SourceError(Exception):
    """A problem with the source database, stated with its fix.

    Messages name the spec field to change (``spec.source.host``, ...) and never contain the
    password. Transient errors that survived retries are reported the same way.
    """


class BinlogLostError(SourceError):
    """The binlog position the pipeline must resume at is gone from the source (purged, reset).

    Unlike an unreachable source, no retry can help: only a resnapshot of the tables
    (``spec.startup.onBinlogLost: resnapshot``) or a new start. The message says "binlog lost:"
    first, which the operator reads from the driver's termination message."""

    PREFIX = "binlog lost:"

    def __init__(self, message: str) -> None:
        super().__init__(f"{self.PREFIX} {message}")
