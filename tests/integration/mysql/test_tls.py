"""TLS on every client of a pipeline, against servers that accept only TLS (issue 20 item 4).

A MariaDB with ``require_secure_transport=ON`` and a certificate for 127.0.0.1 from a CA the test
makes (testing/pki.py): PyMySQL, ConnectorX (snapshot reads) and the Go decoder (catch-up ranges
and the live stream) all connect with ``verify-identity`` and the CA, and read what the plaintext
paths read; a CA that did not sign the server's certificate fails the handshake on each of them
with an error naming the spec field and never the password. The JDBC sinks (PyMySQL for MariaDB,
libpq for PostgreSQL with ``ssl=on``) verify the same way, and name ``spec.sink.tls``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from harness.decoder import source_schema
from harness.mariadb import binlog_offset, source_config, start_server, unique_name
from harness.waiting import wait_until
from sparkcdc.core.merge import BackfillChanges
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.splits import SnapshotSplit
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.binlog.follow import FollowSettings, NativeBatch, NativeFollower
from sparkcdc.mysql.binlog.native import decode_range, native_eligible
from sparkcdc.mysql.chunk_reader import chunk_read_method, read_chunk
from sparkcdc.mysql.connection import SourceConfig, SourceError, connect
from sparkcdc.mysql.tls import TlsSettings
from sparkcdc.sinks.base import SinkError
from sparkcdc.sinks.jdbc.config import JdbcSinkConfig
from sparkcdc.testing.mariadb import MariaDBServer, tls_options
from sparkcdc.testing.pki import ServerPki, make_server_pki
from sparkcdc.testing.postgres import PostgresServer

ROWS = 500


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> ServerPki:
    return make_server_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def wrong_ca(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A CA of the same shape that did not sign the servers' certificates."""
    return make_server_pki(tmp_path_factory.mktemp("other-pki")).ca_pem


@pytest.fixture(scope="module")
def tls_only(tmp_path_factory: pytest.TempPathFactory, pki: ServerPki) -> Iterator[MariaDBServer]:
    server = start_server(
        tmp_path_factory.mktemp("tls-mariadb"), extra_options=tls_options(pki.ca, pki.cert, pki.key)
    )
    try:
        yield server
    finally:
        server.cleanup()


@pytest.fixture
def verified(tls_only: MariaDBServer, pki: ServerPki) -> SourceConfig:
    return source_config(tls_only, tls_mode="verify-identity", ca_pem=pki.ca_pem)


@pytest.fixture
def table(tls_only: MariaDBServer) -> Iterator[TableId]:
    db = unique_name("tls")
    tls_only.execute(f"CREATE DATABASE `{db}`")
    tls_only.execute(
        f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY, name VARCHAR(40), price DECIMAL(10,2), at DATETIME(3))"
    )
    values = ", ".join(f"({i}, 'n{i}-é', {i}.25, '2024-05-01 10:00:{i % 60:02d}.125')" for i in range(ROWS))
    tls_only.execute(f"INSERT INTO `{db}`.t VALUES {values}")
    try:
        yield TableId(db, "t")
    finally:
        tls_only.execute(f"DROP DATABASE IF EXISTS `{db}`")


def _cipher(conn: object) -> str:
    with conn.cursor() as cur:  # type: ignore[attr-defined]
        cur.execute("SHOW SESSION STATUS LIKE 'Ssl_cipher'")
        row = cur.fetchone()
    value = row[1] if row else ""
    return value.decode() if isinstance(value, bytes) else str(value or "")


def test_the_server_refuses_plain_text(tls_only: MariaDBServer, verified: SourceConfig) -> None:
    # MariaDB answers "access denied" (MySQL: "insecure transport"): both point at the mode.
    with pytest.raises(SourceError, match=r"only TLS.*set spec.source.tls.mode") as caught:
        connect(replace(verified, tls_mode="disabled"), attempts=1)
    assert verified.password not in str(caught.value)


def test_connectorx_reads_a_split_over_verified_tls(verified: SourceConfig, table: TableId) -> None:
    conn = connect(verified, streaming=True)
    try:
        assert _cipher(conn), "the session is not encrypted"
        schema = source_schema(verified, table)
        split = SnapshotSplit(table, 0, None, None)
        assert chunk_read_method(conn) == "connectorx"  # TLS no longer sends the snapshot to PyMySQL
        fast = read_chunk(conn, schema, split, fetch_size=64)
        slow = read_chunk(conn, schema, split, fetch_size=64, reader="pymysql")
    finally:
        conn.close()
    assert fast.num_rows == ROWS
    assert fast.to_pylist() == slow.to_pylist()


