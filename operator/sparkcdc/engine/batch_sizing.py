"""Larger batches when the live path is behind: batches that waited are applied as one.

Some sinks pay a fixed cost per applied batch that dwarfs the cost per row: a Delta ``MERGE``
costs seconds whatever its size (the scan of the target's files, the rewrite, the commit). While
the sink applies one batch, the Go decoder (mysql/binlog/follow.py) decodes the next ones onto its
queue; a reader that is behind therefore finds batches waiting when the sink is done. Applying
them one by one would pay the fixed cost for each. Instead, the batches waiting are absorbed into
one — in binlog order, a later image or delete of a key winning, as catch-up absorbs its ranges —
up to the number of events the sink declares (``behind_batch_events``), so the batch size follows
the backlog: one batch's worth when the reader keeps up, the sink's limit when it is behind. A
batch the decoder cut by size (not by its interval) says the reader is behind before any batch
waits: the next one is then waited for, so the first MERGE of a backlog is large too.

Exactness is unchanged: the absorbed batch ends at the last absorbed batch's end (a transaction
boundary), holds net last images per key, and is applied and checkpointed as any batch
(architecture §3 rules 5 and 6). Sinks that declare nothing apply every batch on its own (the
Delta sink declares a limit). Where no key of a batch is in the batches before it, as in a backlog
spread over many keys, the images stay columns (core/image_columns.py), as the decoder's batches
hold them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sparkcdc.api.spec import BinlogSpec
from sparkcdc.core.image_columns import ImageColumns
from sparkcdc.core.logged_columns import joined
from sparkcdc.core.merge import BackfillChanges
from sparkcdc.mysql.binlog.follow import NativeBatch, NativeDdl, NativeStopped

__all__ = ["Gathering", "Waiting", "absorb", "gather", "gathering"]

Waiting = NativeBatch | NativeDdl | NativeStopped | BaseException | None  # what the queue handed over

# Full batches the follower keeps converted at least (FollowSettings' own default).
_MIN_CAPACITY = 4
# How long a full batch's successor is waited for. A decoder that is behind answers the next full
# batch as soon as it has decoded it; a partial one (the backlog's tail) comes only after its batch
# interval, which is not worth waiting for: the gathered batch is applied meanwhile.
_BEHIND_WAIT_SECONDS = 2.0


@dataclass(frozen=True)
class Gathering:
    """How many waiting events one apply takes (``limit``; 0: every batch on its own). A batch of
    ``full_at`` events or more was cut by size, not by time: the reader is behind, so the next
    batch is waited for (up to ``wait_seconds``) instead of only taken when already there — the
    first MERGE of a backlog is then as large as the later ones."""

    limit: int = 0
    full_at: int = 0
    wait_seconds: float = 0.0

    def capacity(self, batch_rows: int) -> int:
        """Events of converted batches the follower may hold: enough to fill one gathered batch
        while the sink applies the previous one, however small the decoder cut each batch (by its
        interval, behind a slow sink), so memory stays bounded by about twice ``limit`` events."""
        return max(_MIN_CAPACITY * max(1, batch_rows), self.limit)


def gathering(sink: object, spec: BinlogSpec) -> Gathering:
    """The sink's ``behind_batch_events`` where it declares more than a batch; else none."""
    declared = getattr(sink, "behind_batch_events", None)
    if not isinstance(declared, int) or declared <= spec.batch_rows:
        return Gathering()
    # Half an interval at most: a partial batch comes only after a whole one.
    return Gathering(declared, spec.batch_rows, min(spec.batch_interval_ms / 2000, _BEHIND_WAIT_SECONDS))


def absorb(into: NativeBatch, later: NativeBatch) -> NativeBatch:
    """``into`` followed by ``later`` as one batch. Takes ``into``'s changes over (they are
    updated in place: the batches are the caller's own, and copying would cost per row)."""
    changes = into.changes
    for table, net in later.changes.items():
        held = changes.get(table)
        if held is None:
            changes[table] = net
        elif not _absorbed_as_columns(held, net):
            # Within one batch deletes and upserts are disjoint keys, so their order does not matter.
            for key in net.deletes:
                held.delete(key)
            for key, image in net.upserts.items():
                held.upsert(key, image)
    logs = dict(into.changelog)
    for table, records in later.changelog.items():
        logs[table] = joined(logs.get(table, ()), records)
    newest = max(into.newest_ms, later.newest_ms)
    return NativeBatch(later.end, into.events + later.events, newest, changes, logs)


def _absorbed_as_columns(held: BackfillChanges, net: BackfillChanges) -> bool:
    """``net`` absorbed into ``held`` with the images kept as columns (core/image_columns.py),
    where no image of ``held`` is replaced or deleted by it: no dict per row for a backlog's
    batches, which the Delta sink hands to MERGE as columns."""
    upserts = held.upserts
    if not isinstance(upserts, ImageColumns) or not isinstance(net.upserts, ImageColumns):
        return False
    if not upserts.absorb(net.upserts, net.deletes):
        return False
    if held.deletes:  # a key deleted earlier and written again now is an upsert
        held.deletes.difference_update(net.upserts.column_keys())
    held.deletes.update(net.deletes)
    return True


def gather(
    first: NativeBatch, take: Callable[[float], Waiting], how: Gathering
) -> tuple[NativeBatch, Waiting]:
    """``first`` with the batches after it (``take(timeout)`` returns None when none came), up to
    ``how.limit`` events; also whatever ended the gathering and must be handled next (a DDL, the
    decoder's stop or failure), in stream order after the returned batch."""
    batch = last = first
    while batch.events < how.limit:
        behind = how.full_at > 0 and last.events >= how.full_at
        try:
            item = take(how.wait_seconds if behind else 0.0)
        except Exception as err:  # handed back: the batches gathered so far apply first
            return batch, err
        if not isinstance(item, NativeBatch):
            return batch, item
        batch, last = absorb(batch, item), item
    return batch, None
