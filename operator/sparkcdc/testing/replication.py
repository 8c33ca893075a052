"""A throwaway MariaDB primary with GTID replicas, for failover tests.

Replicas replicate by GTID (``CHANGE MASTER TO ... MASTER_USE_GTID=slave_pos``) from the
primary's first binlog file, so they receive everything, the CDC account included, and binlog
what they apply (``log_slave_updates``) under the primary's GTIDs: exactly what a pipeline
needs to follow a promoted replica. ``promote`` turns a replica into a primary the way an
operator (or an orchestrator such as MaxScale) would.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

from sparkcdc.testing.mariadb import MariaDBServer
from sparkcdc.testing.mariadb_install import MariaDBError

__all__ = ["GTID_OPTIONS", "ReplicationPair", "caught_up", "promote", "start_replica", "stop_replication"]

# Replicated transactions are binlogged with their original GTIDs.
GTID_OPTIONS = ("--log-slave-updates=ON", "--gtid-strict-mode=ON")
_REPL_USER = "repl"


def _grant_replication(primary: MariaDBServer) -> str:
    password = secrets.token_urlsafe(12)
    primary.execute(f"CREATE OR REPLACE USER '{_REPL_USER}'@'%%' IDENTIFIED BY %s", (password,))
    primary.execute(f"GRANT REPLICATION SLAVE ON *.* TO '{_REPL_USER}'@'%'")
    return password


def start_replica(primary: MariaDBServer, base_dir: Path, server_id: int, **kwargs: Any) -> MariaDBServer:
    """A new server replicating ``primary`` by GTID from its first transaction, caught up.

    It gets the primary's CDC account by replication (``cdc_user``/``cdc_password`` are copied).
    """
    replica = MariaDBServer(base_dir, server_id=server_id, extra_options=GTID_OPTIONS, **kwargs)
    replica.start()
    try:
        password = _grant_replication(primary)
        replica.execute("RESET MASTER")  # nothing of its own before the primary's transactions
        replica.execute("SET GLOBAL gtid_slave_pos = ''")
        replica.execute(
            "CHANGE MASTER TO MASTER_HOST=%s, MASTER_PORT=%s, MASTER_USER=%s, MASTER_PASSWORD=%s, "
            "MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1",
            (primary.host, primary.port, _REPL_USER, password),
        )
        replica.execute("START SLAVE")
        caught_up(replica, primary)
    except Exception:
        replica.cleanup()
        raise
    replica.cdc_user, replica.cdc_password = primary.cdc_user, primary.cdc_password
    return replica


def caught_up(replica: MariaDBServer, primary: MariaDBServer, timeout: float = 60.0) -> None:
    """Wait until ``replica`` has applied everything ``primary`` has binlogged so far."""
    position = primary.execute("SELECT @@GLOBAL.gtid_binlog_pos")[0][0]
    result = replica.execute("SELECT MASTER_GTID_WAIT(%s, %s)", (position, timeout))[0][0]
    if result != 0:
        status = replica.execute("SHOW SLAVE STATUS")
        raise MariaDBError(f"{replica} did not reach GTID position {position} within {timeout}s: {status}")


def stop_replication(replica: MariaDBServer) -> None:
    """Stop applying the primary's transactions (a replica that falls behind)."""
    replica.execute("STOP SLAVE")


def promote(replica: MariaDBServer) -> None:
    """Make ``replica`` a primary: stop replicating and forget its primary."""
    replica.execute("STOP SLAVE")
    replica.execute("RESET SLAVE ALL")


class ReplicationPair:
    """A primary and one GTID replica under ``base_dir``, both with the same CDC account."""

    def __init__(self, base_dir: Path, cdc_password: str, **kwargs: Any) -> None:
        self.primary = MariaDBServer(base_dir / "primary", server_id=1, extra_options=GTID_OPTIONS, **kwargs)
        self.primary.start()
        self.replica: MariaDBServer | None = None
        try:
            self.primary.create_cdc_user(password=cdc_password)
            self.replica = start_replica(self.primary, base_dir / "replica", 2, **kwargs)
        except Exception:
            self.cleanup()
            raise

    @property
    def second(self) -> MariaDBServer:
        assert self.replica is not None
        return self.replica

    def cleanup(self) -> None:
        for server in (self.replica, self.primary):
            if server is not None:
                server.cleanup()
