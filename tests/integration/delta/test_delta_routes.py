"""A merging route into Delta: shards with overlapping keys share one table, nothing lost.

Two same-named tables of two databases are routed into one Delta table. The snapshot writes
both shards' splits over the same key ranges (each wave's replaceWhere confined to its shard),
then transactions that change both shards at once are streamed: each shard's part of a batch
is its own MERGE with the same end offset, so each shard keeps its own exactly-once version
(``txnAppId``) and neither is skipped as a replay of the other.
"""

from __future__ import annotations

from pathlib import Path

import pymysql
import yaml
from delta_support import delta_sink, inspect_delta

from harness.mariadb import unique_name
from harness.runner import pipeline_manifest, run_sparkcdc
from sparkcdc.testing.mariadb import MariaDBServer


def test_merging_route_keeps_every_shards_rows(mariadb: MariaDBServer, tmp_path: Path) -> None:
    dbs = [unique_name("ra"), unique_name("rb")]
    for db in dbs:
        mariadb.execute(f"CREATE DATABASE `{db}`")
        mariadb.execute(f"CREATE TABLE `{db}`.orders (id INT PRIMARY KEY, v VARCHAR(20))")
        mariadb.execute(f"INSERT INTO `{db}`.orders SELECT seq, CONCAT('{db}', seq) FROM `{db}`.seq_1_to_300")
    try:
        pattern = rf"({dbs[0]}|{dbs[1]})\.orders"
        assert mariadb.cdc_password
        manifest = pipeline_manifest(
            tmp_path / "routes.yaml",
            name="delta-routes",
            host=mariadb.host,
            port=mariadb.port,
            password=mariadb.cdc_password,
            tables=[pattern],
            sink=delta_sink(tmp_path / "lake"),
            mode="initial",
            chunk_size=50,
        )
        documents = list(yaml.safe_load_all(manifest.read_text()))
        documents[1]["spec"]["routes"] = [{"sourceTables": pattern, "sinkTable": "all/orders"}]
        manifest.write_text(yaml.safe_dump_all(documents, sort_keys=False))
        state, logs = tmp_path / "state", tmp_path / "logs"
        first = run_sparkcdc(manifest, state, logs)
        assert first.returncode == 0, first.describe()
        conn = pymysql.connect(host=mariadb.host, port=mariadb.port, user="root", password="")
        try:  # one transaction over both shards
            with conn.cursor() as cur:
                for db in dbs:
                    cur.execute(f"UPDATE `{db}`.orders SET v = CONCAT(v, '+') WHERE id <= 20")
                    cur.execute(f"DELETE FROM `{db}`.orders WHERE id BETWEEN 21 AND 30")
                    cur.execute(f"INSERT INTO `{db}`.orders VALUES (1000, 'new')")
            conn.commit()
        finally:
            conn.close()
        second = run_sparkcdc(manifest, state, logs)
        assert second.returncode == 0, second.describe()
        table = inspect_delta(tmp_path, {"orders": tmp_path / "lake" / "all" / "orders"})["orders"].latest
        stored = sorted(
            zip(
                *(table.column(n).to_pylist() for n in ("_source_db", "_source_table", "id", "v")),
                strict=True,
            )
        )
        expected = sorted(
            (db, "orders", int(i), str(v))
            for db in dbs
            for i, v in mariadb.execute(f"SELECT id, v FROM `{db}`.orders")
        )
        assert stored == expected
    finally:
        for db in dbs:
            mariadb.execute(f"DROP DATABASE IF EXISTS `{db}`")
