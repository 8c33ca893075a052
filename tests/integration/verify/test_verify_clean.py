"""A replica that matches its source verifies clean — on a MariaDB and on a PostgreSQL sink.

The table holds every type family the canonical encoding renders (sparkcdc.verify.canonical):
NULLs in every column, DECIMALs with trailing zeros, DATETIME(6) and TIMESTAMP(6) (the server
runs at +05:30), JSON, binary and BLOB, utf8mb4 strings with emoji and the field separator,
FLOAT and DOUBLE across magnitudes, TIME beyond 24 hours and negative, BIT, ENUM, SET, YEAR and
BIGINT UNSIGNED. A difference of one value in one row is then found in its chunk.
"""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal
from typing import Any

import pytest
from verify_support import Replica, chunk_holding, table_report

from sparkcdc.spark.lazy_session import LazySession
from sparkcdc.testing.postgres import PostgresServer

TABLE = "kinds"
ROWS = 240
DDL = f"""
CREATE TABLE `{{db}}`.`{TABLE}` (
  id INT NOT NULL PRIMARY KEY,
  amount DECIMAL(12,4), big DECIMAL(40,10), ubig BIGINT UNSIGNED,
  ratio DOUBLE, small FLOAT,
  happened DATETIME(6), stamped TIMESTAMP(6) NULL, day DATE, span TIME(6), yr YEAR,
  doc JSON, raw VARBINARY(40), fixed BINARY(6), blobby BLOB,
  name VARCHAR(80) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci,
  latin VARCHAR(40) CHARACTER SET latin1, note TEXT CHARACTER SET utf8mb4,
  flag BIT(1), bits BIT(11), kind ENUM('small', 'large', 'x y'), tags SET('a', 'b', 'c')
)
"""


def _row(i: int, rng: random.Random) -> tuple[Any, ...]:
    def maybe(value: Any) -> Any:
        return None if rng.random() < 0.2 else value

    return (
        i,
        maybe(Decimal(rng.randint(-(10**8), 10**8)).scaleb(-4)),
        maybe(Decimal(rng.randint(-(10**20), 10**20)).scaleb(-10)),
        maybe(rng.choice([0, 1, 2**63, 2**64 - 1, rng.randint(0, 2**64 - 1)])),
        maybe(rng.uniform(-1, 1) * 10 ** rng.randint(-300, 300)),
        maybe(rng.uniform(-1, 1) * 10 ** rng.randint(-30, 30)),
        maybe(dt.datetime(2000, 1, 1) + dt.timedelta(microseconds=rng.randint(0, 10**15))),
        maybe(dt.datetime(2001, 1, 1) + dt.timedelta(microseconds=rng.randint(0, 10**15))),
        maybe(dt.date(1990, 1, 1) + dt.timedelta(days=rng.randint(0, 20000))),
        maybe(dt.timedelta(microseconds=rng.randint(-838 * 3600 * 10**6, 838 * 3600 * 10**6))),
        maybe(rng.randint(1901, 2155)),
        maybe(f'{{"n": {i}, "list": [1, 2.50, "é"], "nested": {{"k": null}}}}'),
        maybe(bytes(rng.randrange(256) for _ in range(rng.randint(0, 40)))),
        maybe(bytes(rng.randrange(256) for _ in range(rng.randint(0, 6)))),
        maybe(bytes(rng.randrange(256) for _ in range(rng.randint(0, 300)))),
        maybe(str(i) + rng.choice(["plain", "Ünïcödé", "emoji 🚀🎉", "pipe | and : colon", "", "tail  "])),
        maybe(rng.choice(["café", "naïve", "x"])),
        maybe("\n".join(["line ñ"] * rng.randint(0, 5))),
        maybe(rng.randint(0, 1)),
        maybe(rng.randint(0, 2047)),
        maybe(rng.choice(["small", "large", "x y"])),
        maybe(rng.choice(["", "a", "a,c", "a,b,c"])),
    )


def _fill(replica: Replica) -> None:
    replica.execute(DDL.format(db=replica.db))
    rng = random.Random(9)
    rows = [_row(i, rng) for i in range(1, ROWS + 1)]
    rows.append((ROWS + 1,) + (None,) * 21)
    marks = ", ".join(["%s"] * 22)
    replica.execute("SET time_zone = '+00:00'")
    conn = replica.server.root_connection()
    try:
        with conn.cursor() as cur:
            cur.executemany(f"INSERT INTO `{replica.db}`.`{TABLE}` VALUES ({marks})", rows)
        conn.commit()
    finally:
        conn.close()


@pytest.mark.parametrize("sink", ["mariadb", "postgresql"])
def test_matching_replica_verifies_clean(
    replica: Replica, spark: Any, sink: str, request: pytest.FixtureRequest
) -> None:
    if sink == "postgresql":
        server: PostgresServer = request.getfixturevalue("postgres")
        replica.use_postgres(server, request.getfixturevalue("pg_database"))
    _fill(replica)
    manifest = replica.manifest(f"clean-{sink}", [TABLE], sink=sink, chunk_size=50)
    replica.snapshot(spark, manifest)

    code, report = replica.verify(spark, manifest)

    kinds = table_report(report, TABLE)
    assert code == 0 and report.ok, kinds.differing
    assert kinds.chunks >= 4
    assert kinds.source_rows == kinds.sink_rows == ROWS + 1
    assert kinds.rechecked == 0

    # One value of one row changed in the sink: found, in the chunk that holds the row.
    if sink == "postgresql":
        replica.pg_execute(f"UPDATE {TABLE} SET name = name || '!' WHERE id = 77 AND name IS NOT NULL")
        replica.pg_execute(f"UPDATE {TABLE} SET name = 'set' WHERE id = 77 AND name IS NULL")
    else:
        replica.execute(
            f"UPDATE `{replica.sink_db}`.`{TABLE}` SET happened = happened + INTERVAL 1 MICROSECOND, "
            "stamped = NULL WHERE id = 77"
        )
    # Found as well without Spark: `sparkcdc verify` checksums a JDBC replica on threads of its
    # own process and never starts the session (verify/tasks.py).
    no_spark = LazySession(lambda: pytest.fail("verify started Spark for a JDBC sink"))
    code, report = replica.verify(no_spark, manifest)
    assert not no_spark.started
    kinds = table_report(report, TABLE)
    assert code == 1 and not report.ok
    diff = chunk_holding(kinds.differing, 77)
    assert (diff.status, diff.differing_rows, diff.sample_keys) == ("differ", 1, ("77",))
    assert len(kinds.differing) == 1
