"""A writer that changes tables' definitions between its transactions (DDL-following tests).

``DdlWriter`` inserts, updates and deletes rows of three tables while a pipeline streams them,
and runs the statements of ``DDL_SCRIPT`` in its own thread between two transactions when the
test asks for the next one (``next_ddl``), so that every statement it writes names the columns
and fits the types of that moment: wider values follow a widening at once, and writes go on
before and after every statement.

* ``t`` (``id`` INT key, ``a`` VARCHAR(20), ``n`` TINYINT, ``d`` DECIMAL(6,2), ``z`` INT NOT
  NULL, ``u`` TINYINT UNSIGNED): renamed (the key too), widened, a column added;
* ``k`` (``id``, ``v``): truncated twice;
* ``x`` (``id``, ``v`` VARCHAR(20), values of at most 5 characters): narrowed, which must stop
  only ``x``;
* ``y`` (``id``, ``v``): untouched by DDL; the other tables' neighbour.
"""

from __future__ import annotations

import queue
from decimal import Decimal
from typing import Any

from harness.writer import RandomWriter

__all__ = ["ADDED_DEFAULTS", "DDL_SCRIPT", "NARROWING", "DdlWriter", "create_ddl_tables"]

# Each statement, and what it changes for the writer: column roles renamed, values widened.
DDL_SCRIPT: list[tuple[str, dict[str, str]]] = [
    ("ALTER TABLE t RENAME COLUMN a TO b, ADD c INT DEFAULT 3", {"text": "b"}),
    ("TRUNCATE TABLE k", {}),
    ("ALTER TABLE `t` MODIFY n INT, MODIFY COLUMN z INT NULL", {"wide": "n z"}),
    ("ALTER TABLE x MODIFY v VARCHAR(5)", {}),
    ("ALTER TABLE t CHANGE d dd DECIMAL(9,3), MODIFY u SMALLINT", {"dec": "dd", "wide": "d u"}),
    ("ALTER TABLE t RENAME COLUMN id TO tid", {"key": "tid"}),
    ("ALTER TABLE t MODIFY b VARCHAR(60) NOT NULL DEFAULT ''", {"wide": "a"}),
    ("TRUNCATE k", {}),
]
NARROWING = "ALTER TABLE x MODIFY v VARCHAR(5)"
# What rows written before ``c`` was added read on the source (a changelog carries no default).
ADDED_DEFAULTS = {"c": 3}


def create_ddl_tables(server: Any, db: str) -> None:
    server.execute(
        f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY, a VARCHAR(20) NOT NULL, n TINYINT, d DECIMAL(6,2), "
        "z INT NOT NULL, u TINYINT UNSIGNED)"
    )
    for name, width in (("k", 10), ("x", 20), ("y", 10)):
        server.execute(f"CREATE TABLE `{db}`.`{name}` (id INT PRIMARY KEY, v VARCHAR({width}))")
    server.execute(
        f"INSERT INTO `{db}`.t VALUES "
        + ", ".join(f"({i}, 'a{i}', {i % 100 - 50}, {i}.25, {i}, {i % 250})" for i in range(1, 61))
    )
    for name in ("k", "x", "y"):
        server.execute(
            f"INSERT INTO `{db}`.`{name}` VALUES " + ", ".join(f"({i}, 'v{i}')" for i in range(1, 31))
        )


class DdlWriter(RandomWriter):
    """See the module docstring."""

    def __init__(self, server: Any, db: str, seed: int, pause: float = 0.01) -> None:
        super().__init__(server, seed, db=db, most=3, pause=pause)
        self.roles = {"key": "id", "text": "a", "dec": "d"}
        self.wide: set[str] = set()
        self.ddl_done = 0
        self._pending: queue.Queue[tuple[str, dict[str, str]]] = queue.Queue()

    def next_ddl(self, statement: str, changes: dict[str, str]) -> None:
        self._pending.put((statement, changes))

    def transaction(self, cur: Any) -> None:
        try:
            statement, changes = self._pending.get_nowait()
        except queue.Empty:
            super().transaction(cur)
            return
        cur.execute(statement)
        self.wide.update(changes.pop("wide", "").split())
        self.roles.update(changes)
        self.ddl_done += 1

    def op(self, cur: Any) -> None:
        pick = self.rng.random()
        if pick < 0.6:
            self._t(cur)
        else:
            table = "k" if pick < 0.8 else ("x" if pick < 0.9 else "y")
            self._small(cur, table)

    def _t(self, cur: Any) -> None:
        r, wide = self.rng, self.wide
        key, text, dec = self.roles["key"], self.roles["text"], self.roles["dec"]
        row_id = r.randint(1, 90)
        n = r.randint(-100_000, 100_000) if "n" in wide else r.randint(-128, 127)
        z = r.choice([None, r.randint(0, 9)]) if "z" in wide else r.randint(0, 9)
        u = r.randint(-300, 30_000) if "u" in wide else r.randint(0, 255)
        digits = r.randint(0, 999_999_999) if "d" in wide else r.randint(0, 999_999)
        value = Decimal(digits).scaleb(-3 if "d" in wide else -2) * r.choice([1, -1])
        label = "w" * r.randint(0, 60 if "a" in wide else 20)
        what = r.random()
        if what < 0.5:
            cur.execute(
                f"INSERT INTO t ({key}, {text}, n, {dec}, z, u) VALUES (%s, %s, %s, %s, %s, %s) "
                f"ON DUPLICATE KEY UPDATE {text} = VALUES({text}), n = VALUES(n), {dec} = VALUES({dec})",
                (row_id, label, n, value, z, u),
            )
        elif what < 0.8:
            cur.execute(f"UPDATE t SET n = %s, z = %s, u = %s WHERE {key} = %s", (n, z, u, row_id))
        else:
            cur.execute(f"DELETE FROM t WHERE {key} = %s", (row_id,))

    def _small(self, cur: Any, table: str) -> None:
        row_id = self.rng.randint(1, 60)
        if self.rng.random() < 0.75:
            value = f"{table}{self.rng.randint(0, 999)}"
            cur.execute(
                f"INSERT INTO `{table}` VALUES (%s, %s) ON DUPLICATE KEY UPDATE v = VALUES(v)",
                (row_id, value),
            )
        else:
            cur.execute(f"DELETE FROM `{table}` WHERE id = %s", (row_id,))
