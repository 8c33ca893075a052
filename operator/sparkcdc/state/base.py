"""The checkpoint store contract: one pipeline's checkpoint, loaded and saved whole.

Stores take and give the typed :class:`~sparkcdc.core.checkpoint.Checkpoint`; its JSON document
(``core.checkpoint.encode``/``decode``, the one codec) is each store's own business.
"""

from __future__ import annotations

from typing import Protocol

from sparkcdc.core.checkpoint import Checkpoint


class StateError(RuntimeError):
    """The checkpoint could not be read or written; the stored state is unchanged."""


class CheckpointStore(Protocol):
    def load(self) -> Checkpoint | None:
        """The last saved checkpoint, or None before the first save."""

    def save(self, checkpoint: Checkpoint) -> None:
        """Replace the stored checkpoint atomically: a crash leaves the old or the new one."""
