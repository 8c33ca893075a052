"""How many splits each task of the next snapshot wave reads.

A wave is one Spark job, and the driver checkpoints after each: small waves bound the work a
crash repeats, but every wave pays a job launch, each task's connection set-up and the wait for
its slowest task. With the spec's 8,096-row chunks and four splits per task a wave on two cores
took ~0.3 s, of which ~0.1 s was that overhead. So unless the spec sets ``splitsPerTask``, waves
grow: twice the splits per task while a wave takes under half the target, half again (not below
the starting count) when one takes over twice the target. A snapshot then checkpoints every few
seconds whatever the chunk size, and a crash repeats at most that much work.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["MAX_SPLITS_PER_TASK", "WAVE_TARGET_SECONDS", "WaveSizer"]

WAVE_TARGET_SECONDS = 4.0
MAX_SPLITS_PER_TASK = 1024  # the spec's own bound for splitsPerTask


@dataclass
class WaveSizer:
    """``splits_per_task`` for the next wave; ``observe`` the seconds each wave took."""

    floor: int
    adaptive: bool
    target_seconds: float = WAVE_TARGET_SECONDS
    splits_per_task: int = field(init=False)

    def __post_init__(self) -> None:
        self.splits_per_task = max(1, self.floor)

    def observe(self, seconds: float) -> None:
        if not self.adaptive:
            return
        if seconds < self.target_seconds / 2:
            self.splits_per_task = min(MAX_SPLITS_PER_TASK, self.splits_per_task * 2)
        elif seconds > self.target_seconds * 2:
            self.splits_per_task = max(self.floor, self.splits_per_task // 2)