def test_the_go_decoder_reads_a_range_over_verified_tls(
    tls_only: MariaDBServer, verified: SourceConfig, table: TableId, binary: Path
) -> None:
    schema = source_schema(verified, table)
    assert native_eligible(verified, {table: schema})  # TLS is no reason for Python any more
    start = binlog_offset(tls_only)
    tls_only.execute(f"UPDATE `{table.database}`.t SET price = price + 1 WHERE id < 100")
    tls_only.execute(f"DELETE FROM `{table.database}`.t WHERE id >= 450")
    stop = binlog_offset(tls_only)
    found = decode_range(binary, verified, 4401, {table: schema}, start, stop)
    assert found is not None
    changes = found.changes[table]
    assert len(changes.upserts) == 100 and len(changes.deletes) == 50


def test_the_go_decoder_follows_over_verified_tls(
    tls_only: MariaDBServer, verified: SourceConfig, table: TableId, binary: Path
) -> None:
    schema = source_schema(verified, table)
    start = binlog_offset(tls_only)
    settings = FollowSettings(batch_events=1000, batch_millis=100, heartbeat_seconds=5)
    follower = NativeFollower(binary, verified, 4402, {table: schema}, start, "mariadb", settings)
    follower.start()
    try:
        tls_only.execute(f"INSERT INTO `{table.database}`.t VALUES (9001, 'live', 1.00, NULL)")
        until = binlog_offset(tls_only)
        seen: list[NativeBatch] = []

        def reached() -> bool:
            item = follower.get(0.1)
            if isinstance(item, NativeBatch):
                seen.append(item)
            return bool(seen) and seen[-1].end >= until

        wait_until(reached, timeout=60, interval=0, message="a followed batch over TLS")
    finally:
        follower.close()
    rows = [row for batch in seen for row in batch.changes.get(table, BackfillChanges()).upserts.values()]
    assert [r["name"] for r in rows] == ["live"]


def test_a_wrong_ca_fails_every_handshake(
    tls_only: MariaDBServer, verified: SourceConfig, wrong_ca: str, table: TableId, binary: Path
) -> None:
    wrong = replace(verified, ca_pem=wrong_ca)
    with pytest.raises(SourceError) as caught:
        connect(wrong, attempts=1)
    message = str(caught.value)
    assert "TLS to the source at" in message and "check spec.source.tls" in message
    assert "certificate verify failed" in message
    assert verified.password not in message

    schema = source_schema(verified, table)
    start = binlog_offset(tls_only)
    tls_only.execute(f"UPDATE `{table.database}`.t SET price = price + 1 WHERE id = 1")
    with pytest.raises(SourceError) as decoded:
        decode_range(binary, wrong, 4403, {table: schema}, start, binlog_offset(tls_only))
    message = str(decoded.value)
    assert "check spec.source.tls" in message and "certificate" in message, message
    assert verified.password not in message


def test_required_skips_the_check_and_preferred_encrypts(
    verified: SourceConfig, wrong_ca: str, table: TableId, binary: Path, tls_only: MariaDBServer
) -> None:
    schema = source_schema(verified, table)
    for mode in ("required", "preferred"):
        cfg = replace(verified, tls_mode=mode, ca_pem=wrong_ca)  # no check: the CA does not matter
        conn = connect(cfg, streaming=True)
        try:
            assert _cipher(conn)
            assert chunk_read_method(conn) == "connectorx"
            assert read_chunk(conn, schema, SnapshotSplit(table, 0, None, None)).num_rows == ROWS
        finally:
            conn.close()
        start: BinlogOffset = binlog_offset(tls_only)
        tls_only.execute(f"UPDATE `{table.database}`.t SET name = '{mode}' WHERE id = 2")
        found = decode_range(binary, cfg, 4404, {table: schema}, start, binlog_offset(tls_only))
        assert found is not None and found.changes[table].upserts[(2,)]["name"] == mode


