"""Helpers around the throwaway MariaDB server of the ``mariadb`` fixture."""

from __future__ import annotations

import uuid
from typing import Any

from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.mysql.connection import SourceConfig
from sparkcdc.testing.mariadb import MariaDBServer

# The shared server runs in a zone east of UTC so that TIMESTAMP handling that silently assumes
# a UTC server shows up in tests (architecture §3 rule 7).
SERVER_TIME_ZONE = "+05:30"


def start_server(base_dir: Any, **kwargs: Any) -> MariaDBServer:
    """A started server with a ``cdc`` account (``server.cdc_user`` / ``server.cdc_password``)."""
    kwargs.setdefault("time_zone", SERVER_TIME_ZONE)
    server = MariaDBServer(base_dir, **kwargs)
    server.start()
    try:
        server.create_cdc_user()
    except Exception:
        server.cleanup()
        raise
    return server


def source_config(server: MariaDBServer, **overrides: Any) -> SourceConfig:
    """Connection settings for the server's cdc account."""
    assert server.cdc_user and server.cdc_password, "call create_cdc_user() first"
    settings: dict[str, Any] = {
        "host": server.host,
        "port": server.port,
        "user": server.cdc_user,
        "password": server.cdc_password,
        "server_time_zone": server.time_zone,
    }
    settings.update(overrides)
    return SourceConfig(**settings)


def unique_name(prefix: str = "t") -> str:
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


def binlog_offset(server: MariaDBServer) -> BinlogOffset:
    file, pos = server.binlog_position()
    return BinlogOffset(file, pos)
