"""``sparkcdc verify`` and ``--repair`` on a Delta replica (issue 9 item 4), on real MariaDB,
Spark and Delta, in one Delta-enabled Spark (verify_checks.py, a subprocess).

The source table holds NULLs, DECIMALs (one wider than Spark's 38 digits, stored as text),
DATETIME(6), TIMESTAMP(6), TIME, JSON, binary, BIT, ENUM/SET, YEAR, floats and utf8mb4 text, so
a clean verification shows the Delta checker's canonical encoding (Python, over the values read
back from Delta) agrees with the one MariaDB computes for the source, type by type.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from delta_support import delta_sink

from harness.runner import pipeline_manifest, subprocess_env
from sparkcdc.testing.mariadb import MariaDBServer

HERE = Path(__file__).resolve().parent
ROWS = 300


def _create_table(server: MariaDBServer, db: str) -> None:
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
            SEC_TO_TIME(CAST(seq AS SIGNED) * 997 - 100000), JSON_OBJECT('n', seq, 'tags', JSON_ARRAY('a', seq % 3)),
            IF(seq % 4 = 0, NULL, UNHEX(LPAD(HEX(seq), 6, '0'))), seq / 3, seq * 1.0e-7 + 1e10,
            seq % 32, ELT(1 + seq % 2, 'x', 'y'), IF(seq % 2 = 0, 'p,q', ''), 1901 + seq % 200
            FROM `{db}`.seq_1_to_{ROWS}"""
    )


def test_delta_verify_finds_edits_and_repairs(mariadb: MariaDBServer, fresh_db: str, tmp_path: Path) -> None:
    _create_table(mariadb, fresh_db)
    lake = tmp_path / "lake"
    assert mariadb.cdc_password
    manifest = pipeline_manifest(
        tmp_path / "pipeline.yaml",
        name="delta-verify",
        host=mariadb.host,
        port=mariadb.port,
        password=mariadb.cdc_password,
        tables=[f"{fresh_db}.items"],
        sink=delta_sink(lake),
        mode="initial",
        chunk_size=40,
        binlog={"batchIntervalMs": 200, "heartbeatIntervalSeconds": 1},
    )
    request = {
        "manifest": str(manifest),
        "state": str(tmp_path / "state"),
        "table_path": str(lake / fresh_db / "items"),
        "rows": ROWS,
    }
    (tmp_path / "request.json").write_text(json.dumps(request))
    result = subprocess.run(
        [sys.executable, str(HERE / "verify_checks.py"), str(tmp_path / "request.json")],
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    done = [line for line in result.stdout.splitlines() if line.startswith("ok ")]
    assert result.returncode == 0, f"passed: {done}\n{result.stdout[-3000:]}\n{result.stderr[-8000:]}"
    assert done == ["ok clean", "ok differences", "ok repair", "ok clean_after_repair"]
