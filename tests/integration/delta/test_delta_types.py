"""Spatial values and zero dates through ``sparkcdc run`` into a real Delta table.

Every spatial type with SRID 0 and 4326 and every zero-date variant (NOT NULL and NULL-able DATE,
DATETIME, TIMESTAMP) are snapshotted and then changed through the binlog; the Delta table holds
each geometry as ``{srid, wkb}`` (the WKB equal to MariaDB's own ``ST_AsWKB``) and each zero or
partly-zero date as NULL (Delta has no such date), valid dates unchanged.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pymysql
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
DDL = """CREATE TABLE {t} (
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


def _insert(conn: Any, table: str, rid: int, srid: int) -> None:
    names = list(SPATIAL)
    geometry = ", ".join("ST_GeomFromText(%s, %s)" for _ in names)
    d, dtm, ts = DATES[rid % len(DATES)]
    with conn.cursor() as cur:
        cur.execute("SET SESSION sql_mode = ''")  # zero dates accepted
        cur.execute(
            f"INSERT INTO {table} (id, {', '.join(names)}, d, dt, ts) VALUES (%s, {geometry}, %s, %s, %s)",
            [rid, *(v for n in names for v in (SPATIAL[n], srid)), d, dtm, ts],
        )
    conn.commit()


def _date(text: str | None) -> Any:
    if text is None or text.startswith("0000") or "-00" in text:
        return None
    return dt.datetime.fromisoformat(text) if " " in text else dt.date.fromisoformat(text)


def test_spatial_and_zero_dates_into_delta(mariadb: MariaDBServer, tmp_path: Path) -> None:
    db = unique_name("types")
    table = f"`{db}`.`t`"
    mariadb.execute(f"CREATE DATABASE `{db}`")
    mariadb.execute(DDL.format(t=table))
    conn = pymysql.connect(host=mariadb.host, port=mariadb.port, user="root", password="")
    try:
        for rid in range(6):
            _insert(conn, table, rid, 4326 if rid % 2 else 0)
        assert mariadb.cdc_password
        manifest = pipeline_manifest(
            tmp_path / "types.yaml",
            name="delta-types",
            host=mariadb.host,
            port=mariadb.port,
            password=mariadb.cdc_password,
            tables=[f"{db}.t"],
            sink=delta_sink(tmp_path / "lake"),
            mode="initial",
        )
        state, logs = tmp_path / "state", tmp_path / "logs"
        assert (first := run_sparkcdc(manifest, state, logs)).returncode == 0, first.describe()
        for rid in range(6, 12):  # the same values through the binlog
            _insert(conn, table, rid, 4326 if rid % 2 else 0)
        assert (second := run_sparkcdc(manifest, state, logs)).returncode == 0, second.describe()
    finally:
        conn.close()
    try:
        wkb = {
            (rid, name): (int(srid), bytes(value))
            for rid in range(12)
            for name in SPATIAL
            for srid, value in mariadb.execute(
                f"SELECT ST_SRID({name}), ST_AsWKB({name}) FROM {table} WHERE id = {rid}"
            )
        }
        stored = inspect_delta(tmp_path, {"t": tmp_path / "lake" / db / "t"})["t"].latest.to_pylist()
        assert sorted(r["id"] for r in stored) == list(range(12))
        for row in stored:
            rid = row["id"]
            for name in SPATIAL:
                assert (row[name]["srid"], bytes(row[name]["wkb"])) == wkb[(rid, name)], (rid, name)
            d, dtm, ts = DATES[rid % len(DATES)]
            assert row["d"] == _date(d), (rid, row["d"])
            assert _naive(row["dt"]) == _date(dtm), (rid, row["dt"])
            local = _date(ts)  # in the server's zone: Delta holds the instant, in UTC
            expected = None if local is None else local - _SERVER_OFFSET
            assert _utc(row["ts"]) == expected, (rid, row["ts"])
    finally:
        mariadb.execute(f"DROP DATABASE IF EXISTS `{db}`")


def _naive(value: Any) -> Any:
    return value.replace(tzinfo=None) if isinstance(value, dt.datetime) else value


def _utc(value: Any) -> Any:
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return value
