"""Checkpoint stores keep the encoded checkpoint document of one pipeline."""

from __future__ import annotations

from typing import Any, Protocol


class StateError(RuntimeError):
    """The checkpoint could not be read or written; the stored state is unchanged."""


class CheckpointStore(Protocol):
    def load(self) -> dict[str, Any] | None:
        """The last saved document, or None before the first save."""

    def save(self, document: dict[str, Any]) -> None:
        """Replace the stored document atomically: a crash leaves the old or the new one."""
