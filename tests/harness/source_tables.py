"""Source tables the Kubernetes tests replicate: a database of ``(id, name, price)`` tables and a writer
that changes them (inserts, updates, key changes, deletes, small transactions) until stopped, a
``harness.writer.RandomWriter``."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from harness.mariadb import unique_name
from harness.writer import RandomWriter
from sparkcdc.testing.mariadb import MariaDBServer


class Writer(RandomWriter):
    """Inserts, updates (also of the primary key) and deletes rows of ``db.table(id, name, price)``,
    single statements and small multi-statement transactions, until stopped; ``ops`` counts them
    by kind (``txn``: the multi-statement transactions)."""

    def __init__(self, mariadb: MariaDBServer, db: str, table: str, next_id: int, seed: int) -> None:
        super().__init__(mariadb, seed, db=db, name=f"writer-{table}")
        self.mariadb, self.table, self.next_id = mariadb, table, next_id
        self.ops: dict[str, int] = {"insert": 0, "update": 0, "rekey": 0, "delete": 0, "txn": 0}

    def transaction(self, cur: Any) -> None:
        if self.rng.random() < 0.15:
            for _ in range(self.rng.randint(2, 5)):
                self.op(cur)
            self.ops["txn"] += 1
        else:
            self.op(cur)

    def pause_seconds(self) -> float:
        return self.rng.uniform(0.03, 0.12)

    def op(self, cur: Any) -> None:
        t, rng = f"`{self.table}`", self.rng
        victim = rng.randrange(1, self.next_id)
        kind = rng.choices(["insert", "update", "rekey", "delete"], weights=[4, 4, 1, 2])[0]
        if kind == "insert":
            self.next_id += 1
            cur.execute(f"INSERT INTO {t} VALUES (%s, %s, %s)", (self.next_id, f"new {self.next_id}", 1.5))
        elif kind == "update":
            cur.execute(
                f"UPDATE {t} SET name = %s, price = price + 1 WHERE id = %s", (f"upd {victim}", victim)
            )
        elif kind == "rekey":  # the key changes: a delete of the old key and an insert of the new one
            self.next_id += 1
            cur.execute(f"UPDATE IGNORE {t} SET id = %s WHERE id = %s", (self.next_id, victim))
        else:
            cur.execute(f"DELETE FROM {t} WHERE id = %s", (victim,))
        self.ops[kind] += 1


@contextlib.contextmanager
def source_database(mariadb: MariaDBServer, prefix: str, tables: dict[str, int]) -> Iterator[str]:
    """A new source database with ``tables`` (name: rows); it and its ``_replica`` are dropped after."""
    db = unique_name(prefix)
    mariadb.execute(f"CREATE DATABASE `{db}`")
    for table, rows in tables.items():
        create_table(mariadb, db, table, rows)
    try:
        yield db
    finally:
        mariadb.execute(f"DROP DATABASE IF EXISTS `{db}`")
        mariadb.execute(f"DROP DATABASE IF EXISTS `{db}_replica`")


def create_table(mariadb: MariaDBServer, db: str, table: str, rows: int) -> None:
    mariadb.execute(
        f"CREATE TABLE `{db}`.`{table}` (id INT PRIMARY KEY, name VARCHAR(40), price DECIMAL(10,2))"
    )
    values = ",".join(f"({i}, 'item {i}', {i % 997}.25)" for i in range(1, rows + 1))
    mariadb.execute(f"INSERT INTO `{db}`.`{table}` VALUES {values}")
