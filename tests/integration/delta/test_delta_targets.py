"""Routes, column rules, metadata, soft deletes, spatial values and zero dates into real Delta tables.

Three pipelines run side by side in one ``sparkcdc run`` (one Spark session: Delta's start-up is
the cost here), a snapshot first, then changes through the binlog, then one Delta-enabled read:

* **merged shards** — two same-named tables of two databases routed into one Delta table. Both
  shards' splits cover the same key ranges (each wave's replaceWhere is confined to its shard), and
  one transaction changes both shards: each shard's part of the batch is its own MERGE with the same
  end offset, so each keeps its own exactly-once version (``txnAppId``) and neither is skipped as a
  replay of the other;
* **soft deletes** with metadata columns and a masked column: deleted rows stay with
  ``_deleted = 1`` and their last image, a re-inserted key is revived, snapshot rows carry
  ``_op = r``, the masked column holds the digest in snapshot appends and binlog MERGEs alike;
* **types** — every spatial type with SRID 0 and 4326 as ``{srid, wkb}`` equal to MariaDB's own
  ``ST_SRID``/``ST_AsWKB``; zero and partly-zero dates as NULL (Delta has no such date), valid
  dates unchanged, TIMESTAMP as the UTC instant.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pymysql
import pytest
import yaml
from delta_support import delta_sink, inspect_delta

from harness.mariadb import SERVER_TIME_ZONE, unique_name
from harness.runner import pipeline_manifest, run_sparkcdc
from sparkcdc.testing.mariadb import MariaDBServer

SPATIAL = {
    "pt": "POINT(1 2)",
    "ls": "LINESTRING(0 0, 1 1, 2 5)",
    "pg": "POLYGON((0 0, 4 0, 4 4, 0 4, 0 0))",
    "mpt": "MULTIPOINT(0 0, 1 2)",
    "mls": "MULTILINESTRING((0 0, 1 1), (2 2, 3 3))",
    "mpg": "MULTIPOLYGON(((0 0, 1 0, 1 1, 0 0)))",
    "gc": "GEOMETRYCOLLECTION(POINT(1 1), LINESTRING(0 0, 1 1))",
    "g": "POINT(-71.06 42.36)",
}
TYPES_DDL = """CREATE TABLE {t} (
  id INT PRIMARY KEY,
  g GEOMETRY NULL, pt POINT NULL, ls LINESTRING NULL, pg POLYGON NULL, mpt MULTIPOINT NULL,
  mls MULTILINESTRING NULL, mpg MULTIPOLYGON NULL, gc GEOMETRYCOLLECTION NULL,
  d DATE NOT NULL, dt DATETIME NOT NULL, ts TIMESTAMP(3) NULL DEFAULT NULL
)"""
_SERVER_OFFSET = dt.datetime.strptime(SERVER_TIME_ZONE, "%z").utcoffset() or dt.timedelta()
DATES = [  # (d, dt, ts): zero, partly zero, valid
    ("0000-00-00", "0000-00-00 00:00:00", "0000-00-00 00:00:00"),
    ("2020-00-10", "2020-05-00 10:11:12", None),
    ("2021-03-04", "2021-03-04 05:06:07", "2021-03-04 05:06:07.123"),
]


@dataclass
class Run:
    server: MariaDBServer
    shards: list[str]  # databases holding `orders`
    soft: str  # database holding `t` (soft deletes)
    types: str  # database holding `t` (spatial, dates)
    tables: dict[str, pa.Table]


def _root(server: MariaDBServer) -> Any:
    return pymysql.connect(host=server.host, port=server.port, user="root", password="")


def _create(server: MariaDBServer, shards: list[str], soft: str, types: str) -> None:
    for db in [*shards, soft, types]:
        server.execute(f"CREATE DATABASE `{db}`")
    for db in shards:
        server.execute(f"CREATE TABLE `{db}`.orders (id INT PRIMARY KEY, v VARCHAR(20))")
        server.execute(f"INSERT INTO `{db}`.orders SELECT seq, CONCAT('{db}', seq) FROM `{db}`.seq_1_to_300")
    server.execute(f"CREATE TABLE `{soft}`.t (id INT PRIMARY KEY, v VARCHAR(20), secret VARCHAR(20))")
    server.execute(
        f"INSERT INTO `{soft}`.t SELECT seq, CONCAT('v', seq), CONCAT('s', seq) FROM `{soft}`.seq_1_to_100"
    )
    server.execute(TYPES_DDL.format(t=f"`{types}`.t"))
    for rid in range(6):
        _insert_types(server, f"`{types}`.t", rid)


def _insert_types(server: MariaDBServer, table: str, rid: int) -> None:
    names, srid = list(SPATIAL), 4326 if rid % 2 else 0
    geometry = ", ".join("ST_GeomFromText(%s, %s)" for _ in names)
    d, dtm, ts = DATES[rid % len(DATES)]
    conn = _root(server)
    try:
        with conn.cursor() as cur:
            cur.execute("SET SESSION sql_mode = ''")  # zero dates accepted
            cur.execute(
                f"INSERT INTO {table} (id, {', '.join(names)}, d, dt, ts)"
                f" VALUES (%s, {geometry}, %s, %s, %s)",
                [rid, *(v for n in names for v in (SPATIAL[n], srid)), d, dtm, ts],
            )
        conn.commit()
    finally:
        conn.close()


def _change(server: MariaDBServer, shards: list[str], soft: str, types: str) -> None:
    conn = _root(server)
    try:  # one transaction over both shards
        with conn.cursor() as cur:
            for db in shards:
                cur.execute(f"UPDATE `{db}`.orders SET v = CONCAT(v, '+') WHERE id <= 20")
                cur.execute(f"DELETE FROM `{db}`.orders WHERE id BETWEEN 21 AND 30")
                cur.execute(f"INSERT INTO `{db}`.orders VALUES (1000, 'new')")
        conn.commit()
    finally:
        conn.close()
    for sql in (
        "DELETE FROM `{db}`.t WHERE id IN (1, 2)",
        "INSERT INTO `{db}`.t VALUES (1, 'back', 'sx')",
        "UPDATE `{db}`.t SET v = 'changed' WHERE id = 3",
    ):
        server.execute(sql.format(db=soft))
    for rid in range(6, 12):  # the same values through the binlog
        _insert_types(server, f"`{types}`.t", rid)


def _manifest(
    path: Path, server: MariaDBServer, lake: Path, shards: list[str], soft: str, types: str
) -> Path:
    assert server.cdc_password
    pattern = rf"({shards[0]}|{shards[1]})\.orders"
    specs = {
        "delta-routes": ([pattern], delta_sink(lake / "routes"), 50),
        "delta-soft": (
            [f"{soft}.t"],
            delta_sink(lake / "soft", metadataColumns=["op", "binlog_pos"], deleteMode="soft"),
            40,
        ),
        "delta-types": ([f"{types}.t"], delta_sink(lake / "types"), 8096),
    }
    documents: list[Any] = []
    for name, (tables, sink, chunk) in specs.items():
        written = pipeline_manifest(
            path, name=name, host=server.host, port=server.port, password=server.cdc_password,
            tables=tables, sink=sink, mode="initial", chunk_size=chunk,
        )  # fmt: skip
        secret, pipeline = yaml.safe_load_all(written.read_text())
        documents = documents or [secret]
        documents.append(pipeline)
    documents[1]["spec"]["routes"] = [{"sourceTables": pattern, "sinkTable": "all/orders"}]
    documents[2]["spec"]["transforms"] = [{"sourceTables": f"{soft}.t", "maskColumns": {"secret": "sha256"}}]
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def run(mariadb: MariaDBServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    work = tmp_path_factory.mktemp("delta-targets")
    shards, soft, types = [unique_name("ra"), unique_name("rb")], unique_name("soft"), unique_name("types")
    try:
        _create(mariadb, shards, soft, types)
        manifest = _manifest(work / "targets.yaml", mariadb, work / "lake", shards, soft, types)
        state, logs = work / "state", work / "logs"
        assert (first := run_sparkcdc(manifest, state, logs)).returncode == 0, first.describe()
        _change(mariadb, shards, soft, types)
        assert (second := run_sparkcdc(manifest, state, logs)).returncode == 0, second.describe()
        paths = {
            "orders": work / "lake" / "routes" / "all" / "orders",
            "soft": work / "lake" / "soft" / soft / "t",
            "types": work / "lake" / "types" / types / "t",
        }
        tables = {name: dump.latest for name, dump in inspect_delta(work, paths).items()}
        yield Run(mariadb, shards, soft, types, tables)
    finally:
        for db in [*shards, soft, types]:
            mariadb.execute(f"DROP DATABASE IF EXISTS `{db}`")


def test_merging_route_keeps_every_shards_rows(run: Run) -> None:
    table = run.tables["orders"]
    names = ("_source_db", "_source_table", "id", "v")
    stored = sorted(zip(*(table.column(n).to_pylist() for n in names), strict=True))
    expected = sorted(
        (db, "orders", int(i), str(v))
        for db in run.shards
        for i, v in run.server.execute(f"SELECT id, v FROM `{db}`.orders")
    )
    assert stored == expected


def test_soft_deletes_metadata_and_masks(run: Run) -> None:
    table = run.tables["soft"]
    rows = {r["id"]: r for r in table.to_pylist()}
    assert set(table.column_names) == {"id", "v", "secret", "_op", "_binlog_pos", "_deleted"}
    assert (rows[1]["v"], rows[1]["_op"], rows[1]["_deleted"]) == ("back", "c", 0)
    assert (rows[2]["v"], rows[2]["_op"], rows[2]["_deleted"]) == ("v2", "d", 1)
    assert (rows[3]["v"], rows[3]["_op"], rows[3]["_deleted"]) == ("changed", "u", 0)
    assert (rows[4]["_op"], rows[4]["_deleted"]) == ("r", 0)
    assert rows[4]["secret"] == hashlib.sha256(b"s4").hexdigest()
    assert rows[1]["secret"] == hashlib.sha256(b"sx").hexdigest()
    assert len(rows) == 100


def test_spatial_values_and_zero_dates(run: Run) -> None:
    source = f"`{run.types}`.t"
    wkb = {
        (rid, name): (int(srid), bytes(value))
        for rid in range(12)
        for name in SPATIAL
        for srid, value in run.server.execute(
            f"SELECT ST_SRID({name}), ST_AsWKB({name}) FROM {source} WHERE id = {rid}"
        )
    }
    stored = run.tables["types"].to_pylist()
    assert sorted(r["id"] for r in stored) == list(range(12))
    for row in stored:
        rid = row["id"]
        for name in SPATIAL:
            assert (row[name]["srid"], bytes(row[name]["wkb"])) == wkb[(rid, name)], (rid, name)
        d, dtm, ts = DATES[rid % len(DATES)]
        assert row["d"] == _date(d), (rid, row["d"])
        assert _naive(row["dt"]) == _date(dtm), (rid, row["dt"])
        local = _date(ts)  # in the server's zone: Delta holds the instant, in UTC
        assert _utc(row["ts"]) == (None if local is None else local - _SERVER_OFFSET), (rid, row["ts"])


def _date(text: str | None) -> Any:
    if text is None or text.startswith("0000") or "-00" in text:
        return None
    return dt.datetime.fromisoformat(text) if " " in text else dt.date.fromisoformat(text)


def _naive(value: Any) -> Any:
    return value.replace(tzinfo=None) if isinstance(value, dt.datetime) else value


def _utc(value: Any) -> Any:
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return value