def _mariadb_sink(server: MariaDBServer, tls: TlsSettings | None, database: str) -> JdbcSinkConfig:
    assert server.cdc_user and server.cdc_password
    return JdbcSinkConfig(
        "mysql", server.host, server.port, database, server.cdc_user, server.cdc_password, tls=tls
    )


def test_a_mariadb_sink_verifies_its_server(tls_only: MariaDBServer, pki: ServerPki, wrong_ca: str) -> None:
    database = unique_name("tls") + "_sink"
    tls_only.execute(f"CREATE DATABASE `{database}`")
    try:
        good = TlsSettings("verify-identity", pki.ca_pem, "spec.sink.tls")
        sink = _mariadb_sink(tls_only, good, database).open()
        try:
            assert _cipher(sink._conn)  # type: ignore[attr-defined]
        finally:
            sink.close()
        bad = _mariadb_sink(tls_only, TlsSettings("verify-identity", wrong_ca, "spec.sink.tls"), database)
        with pytest.raises(SinkError) as caught:
            bad.open()
        message = str(caught.value)
        assert "check spec.sink.tls" in message and "certificate verify failed" in message, message
        assert bad.password not in message
    finally:
        tls_only.execute(f"DROP DATABASE IF EXISTS `{database}`")


@pytest.fixture(scope="module")
def tls_postgres(pki: ServerPki) -> Iterator[PostgresServer]:
    # In a directory of its own under /tmp: the server's account cannot enter pytest's (0700).
    server = PostgresServer(tls=(pki.cert, pki.key))
    try:
        server.start()
        server.create_cdc_user("cdc")
        yield server
    finally:
        server.cleanup()


def _pg_sink(server: PostgresServer, tls: TlsSettings) -> JdbcSinkConfig:
    assert server.cdc_user and server.cdc_password
    return JdbcSinkConfig(
        "postgresql", server.host, server.port, server.database, server.cdc_user, server.cdc_password, tls=tls
    )


def test_a_postgresql_sink_verifies_its_server(
    tls_postgres: PostgresServer, pki: ServerPki, wrong_ca: str
) -> None:
    sink = _pg_sink(tls_postgres, TlsSettings("verify-identity", pki.ca_pem, "spec.sink.tls")).open()
    try:
        with sink._conn.cursor() as cur:  # type: ignore[attr-defined]
            cur.execute("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
            assert cur.fetchone() == (True,)
        assert sink._conn.pgconn.ssl_in_use  # type: ignore[attr-defined]
    finally:
        sink.close()
    bad = _pg_sink(tls_postgres, TlsSettings("verify-identity", wrong_ca, "spec.sink.tls"))
    with pytest.raises(SinkError) as caught:
        bad.open()
    message = str(caught.value)
    assert "check spec.sink.tls" in message and "certificate verify failed" in message, message
    assert bad.password not in message


def test_preferred_falls_back_to_plain_text_on_every_path(
    mariadb: MariaDBServer, source_config: SourceConfig, fresh_db: str, binary: Path
) -> None:
    """The shared server offers no TLS: ``preferred`` reads it in plain text on the fast paths too
    (the Go decoder retries without TLS), as PyMySQL does."""
    cfg = replace(source_config, tls_mode="preferred")
    mariadb.execute(f"CREATE TABLE `{fresh_db}`.p (id INT PRIMARY KEY, v VARCHAR(10))")
    mariadb.execute(f"INSERT INTO `{fresh_db}`.p VALUES (1, 'a'), (2, 'b')")
    table = TableId(fresh_db, "p")
    schema = source_schema(cfg, table)
    conn = connect(cfg, streaming=True)
    try:
        assert not _cipher(conn)
        assert chunk_read_method(conn) == "connectorx"
        assert read_chunk(conn, schema, SnapshotSplit(table, 0, None, None)).num_rows == 2
    finally:
        conn.close()
    start = binlog_offset(mariadb)
    mariadb.execute(f"UPDATE `{fresh_db}`.p SET v = 'c' WHERE id = 2")
    found = decode_range(binary, cfg, 4405, {table: schema}, start, binlog_offset(mariadb))
    assert found is not None and found.changes[table].upserts[(2,)]["v"] == "c"
    for mode in ("required", "verify-identity"):  # no plain text for these
        with pytest.raises(SourceError, match=r"check spec\.source\.tls"):
            decode_range(
                binary, replace(cfg, tls_mode=mode), 4406, {table: schema}, start, binlog_offset(mariadb)
            )
