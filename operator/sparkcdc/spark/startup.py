"""Where a pipeline without a snapshot starts reading the binlog (``spec.startup``)."""

from __future__ import annotations

from typing import Any

from sparkcdc.api.source import StartupSpec
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.mysql.errors import SourceError
from sparkcdc.mysql.queries import binlog_files


def startup_offset(conn: Any, startup: StartupSpec, now: BinlogOffset) -> BinlogOffset:
    """The first offset to read for ``latest``, ``earliest``, ``specific-offset`` and ``timestamp``."""
    if startup.mode == "latest":
        return now
    files = binlog_files(conn)
    if not files:
        raise SourceError("the source lists no binary logs (SHOW BINARY LOGS is empty); is log_bin on?")
    if startup.mode == "earliest":
        return BinlogOffset(files[0][0], 4)
    if startup.mode == "specific-offset" and startup.file is not None and startup.position is not None:
        names = [name for name, _size in files]
        if startup.file not in names:
            raise SourceError(
                f"spec.startup.file {startup.file} is not on the source; it has {names[0]} … {names[-1]} — "
                "pick a file that still exists or start with mode: earliest"
            )
        return BinlogOffset(startup.file, startup.position)
    raise SourceError(
        f"spec.startup.mode {startup.mode}"
        + (" with gtidSet" if startup.gtid_set else "")
        + " is not supported yet; use initial, snapshot-only, latest, earliest or specific-offset"
        " with file and position"
    )
