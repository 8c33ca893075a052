"""Fencing tokens: which driver of a pipeline may still write (architecture §3 rule 6).

A driver runs under a :class:`Fence`: the pipeline, the *owner* (the CdcPipeline object's uid, or
a local state directory's id) and the epoch. Every store the driver writes to keeps the fence of
the newest driver; a write whose fence is not that one is refused with :class:`FencedError`.

The rules for a store that holds one ``(owner, epoch)`` per pipeline:

* a starting driver *claims* it: the epoch only rises for the same owner (a claim below the
  stored epoch is a stale driver starting late and is refused), and a different owner takes over
  (a pipeline deleted and created again under the same name, or a local run and a cluster run of
  the same pipeline: the one that started last is the one that reads the current spec);
* a write is allowed only while the stored pair is exactly the writer's own.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Fence", "FencedError", "pipeline_key"]


class FencedError(RuntimeError):
    """A newer driver of the pipeline took over: this one must stop without writing."""


def pipeline_key(namespace: str | None, name: str) -> str:
    """The fence key of a pipeline: ``namespace/name`` (``default`` when a manifest has none)."""
    return f"{namespace or 'default'}/{name}"


@dataclass(frozen=True)
class Fence:
    pipeline: str
    owner: str
    epoch: int

    def claim(self, stored: tuple[str, int] | None) -> bool:
        """Whether a starting driver writes its pair over ``stored`` (False: it is already there).

        Raises :class:`FencedError` when a newer driver of the same owner holds the fence."""
        if stored is None or stored[0] != self.owner:
            return True
        if stored[1] > self.epoch:
            raise FencedError(self._superseded(stored))
        return stored[1] != self.epoch

    def check(self, stored: tuple[str, int] | None) -> None:
        """Raises :class:`FencedError` unless ``stored`` is this driver's own pair."""
        if stored == (self.owner, self.epoch):
            return
        if stored is None:
            raise FencedError(
                f"no fence is stored for {self.pipeline} (removed by hand?); this driver "
                f"(epoch {self.epoch}) stops without writing and its successor claims it again"
            )
        raise FencedError(self._superseded(stored))

    def _superseded(self, stored: tuple[str, int]) -> str:
        if stored[0] != self.owner:
            return (
                f"{self.pipeline} is now driven by another run or object of the same name (epoch "
                f"{stored[1]}); this driver (epoch {self.epoch}) stops without writing"
            )
        return (
            f"{self.pipeline} is now driven by epoch {stored[1]}; this driver (epoch {self.epoch}) "
            "stops without writing"
        )
