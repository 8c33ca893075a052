"""The Delta sink on its own, in one Delta-enabled Spark (sink_checks.py, a subprocess): every
MySQL type through snapshot and MERGE, replayed binlog batches (exactly once), split ranges of a
case-insensitive string key re-written exactly, a tail split re-cut after a crash, added columns
(with the source default for existing rows, and mergeSchema), partitioning, table properties,
change data feed and OPTIMIZE."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from harness.runner import subprocess_env
from sparkcdc.mysql.connection import SourceConfig
from sparkcdc.testing.mariadb import MariaDBServer

HERE = Path(__file__).resolve().parent


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


def test_delta_sink_checks(
    mariadb: MariaDBServer, source_config: SourceConfig, fresh_db: str, tmp_path: Path
) -> None:
    _create_tables(mariadb, fresh_db)
    request = {
        "source": {
            "host": source_config.host,
            "port": source_config.port,
            "user": source_config.user,
            "password": source_config.password,
            "server_time_zone": source_config.server_time_zone,
        },
        "db": fresh_db,
        "lake": str(tmp_path / "lake"),
    }
    (tmp_path / "request.json").write_text(json.dumps(request))
    result = subprocess.run(
        [sys.executable, str(HERE / "sink_checks.py"), str(tmp_path / "request.json")],
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    done = [line for line in result.stdout.splitlines() if line.startswith("ok ")]
    assert result.returncode == 0, f"passed: {done}\n{result.stdout[-3000:]}\n{result.stderr[-8000:]}"
    assert done == [
        "ok types_round_trip",
        "ok replay_is_idempotent",
        "ok string_key_ranges",
        "ok tail_resplit",
        "ok schema_evolution",
        "ok options",
    ]
