"""Watermark merge (architecture §3 rule 2): a split's exact content as of its high watermark.

A split read records a low watermark, reads its chunk, records a high watermark. The chunk is a
consistent read somewhere inside ``(low, high]``. Replaying the split's binlog events of that
bracket as "last image per key wins" onto the chunk yields the split's content at ``high``:
for every key the events touch, the last image (or absence, if last deleted) is the state at
``high``; keys the events do not touch did not change in the bracket, so the chunk has them right.

``collapse_events`` reduces the events to ``BackfillChanges`` (what the Arrow-based apply in the
I/O layer consumes directly); ``merge_snapshot`` applies them to a dict-based snapshot.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field

from sparkcdc.core.events import ChangeEvent, Op, Row
from sparkcdc.core.keys import key_of
from sparkcdc.core.splits import Key

__all__ = ["BackfillChanges", "collapse_events", "event_order", "merge_snapshot"]


@dataclass
class BackfillChanges:
    """The net effect of a run of events on a key range.

    ``upserts`` holds the last image of every key whose last change left a row; ``deletes`` the
    keys whose last change removed the row. The two are disjoint. Apply deletes, then upserts.
    """

    upserts: MutableMapping[Key, Row] = field(default_factory=dict)  # or core/image_columns.py's
    deletes: set[Key] = field(default_factory=set)

    def touched(self) -> set[Key]:
        """Every key whose snapshot row must be replaced or removed."""
        return set(self.upserts) | self.deletes

    def upsert(self, key: Key, image: Row) -> None:
        self.upserts[key] = image
        self.deletes.discard(key)

    def delete(self, key: Key) -> None:
        self.upserts.pop(key, None)
        self.deletes.add(key)

    def __bool__(self) -> bool:
        return bool(self.upserts or self.deletes)


def event_order(event: ChangeEvent) -> tuple[tuple[int, int], int]:
    """Sort key putting events in binlog order: ``(offset, index)``."""
    return event.offset.sort_key(), event.index


def _apply(
    changes: BackfillChanges, event: ChangeEvent, key_columns: Sequence[str], in_split: Callable[[Key], bool]
) -> None:
    if event.op is Op.INSERT:
        assert event.after is not None
        key = key_of(event.after, key_columns)
        if in_split(key):
            changes.upsert(key, event.after)
        return
    assert event.before is not None
    old_key = key_of(event.before, key_columns)
    if event.op is Op.DELETE:
        if in_split(old_key):
            changes.delete(old_key)
        return
    assert event.after is not None
    new_key = key_of(event.after, key_columns)
    if new_key != old_key and in_split(old_key):
        changes.delete(old_key)  # key change: delete of the old key + insert of the new one
    if in_split(new_key):
        changes.upsert(new_key, event.after)


def collapse_events(
    events: Iterable[ChangeEvent],
    key_columns: Sequence[str],
    in_split: Callable[[Key], bool],
) -> BackfillChanges:
    """Reduce ``events`` (any order; processed in ``(offset, index)`` order) to last images.

    Only keys inside the split count: an update moving a row into the split is an insert of its
    new key, one moving a row out is a delete of its old key, and events entirely outside are
    dropped. ``in_split`` is typically ``lambda k: key_in_range(k, split.start, split.end, order)``.
    """
    changes = BackfillChanges()
    for event in sorted(events, key=event_order):
        _apply(changes, event, key_columns, in_split)
    return changes


def merge_snapshot(snapshot: Mapping[Key, Row], changes: BackfillChanges) -> dict[Key, Row]:
    """The split's content at the high watermark: the snapshot with ``changes`` applied."""
    merged = {k: row for k, row in snapshot.items() if k not in changes.deletes}
    merged.update(changes.upserts)
    return merged
