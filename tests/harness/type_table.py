"""The table of every type family the MySQL tests read both ways (snapshot and binlog, ConnectorX
and PyMySQL, the Go decoder and Python): its ``DDL`` (``{t}``: the table's name), hand-picked
edge-case ``ROWS`` (extremes, zero dates, all NULL), ``random_rows`` (seeded) and ``insert_rows``.

Values are given as MySQL reads them from a client in the server's (non-UTC) time zone, with
``sql_mode=''`` so that zero dates are accepted.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from sparkcdc.testing.mariadb import MariaDBServer

__all__ = ["DDL", "ROWS", "UNSPELLED", "insert_rows", "random_rows"]

DDL = """
CREATE TABLE {t} (
  id INT PRIMARY KEY,
  ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT, siu SMALLINT UNSIGNED,
  mi MEDIUMINT, miu MEDIUMINT UNSIGNED, i INT, iu INT UNSIGNED, bi BIGINT, biu BIGINT UNSIGNED,
  d65 DECIMAL(65,30), d10 DECIMAL(10,2), f FLOAT, db DOUBLE,
  b1 BIT(1), b10 BIT(10), b64 BIT(64),
  dte DATE, tm TIME, tm1 TIME(1), tm3 TIME(3), tm6 TIME(6),
  dtm DATETIME, dtm6 DATETIME(6), ts TIMESTAMP(6) NULL DEFAULT NULL, ts0 TIMESTAMP NULL DEFAULT NULL,
  yr YEAR,
  ch CHAR(10), vc VARCHAR(50) CHARACTER SET utf8mb4, tx TEXT, lat VARCHAR(20) CHARACTER SET latin1,
  bn BINARY(8), vb VARBINARY(20), bl BLOB,
  e ENUM('a','b','c'), s SET('x','y','z'),
  j JSON, g GEOMETRY NULL
)
"""

# The columns whose values the Go decoder does not spell as text itself (changelog lines, load
# text: mysql/binlog/rendered.py); the tests of its spellings drop them.
UNSPELLED = ("b1", "b10", "b64", "tm", "tm1", "tm3", "tm6", "yr", "bn", "vb", "bl", "e", "s")

ROWS: list[dict[str, Any]] = [
    dict(
        id=1,
        ti=-128,
        tiu=255,
        si=-32768,
        siu=65535,
        mi=-8388608,
        miu=16777215,
        i=-2147483648,
        iu=4294967295,
        bi=-(2**63),
        biu=18446744073709551615,
        d65=Decimal("-12345678901234567890123456789012345.123456789012345678901234567891"),
        d10=Decimal("-99999999.99"),
        f=3.1415927,
        db=1.7976931348623157e308,
        b1=1,
        b10=0b1111111111,
        b64=2**64 - 1,
        dte="1000-01-01",
        tm="-838:59:59",
        tm1="-00:00:00.5",
        tm3="-12:34:56.789",
        tm6="-838:59:58.999999",
        dtm="1000-01-01 00:00:00",
        dtm6="9999-12-31 23:59:59.999999",
        ts="1970-01-01 05:30:01.000001",
        ts0="2038-01-19 08:44:07",
        yr=1901,
        ch="ab",
        vc="emoji 😀 ünïcode",
        tx="x" * 1000,
        lat="café",
        bn=b"\x00ab",
        vb=b"\x00\x01\x00",
        bl=bytes(range(256)),
        e="c",
        s="z,x",
        j='{"a": [1, 2.5, "x"], "b": null}',
        g="POINT(1 2)",
    ),
    dict(
        id=2,
        ti=127,
        tiu=0,
        si=32767,
        siu=0,
        mi=8388607,
        miu=0,
        i=2147483647,
        iu=0,
        bi=2**63 - 1,
        biu=0,
        d65=Decimal("0"),
        d10=Decimal("0.01"),
        f=-1e-38,
        db=-5e-324,
        b1=0,
        b10=0,
        b64=0,
        dte="9999-12-31",
        tm="838:59:59",
        tm1="00:00:00.1",
        tm3="00:00:00.001",
        tm6="-00:00:00.000001",
        dtm="2024-02-29 12:00:00",
        dtm6="2024-02-29 12:00:00.5",
        ts="2038-01-19 08:44:07.999999",
        ts0="2024-06-01 00:00:00",
        yr=2155,
        ch="",
        vc="",
        tx="",
        lat="",
        bn=b"",
        vb=b"",
        bl=b"",
        e="a",
        s="",
        j="[]",
        g="LINESTRING(0 0, 1 1, 2 5)",
    ),
    # Zero dates (accepted with sql_mode=''), YEAR 0000, the zero TIMESTAMP.
    dict(
        id=3,
        dte="0000-00-00",
        dtm="0000-00-00 00:00:00",
        dtm6="2024-00-10 00:00:00",
        ts="0000-00-00 00:00:00",
        yr=0,
        e="",
        tm="00:00:00",
        s="x,y,z",
    ),
    dict(id=4),  # all NULL
]


def random_rows(count: int) -> list[dict[str, Any]]:
    """``count`` rows with ids from 100 on and random values in the columns where rounding and
    ranges bite (floats, decimals, fractional times, timestamps, 64-bit unsigned); always the
    same ones."""
    rng = random.Random(7)
    rows = []
    for n in range(count):
        rows.append(
            dict(
                id=100 + n,
                f=struct.unpack("<f", struct.pack("<f", rng.uniform(-1e6, 1e6)))[0]
                * rng.choice([1, 1e-20, 1e20]),
                db=rng.uniform(-1, 1) * 10 ** rng.randint(-300, 300),
                d65=Decimal(rng.randint(-(10**34), 10**34)) / Decimal(10**30),
                tm6=f"{rng.choice(['-', ''])}{rng.randint(0, 838)}:{rng.randint(0, 59):02d}:"
                f"{rng.randint(0, 59):02d}.{rng.randint(0, 999999):06d}",
                tm3=f"{rng.choice(['-', ''])}{rng.randint(0, 838)}:{rng.randint(0, 59):02d}:"
                f"{rng.randint(0, 59):02d}.{rng.randint(0, 999):03d}",
                ts=f"20{rng.randint(10, 30)}-0{rng.randint(1, 9)}-1{rng.randint(0, 9)} "
                f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00.{rng.randint(0, 999999):06d}",
                biu=rng.randint(0, 2**64 - 1),
                b64=rng.randint(0, 2**64 - 1),
            )
        )
    return rows


def insert_rows(server: MariaDBServer, table: str, rows: list[dict[str, Any]]) -> None:
    """Insert ``rows`` (each with the columns it names) into ``table`` (a quoted name) as root."""
    conn = server.root_connection()
    try:
        with conn.cursor() as cur:
            # The writer session keeps the server's (non-UTC) zone: TIMESTAMP literals are local.
            cur.execute("SET SESSION sql_mode = ''")
            for row in rows:
                names = list(row)
                marks = ["ST_GeomFromText(%s)" if n == "g" else "%s" for n in names]
                cur.execute(
                    f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join(marks)})",
                    [row[n] for n in names],
                )
    finally:
        conn.close()


def create_without_geometry(server: MariaDBServer, table: str) -> None:
    """The type table without its GEOMETRY column (the Go decoder leaves that family to Python)."""
    server.execute(DDL.replace(", g GEOMETRY NULL", "").format(t=table))


def write_changes_without_geometry(server: MariaDBServer, table: str, dropped: Sequence[str] = ()) -> None:
    """A stretch of changes on the table ``create_without_geometry`` made (less the ``dropped``
    columns): the edge-case and random rows, updates, key changes there and back, deletes. The Go
    decoder's tests compare its reduction of this stretch with Python's."""
    left_out = {"g", *dropped}
    rows = [{k: v for k, v in r.items() if k not in left_out} for r in ROWS + random_rows(300)]
    insert_rows(server, table, rows)
    server.execute(f"UPDATE {table} SET tiu = 7, vc = 'updated ✓' WHERE id IN (1, 3, 150)")
    server.execute(f"UPDATE {table} SET id = id + 10000 WHERE id BETWEEN 120 AND 140")  # key changes
    server.execute(f"UPDATE {table} SET id = 130 WHERE id = 10130")  # and back
    server.execute(f"DELETE FROM {table} WHERE id IN (2, 101, 10121)")
