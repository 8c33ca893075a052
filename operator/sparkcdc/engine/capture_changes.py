"""Spec edits a streaming pipeline follows without a restart: tables added, removed, resnapshotted.

A running driver watches its own spec (``driver/spec_watch.py``: the CdcPipeline in the cluster,
the manifest file locally) and offers each edit of ``spec.source.tables``/``excludeTables`` or a
new ``resnapshotNonce`` here. The streamer takes it at a batch boundary: a table no longer selected
stops being captured, a newly selected one — like a new matching table created at the source — is
snapshotted in chunks interleaved with the live stream (engine/interleaved.py), and so is a
resnapshotted one; the other tables never stop streaming (architecture §1.1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from sparkcdc.api.resource import CdcPipeline
from sparkcdc.core.tables import TableId

__all__ = ["CaptureChange", "CaptureChanges"]


@dataclass(frozen=True)
class CaptureChange:
    """The edited pipeline (its ``source.tables`` and ``excludeTables`` select what is captured
    from now on) and the tables to snapshot again while the others stream."""

    pipeline: CdcPipeline
    resnapshot: tuple[TableId, ...] = ()


class CaptureChanges(Protocol):
    def take(self) -> CaptureChange | None:
        """The newest edit not yet taken, if any; called by the streamer between batches, so
        it must not block. Taking it is what makes it due: whatever must be recorded with the
        change (the resnapshot nonce applied) goes into the next checkpoint write."""
