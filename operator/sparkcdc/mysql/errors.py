"""The one error type the mysql layer raises for problems a user can fix."""

from __future__ import annotations


class SourceError(Exception):
    """A problem with the source database, stated with its fix.

    Messages name the spec field to change (``spec.source.host``, ...) and never contain the
    password. Transient errors that survived retries are reported the same way.
    """
