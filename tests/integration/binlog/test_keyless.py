"""Tables without a primary key, split on a non-unique chunk key, on real MariaDB (+ PostgreSQL).

``products_no_pk`` (Flink CDC's test table: no key at all) is split on ``type``, which few
values share among many rows, and identified in the sink by all its columns; ``events_no_pk``
by ``sinkKeyColumns: [id]``. A writer inserts, updates (also the chunk key), and deletes while
the snapshot runs and the run is killed once: both replicas end with every source row, none
twice; two identical source rows are one sink row, as docs/reference.md says.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from binlog_support import Case, assert_same_rows

from harness.writer import RandomWriter
from sparkcdc.testing.postgres import PostgresServer

SEED = 20261215
TYPES = ("car", "bike", "boat", "plane")


def _create(case: Case) -> None:
    db = case.db
    for table in ("products_no_pk", "events_no_pk"):
        case.execute(
            f"CREATE TABLE `{db}`.{table} (id INT NOT NULL, type VARCHAR(20) NOT NULL, "
            "name VARCHAR(40) NOT NULL, weight DECIMAL(10,3) NOT NULL)"
        )
        case.execute(
            f"INSERT INTO `{db}`.{table} SELECT seq, ELT(1 + seq % 4, 'car', 'bike', 'boat', 'plane'), "
            f"CONCAT('p', seq), seq / 7 FROM `{db}`.seq_1_to_800"
        )
    # Two identical rows: one row in the sink under a full-row identity.
    case.execute(f"INSERT INTO `{db}`.products_no_pk VALUES (0, 'car', 'twin', 1), (0, 'car', 'twin', 1)")


class KeylessWriter(RandomWriter):
    def __init__(self, case: Case) -> None:
        super().__init__(case.server, SEED, db=case.db)
        self._ids = {t: list(range(1, 801)) for t in ("products_no_pk", "events_no_pk")}
        self._next = 10_000

    def op(self, cur: Any) -> None:
        table = self.rng.choice(list(self._ids))
        ids, name = self._ids[table], f"`{self.db}`.{table}"
        kind = self.rng.choices(["insert", "update", "retype", "delete"], [3, 4, 2, 2])[0]
        if kind == "insert":
            self._next += 1
            cur.execute(
                f"INSERT INTO {name} VALUES (%s, %s, 'new', 1.5)", (self._next, self.rng.choice(TYPES))
            )
            ids.append(self._next)
            return
        index = self.rng.randrange(len(ids))
        if kind == "update":
            cur.execute(f"UPDATE {name} SET weight = weight + 1 WHERE id = %s", (ids[index],))
        elif kind == "retype":  # moves the row to another split
            cur.execute(f"UPDATE {name} SET type = %s WHERE id = %s", (self.rng.choice(TYPES), ids[index]))
        else:
            cur.execute(f"DELETE FROM {name} WHERE id = %s", (ids[index],))
            ids[index] = ids[-1]
            ids.pop()


def _pipeline(case: Case, name: str) -> dict[str, Any]:
    pipeline = case.pipeline(name, ["products_no_pk", "events_no_pk"], snapshot={"chunkSize": 60})
    pipeline["spec"]["snapshot"]["chunkKeyColumns"] = {
        f"{case.db}.products_no_pk": ["type"],
        f"{case.db}.events_no_pk": ["type"],
    }
    pipeline["spec"]["snapshot"]["sinkKeyColumns"] = {f"{case.db}.events_no_pk": ["id"]}
    return pipeline


def _distinct(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return list(Counter(rows))


@pytest.mark.timeout(600)
def test_keyless_tables_under_writer_and_kill(case: Case, postgres: PostgresServer) -> None:
    _create(case)
    pg = _pipeline(case, "nopk-pg")
    database, secret = case.to_postgres(pg, postgres)
    manifest = case.manifest("nopk.yaml", secret, _pipeline(case, "nopk"), pg)
    writer = KeylessWriter(case)
    writer.start()
    try:
        run = case.start(manifest)
        try:
            if not run.wait_for(lambda: bool((cp := case.checkpoint("nopk")) and cp.finished), 120):
                raise AssertionError(f"no split finished:\n{run.result().describe()}")
        finally:
            run.kill()
        case.run_ok(manifest)  # the rest of the snapshot and the stream, the writer still going
    finally:
        writer.stop()
    assert writer.transactions > 20
    case.run_ok(manifest)
    sink = case.sink_db("nopk")
    for table in ("products_no_pk", "events_no_pk"):
        source = _distinct(case.rows(case.db, table))  # the twins are one row in the sink
        assert_same_rows(source, case.rows(sink, table), f"{table} in MariaDB")
        stored = [tuple(r) for r in postgres.execute(f"SELECT * FROM {table}", database=database)]
        assert_same_rows(source, stored, f"{table} in PostgreSQL")
    assert case.execute(f"SELECT COUNT(*) FROM `{sink}`.products_no_pk WHERE name = 'twin'") == [(1,)]
