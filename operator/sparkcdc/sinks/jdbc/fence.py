"""The epoch fence inside a JDBC sink database: ``sparkcdc_fence``, one row per pipeline.

The status checkpoint is fenced by ``status.driver.epoch``, but a zombie driver (an old epoch still
running after its successor started) would otherwise commit one more batch to the sink before its
checkpoint write is refused, overwriting newer rows with older images. So the sink holds the fence
too (``pipeline``, ``owner``, ``epoch``; rules in sparkcdc.core.fence):

* a starting driver *claims* the row in its own transaction, under an exclusive row lock;
* every sink transaction of a fenced sink (snapshot splits, binlog batches, column changes) first
  reads the row with a *shared* lock and goes on only if it holds the writer's own fence.

The locks order the two: a zombie transaction that read the row before the claim holds its shared
lock until it commits, so the claim waits for it (it committed *before* the new epoch); one that
starts later waits for the claim and then reads the new epoch, and aborts with
:class:`SinkFencedError` before it wrote anything. Writers of one driver only share the lock.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any

from sparkcdc.core.fence import Fence, FencedError
from sparkcdc.sinks.base import SinkError

if TYPE_CHECKING:
    from sparkcdc.sinks.jdbc.dialects import Dialect

__all__ = [
    "FENCE_TABLE",
    "SinkFencedError",
    "check_fence",
    "claim_fence",
    "create_missing_table",
    "ensure_fence_table",
    "fenced_message",
]

log = logging.getLogger(__name__)
FENCE_TABLE = "sparkcdc_fence"
# namespace (63) + "/" + name (253); an owner is a uid or a local directory's id.
_COLUMNS = "pipeline VARCHAR(320) NOT NULL PRIMARY KEY, owner VARCHAR(64) NOT NULL, epoch BIGINT NOT NULL"
# A Spark task's error reaches the driver as the text of a job failure: its last line names the class.
_IN_TEXT = re.compile(r"SinkFencedError: ([^\n]*)")


class SinkFencedError(SinkError, FencedError):
    """The sink's fence names a newer driver: this write was refused and nothing was written."""


def ensure_fence_table(cur: Any, dialect: Dialect) -> None:
    create_missing_table(cur, dialect, FENCE_TABLE, _COLUMNS)


def create_missing_table(cur: Any, dialect: Dialect, table: str, columns: str) -> None:
    """One of sparkcdc's own tables in the sink, created only when missing: even CREATE ... IF NOT
    EXISTS is written to a MySQL binlog."""
    if not dialect.table_exists(cur, table):
        cur.execute(f"CREATE TABLE IF NOT EXISTS {dialect.quote(table)} ({columns})")


def claim_fence(cur: Any, dialect: Dialect, fence: Fence, where: str) -> None:
    """Raise the pipeline's fence to ``fence`` in the current transaction (never lower it)."""
    table = dialect.quote(FENCE_TABLE)
    insert, on_conflict = dialect.insert_absent
    cur.execute(
        f"{insert} {table} (pipeline, owner, epoch) VALUES (%s, %s, %s){on_conflict}",
        (fence.pipeline, fence.owner, fence.epoch),
    )
    stored = _read(cur, dialect, fence.pipeline, "FOR UPDATE")
    try:
        if not fence.claim(stored):
            return
    except FencedError as err:
        raise SinkFencedError(f"the sink {where} refused this driver: {err}") from None
    cur.execute(
        f"UPDATE {table} SET owner = %s, epoch = %s WHERE pipeline = %s",
        (fence.owner, fence.epoch, fence.pipeline),
    )


def check_fence(cur: Any, dialect: Dialect, fence: Fence, where: str) -> None:
    """First statement of a fenced sink transaction: refuse unless the fence is still ours."""
    try:
        fence.check(_read(cur, dialect, fence.pipeline, dialect.share_lock))
    except FencedError as err:
        refused = SinkFencedError(f"the sink {where} refused a write: {err}")
        # Logged here too: a status write refused while unwinding may become the error reported.
        log.warning("%s", refused)
        raise refused from None


def _read(cur: Any, dialect: Dialect, pipeline: str, lock: str) -> tuple[str, int] | None:
    table = dialect.quote(FENCE_TABLE)
    cur.execute(f"SELECT owner, epoch FROM {table} WHERE pipeline = %s {lock}", (pipeline,))
    row = cur.fetchone()
    return None if row is None else (str(row[0]), int(row[1]))


def fenced_message(err: BaseException) -> str | None:
    """The fence message of ``err`` when it is (or, as a Spark job failure, carries the text of) a
    :class:`FencedError`; None for any other error."""
    seen: BaseException | None = err
    visited: set[int] = set()
    while seen is not None and id(seen) not in visited:
        visited.add(id(seen))
        if isinstance(seen, FencedError):
            return str(seen)
        found = _IN_TEXT.search(str(seen))
        if found:
            return found.group(1).strip()
        seen = seen.__cause__ or seen.__context__
    return None
