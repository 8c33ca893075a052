"""Routes, column rules, metadata columns and soft deletes into Delta.

A merging route: shards with overlapping keys share one table, nothing lost.

Two same-named tables of two databases are routed into one Delta table. The snapshot writes
both shards' splits over the same key ranges (each wave's replaceWhere confined to its shard),
then transactions that change both shards at once are streamed: each shard's part of a batch
is its own MERGE with the same end offset, so each shard keeps its own exactly-once version
(``txnAppId``) and neither is skipped as a replay of the other. Soft deletes keep deleted rows
with ``_deleted = 1`` and their last image; metadata columns and a masked column are written in
the snapshot's appends and the binlog's MERGEs alike.
"""

from __future__ import annotations

import hashlib
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


def test_soft_deletes_metadata_and_masks(mariadb: MariaDBServer, tmp_path: Path) -> None:
    """Delta with ``deleteMode: soft``, metadata columns and a masked column: deleted rows stay
    with ``_deleted = 1``, a re-inserted key is revived, the masked column holds the digest."""
    db = unique_name("soft")
    mariadb.execute(f"CREATE DATABASE `{db}`")
    mariadb.execute(f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY, v VARCHAR(20), secret VARCHAR(20))")
    mariadb.execute(
        f"INSERT INTO `{db}`.t SELECT seq, CONCAT('v', seq), CONCAT('s', seq) FROM `{db}`.seq_1_to_100"
    )
    try:
        assert mariadb.cdc_password
        manifest = pipeline_manifest(
            tmp_path / "soft.yaml",
            name="delta-soft",
            host=mariadb.host,
            port=mariadb.port,
            password=mariadb.cdc_password,
            tables=[f"{db}.t"],
            sink=delta_sink(tmp_path / "lake", metadataColumns=["op", "binlog_pos"], deleteMode="soft"),
            mode="initial",
            chunk_size=40,
        )
        documents = list(yaml.safe_load_all(manifest.read_text()))
        documents[1]["spec"]["transforms"] = [
            {"sourceTables": f"{db}.t", "maskColumns": {"secret": "sha256"}}
        ]
        manifest.write_text(yaml.safe_dump_all(documents, sort_keys=False))
        state, logs = tmp_path / "state", tmp_path / "logs"
        assert (first := run_sparkcdc(manifest, state, logs)).returncode == 0, first.describe()
        for sql in (
            "DELETE FROM `{db}`.t WHERE id IN (1, 2)",
            "INSERT INTO `{db}`.t VALUES (1, 'back', 'sx')",
            "UPDATE `{db}`.t SET v = 'changed' WHERE id = 3",
        ):
            mariadb.execute(sql.format(db=db))
        assert (second := run_sparkcdc(manifest, state, logs)).returncode == 0, second.describe()
        table = inspect_delta(tmp_path, {"t": tmp_path / "lake" / db / "t"})["t"].latest
        rows = {r["id"]: r for r in table.to_pylist()}
        assert set(table.column_names) == {"id", "v", "secret", "_op", "_binlog_pos", "_deleted"}
        assert (rows[1]["v"], rows[1]["_op"], rows[1]["_deleted"]) == ("back", "c", 0)
        assert (rows[2]["v"], rows[2]["_op"], rows[2]["_deleted"]) == ("v2", "d", 1)
        assert (rows[3]["v"], rows[3]["_op"], rows[3]["_deleted"]) == ("changed", "u", 0)
        assert (rows[4]["_op"], rows[4]["_deleted"]) == ("r", 0)
        assert rows[4]["secret"] == hashlib.sha256(b"s4").hexdigest()
        assert rows[1]["secret"] == hashlib.sha256(b"sx").hexdigest()
        assert len(rows) == 100
    finally:
        mariadb.execute(f"DROP DATABASE IF EXISTS `{db}`")
