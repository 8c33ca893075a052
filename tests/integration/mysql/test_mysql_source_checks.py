"""Errors a user can act on: binlog settings, unreachable source, wrong password."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.mariadb import source_config, start_server
from sparkcdc.mysql.connection import SourceConfig, connect
from sparkcdc.mysql.errors import SourceError
from sparkcdc.mysql.flavor import detect_flavor
from sparkcdc.mysql.queries import binlog_files, check_binlog_settings, current_offset, list_tables
from sparkcdc.testing.mariadb import MariaDBServer, free_port

STATEMENT_FORMAT = (
    "binlog_format is STATEMENT on the source, but change data capture needs row events; set "
    "binlog_format=ROW in the server's configuration (SET GLOBAL binlog_format='ROW' applies to new sessions)"
)
MINIMAL_IMAGE = (
    "binlog_row_image is MINIMAL on the source, but change data capture needs complete row images; set "
    "binlog_row_image=FULL in the server's configuration (SET GLOBAL binlog_row_image='FULL' applies to "
    "new sessions)"
)
LOG_BIN_OFF = (
    "binary logging is off on the source; start it with --log-bin (log_bin in the server's configuration) "
    "and restart the server"
)


@pytest.fixture(scope="module")
def scratch_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MariaDBServer]:
    """A second server whose settings the tests change by restarting it."""
    server = start_server(tmp_path_factory.mktemp("scratch-mariadb"), server_id=2)
    try:
        yield server
    finally:
        server.cleanup()


def _check(server: MariaDBServer) -> None:
    conn = connect(source_config(server))
    try:
        check_binlog_settings(conn)
    finally:
        conn.close()


def test_good_settings_pass_and_report_position(scratch_server: MariaDBServer) -> None:
    scratch_server.restart([])
    conn = connect(source_config(scratch_server))
    try:
        check_binlog_settings(conn)
        flavor = detect_flavor(conn)
        offset = current_offset(conn, flavor)
        assert flavor.is_mariadb
        assert offset.file.startswith("binlog.") and offset.pos > 4
        assert binlog_files(conn)[-1][0] == offset.file
        scratch_server.execute("CREATE DATABASE IF NOT EXISTS shop")
        scratch_server.execute("CREATE TABLE IF NOT EXISTS shop.orders (id INT PRIMARY KEY)")
        assert offset.gtid_set == "" or offset.gtid_set.startswith("0-2-")
        tables = [str(t) for t in list_tables(conn)]
        assert "shop.orders" in tables and not any(t.startswith(("mysql.", "sys.")) for t in tables)
        assert current_offset(conn, flavor).gtid_set.startswith("0-2-")
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--binlog-format=STATEMENT"], STATEMENT_FORMAT),
        (["--binlog-row-image=MINIMAL"], MINIMAL_IMAGE),
        (["--binlog-format=MIXED", "--binlog-row-image=NOBLOB"], None),
        (["--skip-log-bin"], LOG_BIN_OFF),
    ],
    ids=["statement", "minimal", "mixed-noblob", "no-log-bin"],
)
def test_bad_binlog_settings_are_named_with_their_fix(
    scratch_server: MariaDBServer, options: list[str], message: str | None
) -> None:
    scratch_server.restart(options)
    try:
        with pytest.raises(SourceError) as caught:
            _check(scratch_server)
        if message is None:  # both problems, each with its fix
            assert str(caught.value).startswith("binlog_format is MIXED on the source")
            assert "binlog_row_image is NOBLOB on the source" in str(caught.value)
        else:
            assert str(caught.value) == message
        if "--skip-log-bin" in options:
            conn = connect(source_config(scratch_server))
            try:
                with pytest.raises(SourceError, match="binary logging is off"):
                    current_offset(conn)
            finally:
                conn.close()
    finally:
        scratch_server.restart([])


def test_unreachable_source(source_config: SourceConfig) -> None:
    port = free_port()
    cfg = SourceConfig(
        host="127.0.0.1", port=port, user="cdc", password="pw-unreachable-123", connect_timeout=2
    )
    with pytest.raises(SourceError) as caught:
        connect(cfg, attempts=2)
    text = str(caught.value)
    assert text.startswith(f"cannot reach the source at 127.0.0.1:{port} (")
    assert text.endswith(
        "check spec.source.host and spec.source.port and that the server accepts TCP connections"
    )
    assert "pw-unreachable-123" not in text


def test_wrong_password_never_shows_the_password(mariadb: MariaDBServer) -> None:
    wrong = "Wr0ng-Passw0rd-do-not-print"
    cfg = SourceConfig(host=mariadb.host, port=mariadb.port, user="cdc", password=wrong)
    with pytest.raises(SourceError) as caught:
        connect(cfg)
    text = str(caught.value)
    assert text == (
        f"the source refused user 'cdc' at {mariadb.host}:{mariadb.port} (access denied); check "
        "spec.source.user and the password in the secret named by spec.source.passwordSecretRef"
    )
    assert wrong not in text and wrong not in repr(caught.value) and wrong not in repr(cfg)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


def test_session_runs_in_utc(source_config: SourceConfig, mariadb: MariaDBServer) -> None:
    conn = connect(source_config)
    try:
        with conn.cursor() as cur:
            cur.execute(
                "SELECT @@session.time_zone, @@global.time_zone, @@character_set_client, @@autocommit"
            )
            assert cur.fetchone() == ("+00:00", mariadb.time_zone, "utf8mb4", 1)
    finally:
        conn.close()


def test_tls_required_against_a_server_without_tls(source_config: SourceConfig) -> None:
    cfg = SourceConfig(
        host=source_config.host,
        port=source_config.port,
        user=source_config.user,
        password=source_config.password,
        tls_mode="required",
    )
    with pytest.raises(SourceError, match=r"TLS to the source at .* failed .*check spec.source.tls"):
        connect(cfg, attempts=1)
    disabled = SourceConfig(
        host=source_config.host,
        port=source_config.port,
        user=source_config.user,
        password=source_config.password,
        tls_mode="disabled",
    )
    connect(disabled).close()
