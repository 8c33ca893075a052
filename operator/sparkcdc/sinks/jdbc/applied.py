"""How far a pipeline's binlog batches are in a JDBC sink: ``sparkcdc_applied``, one row per pipeline.

A pipeline that follows referential actions (engine/cascading.py) writes each binlog batch in one
transaction, which also records the batch's end here. A batch replayed after a kill between that
commit and the checkpoint's write is then cut to what the sink does not hold yet: replaying it
whole is not idempotent, because a cascade of two hops or more (core/cascades.py) finds its rows
through an intermediate table that the first application already changed, so a grandchild the
replay upserts again would stay. The row also names the source server whose positions it holds
(``source``): positions of another server (after a failover) are not compared.

Only such pipelines have the table; it is created, like the fence table, only when missing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sparkcdc.sinks.jdbc.fence import create_missing_table

if TYPE_CHECKING:
    from sparkcdc.sinks.jdbc.dialects import Dialect

__all__ = ["APPLIED_TABLE", "ensure_applied_table", "read_applied", "write_applied"]

APPLIED_TABLE = "sparkcdc_applied"
_COLUMNS = (
    "pipeline VARCHAR(320) NOT NULL PRIMARY KEY, source VARCHAR(200) NOT NULL, through VARCHAR(600) NOT NULL"
)


def ensure_applied_table(cur: Any, dialect: Dialect) -> None:
    create_missing_table(cur, dialect, APPLIED_TABLE, _COLUMNS)


def read_applied(cur: Any, dialect: Dialect, pipeline: str) -> tuple[str, str] | None:
    """(source, offset) the pipeline's batches were last written through, if any."""
    cur.execute(
        f"SELECT source, through FROM {dialect.quote(APPLIED_TABLE)} WHERE pipeline = %s", (pipeline,)
    )
    row = cur.fetchone()
    return None if row is None else (str(row[0]), str(row[1]))


def write_applied(cur: Any, dialect: Dialect, pipeline: str, source: str, through: str) -> None:
    table = dialect.quote(APPLIED_TABLE)
    insert, on_conflict = dialect.insert_absent
    cur.execute(
        f"{insert} {table} (pipeline, source, through) VALUES (%s, %s, %s){on_conflict}",
        (pipeline, source, through),
    )
    cur.execute(
        f"UPDATE {table} SET source = %s, through = %s WHERE pipeline = %s", (source, through, pipeline)
    )
