"""Fixtures for sink tests against real target databases.

* ``postgres`` (session, tests/conftest.py): the shared throwaway PostgreSQL.
* ``pg_database`` (function): a new database owned by ``cdc``, dropped afterwards. Its default
  collation is ICU ``en-US`` where the server supports it, so PostgreSQL's own text order is a
  linguistic one that differs from both byte order and MySQL's collations.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from sparkcdc.testing.postgres import PostgresServer, quote_ident


@pytest.fixture
def pg_database(postgres: PostgresServer) -> Iterator[str]:
    name = f"sink_{uuid.uuid4().hex[:10]}"
    owner = quote_ident(postgres.cdc_user or "cdc")
    try:
        postgres.execute(
            f"CREATE DATABASE {quote_ident(name)} OWNER {owner} TEMPLATE template0 "
            "LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'",
            database="postgres",
        )
    except Exception:  # a server without ICU: the default collation is then C.UTF-8
        postgres.execute(f"CREATE DATABASE {quote_ident(name)} OWNER {owner}", database="postgres")
    try:
        yield name
    finally:
        postgres.execute(f"DROP DATABASE IF EXISTS {quote_ident(name)} WITH (FORCE)", database="postgres")
