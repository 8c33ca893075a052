"""The ``delta_checks`` fixture: one Delta-enabled Spark (sink_checks.py, a subprocess) runs the
direct checks of the Delta sink and the verification checks of a Delta replica, whose results
test_delta_sink.py and test_delta_verify.py assert on. One JVM instead of two: a Delta session
takes many seconds to start on a loaded machine.

The source tables: ``types`` (every MySQL type), ``replay``, ``tags`` (a case-insensitive string
key), ``tail``, ``evolve`` and ``opts`` for the sink checks, and ``items`` (NULLs, DECIMALs,
DATETIME(6), TIMESTAMP(6), TIME, JSON, binary, BIT, ENUM/SET, YEAR, floats, utf8mb4 text) for
verification, captured by a pipeline with a Delta sink; ``busy`` for verification while a
``sparkcdc run`` streams it into Delta and a writer changes it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from delta_support import ChecksRun, delta_sink

from harness.mariadb import unique_name
from harness.runner import pipeline_manifest, subprocess_env
from sparkcdc.mysql.connection import SourceConfig
from sparkcdc.testing.mariadb import MariaDBServer

HERE = Path(__file__).resolve().parent
VERIFY_ROWS = 300
BUSY_ROWS = 1200


@pytest.fixture(scope="session")
def delta_checks(
    mariadb: MariaDBServer, source_config: SourceConfig, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ChecksRun]:
    db = unique_name("db")
    mariadb.execute(f"CREATE DATABASE `{db}`")
    work = tmp_path_factory.mktemp("delta-checks")
    try:
        _create_tables(mariadb, db)
        _create_verify_table(mariadb, db)
        _create_busy_table(mariadb, db)
        request = {
            "sink": _sink_request(source_config, db, work),
            "verify": _verify_request(mariadb, db, work),
            "concurrent": _concurrent_request(mariadb, db, work),
        }
        (work / "request.json").write_text(json.dumps(request))
        result = subprocess.run(
            [sys.executable, str(HERE / "sink_checks.py"), str(work / "request.json")],
            env=subprocess_env(),
            capture_output=True,
            text=True,
            # Every group of checks in one JVM: 530-780 s in clean-clone CI runs here with
            # every core busy, and CI's machine has run the lanes 1.5x slower than that.
            # A bound on a hang, not on speed.
            timeout=2200,
            check=False,
        )
        yield ChecksRun(result.returncode, result.stdout, result.stderr)
    finally:
        mariadb.execute(f"DROP DATABASE IF EXISTS `{db}`")


def _sink_request(source: SourceConfig, db: str, work: Path) -> dict[str, object]:
    return {
        "source": {
            "host": source.host,
            "port": source.port,
            "user": source.user,
            "password": source.password,
            "server_time_zone": source.server_time_zone,
        },
        "db": db,
        "lake": str(work / "lake"),
    }


def _verify_request(server: MariaDBServer, db: str, work: Path) -> dict[str, object]:
    lake = work / "verify-lake"
    assert server.cdc_password
    manifest = pipeline_manifest(
        work / "pipeline.yaml",
        name="delta-verify",
        host=server.host,
        port=server.port,
        password=server.cdc_password,
        tables=[f"{db}.items"],
        sink=delta_sink(lake),
        mode="initial",
        chunk_size=40,
        binlog={"batchIntervalMs": 200, "heartbeatIntervalSeconds": 1},
    )
    return {
        "manifest": str(manifest),
        "state": str(work / "state"),
        "table_path": str(lake / db / "items"),
        "rows": VERIFY_ROWS,
    }


def _concurrent_request(server: MariaDBServer, db: str, work: Path) -> dict[str, object]:
    """``busy`` captured into Delta by a ``sparkcdc run`` that streams while it is verified."""
    assert server.cdc_password
    manifest = pipeline_manifest(
        work / "busy.yaml",
        name="delta-busy",
        host=server.host,
        port=server.port,
        password=server.cdc_password,
        tables=[f"{db}.busy"],
        sink=delta_sink(work / "busy-lake"),
        mode="initial",
        chunk_size=150,
        binlog={"batchIntervalMs": 300, "heartbeatIntervalSeconds": 1},
    )
    return {
        "manifest": str(manifest),
        "state": str(work / "busy-state"),
        "logs": str(work / "busy-logs"),
        "name": "delta-busy",
        "host": server.host,
        "port": server.port,
        "db": db,
        "table": "busy",
        "rows": BUSY_ROWS,
    }


def _create_busy_table(server: MariaDBServer, db: str) -> None:
    server.execute(
        f"CREATE TABLE `{db}`.busy (id INT PRIMARY KEY, qty INT NOT NULL,"
        " note VARCHAR(60) CHARACTER SET utf8mb4)"
    )
    server.execute(
        f"INSERT INTO `{db}`.busy SELECT seq * 2, seq % 10, CONCAT('order ', seq)"
        f" FROM `{db}`.seq_1_to_{BUSY_ROWS}"
    )


def _create_tables(server: MariaDBServer, db: str) -> None:
    run = server.execute
    run(
        f"""CREATE TABLE `{db}`.types (
            id INT PRIMARY KEY, tiny TINYINT, ubig BIGINT UNSIGNED, dec10 DECIMAL(10,3),
            wide DECIMAL(65,30), f FLOAT, d DOUBLE, b1 BIT(1), b9 BIT(9), y YEAR, dt DATE,
            dtm DATETIME(6), ts TIMESTAMP(6) NULL, tm TIME(6), s VARCHAR(50), j JSON,
            e ENUM('x','y'), st SET('p','q'), bin VARBINARY(10), blb BLOB, g POINT NULL,
            `odd name` INT)"""
    )
    run(
        f"""INSERT INTO `{db}`.types VALUES
        (1, -128, 18446744073709551615, -1234567.125,
         -12345678901234567890123456789012345.123456789012345678901234567890,
         1.1, -2.5e300, b'1', b'100000001', 2155, '1000-01-01', '9999-12-31 23:59:59.999999',
         '2038-01-19 03:14:07.5', '-838:59:59.000000', 'grüß ☃ \\\\ '' x', '{{"a": [1, 2.50]}}', 'y', 'p,q',
         x'00ff', x'deadbeef', ST_GeomFromText('POINT(1 2)'), 5),
        (2, 127, 0, 0, 0, 0, 0, b'0', b'0', 1901, '2024-02-29', '2024-02-29 12:00:00',
         '1970-01-01 05:30:01', '00:00:00.000001', '', '[]', 'x', '', '', '', NULL, NULL),
        (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
         NULL, NULL, NULL, NULL, NULL, NULL, NULL)"""
    )
    run(f"CREATE TABLE `{db}`.replay (id INT PRIMARY KEY, v VARCHAR(20))")
    run(f"INSERT INTO `{db}`.replay VALUES (1, 'x1'), (2, 'x2'), (3, 'x3'), (100, 'x100')")
    run(
        f"CREATE TABLE `{db}`.tags (tag VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"
        " PRIMARY KEY, n INT)"
    )
    run(f"INSERT INTO `{db}`.tags VALUES ('a', 1), ('B', 2), ('b2', 3), ('c', 4), ('Zed', 5), ('_x', 6)")
    run(f"CREATE TABLE `{db}`.tail (id INT PRIMARY KEY, v VARCHAR(20))")
    run(f"INSERT INTO `{db}`.tail SELECT seq, CONCAT('v', seq) FROM `{db}`.seq_1_to_10")
    run(
        f"CREATE TABLE `{db}`.evolve (id INT PRIMARY KEY, v VARCHAR(20), extra INT DEFAULT 7,"
        " more VARCHAR(10))"
    )
    run(f"INSERT INTO `{db}`.evolve (id, v) VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    run(f"CREATE TABLE `{db}`.opts (id INT PRIMARY KEY, bucket INT, v VARCHAR(20))")
    run(f"INSERT INTO `{db}`.opts SELECT seq, seq % 2, CONCAT('v', seq) FROM `{db}`.seq_1_to_6")


def _create_verify_table(server: MariaDBServer, db: str) -> None:
    server.execute(
        f"""CREATE TABLE `{db}`.items (
            id INT PRIMARY KEY, qty INT, price DECIMAL(10,2), wide DECIMAL(50,20),
            label VARCHAR(40) CHARACTER SET utf8mb4, at DATETIME(6), ts TIMESTAMP(6) NULL,
            tm TIME(6), doc JSON, bin VARBINARY(16), f FLOAT, d DOUBLE, b BIT(5),
            e ENUM('x','y'), st SET('p','q'), y YEAR)"""
    )
    server.execute(
        f"""INSERT INTO `{db}`.items SELECT seq * 10, IF(seq % 11 = 0, NULL, seq % 7), seq / 4,
            IF(seq % 5 = 0, NULL, seq * 1234567890.123456789 - 1e25), CONCAT('item ', seq, ' ✓ 🎉'),
            TIMESTAMP('2024-01-01') + INTERVAL seq * 7 SECOND + INTERVAL seq MICROSECOND,
            IF(seq % 3 = 0, NULL, TIMESTAMP('2001-02-03 04:05:06.5') + INTERVAL seq HOUR),
            SEC_TO_TIME(CAST(seq AS SIGNED) * 997 - 100000),
            JSON_OBJECT('n', seq, 'tags', JSON_ARRAY('a', seq % 3)),
            IF(seq % 4 = 0, NULL, UNHEX(LPAD(HEX(seq), 6, '0'))), seq / 3, seq * 1.0e-7 + 1e10,
            seq % 32, ELT(1 + seq % 2, 'x', 'y'), IF(seq % 2 = 0, 'p,q', ''), 1901 + seq % 200
            FROM `{db}`.seq_1_to_{VERIFY_ROWS}"""
    )
