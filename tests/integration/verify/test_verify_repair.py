"""Rows deleted, inserted or altered directly in the sink are each found in the chunk that holds
them, with both sides' row counts; ``--repair`` re-snapshots exactly those chunks and the replica
then verifies clean.

On a MariaDB sink with an integer key, in process; and through the ``sparkcdc verify`` command on
a PostgreSQL sink with a string key, whose chunks the PostgreSQL side must select in MySQL's
collation order (candidates in SQL, exact range with ``KeyOrder``).
"""

from __future__ import annotations

import json
from typing import Any

from verify_support import Replica, chunk_holding, table_report

from harness.runner import run_cli
from sparkcdc.testing.postgres import PostgresServer

ITEMS = "items"


def test_sink_edits_found_in_their_chunks_and_repaired(replica: Replica, spark: Any) -> None:
    replica.execute(
        f"CREATE TABLE `{replica.db}`.`{ITEMS}` (id INT PRIMARY KEY, qty INT NOT NULL, "
        "label VARCHAR(40) CHARACTER SET utf8mb4, price DECIMAL(10,2))"
    )
    replica.execute(
        f"INSERT INTO `{replica.db}`.`{ITEMS}` SELECT seq * 10, seq % 7, CONCAT('item ', seq, ' ✓'), "
        f"seq / 4 FROM `{replica.db}`.seq_1_to_300"
    )
    manifest = replica.manifest("edits", [ITEMS], chunk_size=30)
    replica.snapshot(spark, manifest)
    sink = f"`{replica.sink_db}`.`{ITEMS}`"
    replica.execute(f"DELETE FROM {sink} WHERE id = 450")
    replica.execute(f"INSERT INTO {sink} VALUES (1455, 1, 'not in the source', 1.00)")
    replica.execute(f"UPDATE {sink} SET price = price + 0.01 WHERE id = 2500")

    code, report = replica.verify(spark, manifest)

    items = table_report(report, ITEMS)
    assert code == 1 and not report.ok
    assert items.chunks >= 9 and len(items.differing) == 3
    deleted, inserted, altered = (chunk_holding(items.differing, k) for k in (450, 1455, 2500))
    assert deleted.sink.rows == deleted.source.rows - 1 and deleted.sample_keys == ("450",)
    assert inserted.sink.rows == inserted.source.rows + 1 and inserted.sample_keys == ("1455",)
    assert altered.sink.rows == altered.source.rows and altered.sample_keys == ("2500",)
    assert all(d.status == "differ" and d.differing_rows == 1 for d in items.differing)
    assert items.source_rows == 300 and items.sink_rows == 300

    code, report = replica.verify(spark, manifest, repair=True)
    items = table_report(report, ITEMS)
    assert code == 0 and report.ok
    assert sorted(d.split.index for d in items.repaired) == sorted(
        d.split.index for d in (deleted, inserted, altered)
    )
    source = replica.execute(f"SELECT * FROM `{replica.db}`.`{ITEMS}` ORDER BY id")
    assert replica.execute(f"SELECT * FROM {sink} ORDER BY id") == source

    code, report = replica.verify(spark, manifest)
    assert code == 0 and report.ok and table_report(report, ITEMS).rechecked == 0


def test_cli_verify_and_repair_postgres_string_key(
    replica: Replica, spark: Any, postgres: PostgresServer, pg_database: str
) -> None:
    replica.use_postgres(postgres, pg_database)
    replica.execute(
        f"CREATE TABLE `{replica.db}`.accounts (code VARCHAR(20) CHARACTER SET utf8mb4 "
        "COLLATE utf8mb4_general_ci PRIMARY KEY, owner VARCHAR(60) CHARACTER SET utf8mb4, "
        "balance DECIMAL(14,4), opened DATETIME(6), meta JSON)"
    )
    replica.execute(
        f"INSERT INTO `{replica.db}`.accounts SELECT CONCAT('Acct-', LPAD(seq, 4, '0')), "
        "IF(seq % 9 = 0, NULL, CONCAT('Ówner ', seq, ' 🎉')), seq * 1.5, "
        "TIMESTAMP('2024-01-01') + INTERVAL seq * 7 SECOND + INTERVAL seq MICROSECOND, "
        f"JSON_OBJECT('n', seq, 'tags', JSON_ARRAY('a', seq % 3)) FROM `{replica.db}`.seq_1_to_200"
    )
    manifest = replica.manifest("pg-edits", ["accounts"], sink="postgresql", chunk_size=25)
    replica.snapshot(spark, manifest)
    replica.pg_execute("DELETE FROM accounts WHERE code = 'Acct-0030'")
    replica.pg_execute("INSERT INTO accounts (code, owner, balance) VALUES ('acct-0105x', 'ghost', 0)")
    replica.pg_execute("UPDATE accounts SET meta = replace(meta, '\"n\"', '\"N\"') WHERE code = 'Acct-0170'")
    report_path = replica.work / "report.json"

    command = ["verify", str(manifest)]
    command += ["--state-dir", str(replica.state_dir), "--report", str(report_path), "--repair"]
    command += ["--wait-seconds", "30"]
    run = run_cli(command, timeout=240)

    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-5000:]
    document = json.loads(report_path.read_text(encoding="utf-8"))
    (pipeline,) = document["pipelines"]
    (accounts,) = pipeline["tables"]
    assert document["ok"] and pipeline["ok"] and accounts["chunksDiffering"] == 0
    repaired = {tuple(c["sampleKeys"]): c for c in accounts["repaired"]}
    assert set(repaired) == {("9:Acct-0030",), ("10:acct-0105x",), ("9:Acct-0170",)}
    for keys, delta in ((("9:Acct-0030",), -1), (("10:acct-0105x",), 1), (("9:Acct-0170",), 0)):
        chunk = repaired[keys]
        assert chunk["sinkRows"] - chunk["sourceRows"] == delta
        code = keys[0].split(":", 1)[1].lower()
        start, end = chunk["start"], chunk["end"]
        assert start is None or start[0].lower() <= code
        assert end is None or code < end[0].lower()
    assert "repaired" in run.stderr

    code, after = replica.verify(spark, manifest)
    assert code == 0 and after.ok and table_report(after, "accounts").rechecked == 0
    assert replica.pg_execute("SELECT count(*) FROM accounts") == [(200,)]
