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

__all__ = [
    "MAX_SPLITS_PER_TASK",
    "SPARK_WORTH_SECONDS",
    "WAVE_TARGET_SECONDS",
    "WaveSizer",
    "spark_worth_starting",
]

WAVE_TARGET_SECONDS = 4.0
MAX_SPLITS_PER_TASK = 1024  # the spec's own bound for splitsPerTask
# Starting Spark costs seconds of CPU on the driver's machine (JVM, Python workers) and, on
# Kubernetes, up to minutes of executor pods; a snapshot the driver finishes within this many
# seconds on its own is done before Spark would have helped.
SPARK_WORTH_SECONDS = 20.0


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


def spark_worth_starting(
    remaining_splits: int, splits_done: int, seconds: float, worth_seconds: float = SPARK_WORTH_SECONDS
) -> bool:
    """Whether the splits left would keep the driver busy for more than ``worth_seconds``, at the
    rate it read ``splits_done`` splits in ``seconds`` (wall time of its own waves)."""
    if remaining_splits <= 0:
        return False
    if splits_done <= 0:
        return True
    return remaining_splits * (seconds / splits_done) > worth_seconds
