"""Source tables the Kubernetes tests replicate: a database of ``(id, name, price)`` tables and a writer
that changes them (inserts, updates, key changes, deletes, small transactions) until stopped."""

from __future__ import annotations

import contextlib
import random
import threading
import time
from collections.abc import Iterator
from typing import Any

from harness.mariadb import unique_name
from sparkcdc.testing.mariadb import MariaDBServer


class Writer(threading.Thread):
    """Inserts, updates (also of the primary key) and deletes rows of ``db.table(id, name, price)``,
    single statements and small multi-statement transactions, until stopped."""

    def __init__(self, mariadb: MariaDBServer, db: str, table: str, next_id: int, seed: int) -> None:
        super().__init__(name=f"writer-{table}", daemon=True)
        self.mariadb, self.db, self.table, self.next_id = mariadb, db, table, next_id
        self.rng = random.Random(seed)
        self.ops: dict[str, int] = {"insert": 0, "update": 0, "rekey": 0, "delete": 0, "txn": 0}
        self.error: BaseException | None = None
        self._halt = threading.Event()

    def run(self) -> None:
        conn = self.mariadb.root_connection(self.db)
        try:
            with conn.cursor() as cur:
                while not self._halt.is_set():
                    if self.rng.random() < 0.15:
                        cur.execute("BEGIN")
                        for _ in range(self.rng.randint(2, 5)):
                            self._one(cur)
                        cur.execute("COMMIT")
                        self.ops["txn"] += 1
                    else:
                        self._one(cur)
                    time.sleep(self.rng.uniform(0.03, 0.12))
        except BaseException as err:
            self.error = err
        finally:
            conn.close()

    def _one(self, cur: Any) -> None:
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

    def stop(self) -> None:
        self._halt.set()
        self.join(timeout=30)
        if self.error is not None:
            raise self.error


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
