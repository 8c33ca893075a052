"""Fixtures of the verification tests (helpers in verify_support.py).

* ``postgres`` (session, tests/conftest.py): the shared throwaway PostgreSQL.
* ``replica`` (function): a ``Replica`` — a fresh source database on the shared MariaDB, its
  replica database ``<source>_replica`` on the same server, a work directory; ``replica.pg()``
  adds a PostgreSQL sink database.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from verify_support import Replica

from sparkcdc.testing.mariadb import MariaDBServer
from sparkcdc.testing.postgres import PostgresServer, quote_ident


@pytest.fixture
def pg_database(postgres: PostgresServer) -> Iterator[str]:
    name = f"verify_{uuid.uuid4().hex[:10]}"
    owner = quote_ident(postgres.cdc_user or "cdc")
    postgres.execute(f"CREATE DATABASE {quote_ident(name)} OWNER {owner}", database="postgres")
    try:
        yield name
    finally:
        postgres.execute(f"DROP DATABASE IF EXISTS {quote_ident(name)} WITH (FORCE)", database="postgres")


@pytest.fixture
def replica(mariadb: MariaDBServer, fresh_db: str, tmp_path: Path) -> Iterator[Replica]:
    sink_db = f"{fresh_db}_replica"
    try:
        yield Replica(mariadb, fresh_db, sink_db, tmp_path)
    finally:
        mariadb.execute(f"DROP DATABASE IF EXISTS `{sink_db}`")
