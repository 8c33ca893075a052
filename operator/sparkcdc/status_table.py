"""``sparkcdc status``: a progress table of the pipelines whose checkpoints are in a state dir."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table

from sparkcdc.core.checkpoint import Checkpoint, Phase
from sparkcdc.state.file_store import FileCheckpointStore

_SUFFIX = ".checkpoint.json"


def checkpoint_rows(name: str, checkpoint: Checkpoint) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for table in sorted(set(checkpoint.plans) | set(checkpoint.tables)):
        state = checkpoint.tables.get(table)
        plan = checkpoint.plans.get(table)
        total = plan.split_count() if plan is not None else 0
        finished = len(checkpoint.finished.get(table, ()))
        phase = state.phase.value if state is not None else Phase.SNAPSHOT.value
        rows.append((name, str(table), phase, f"{finished}/{total}", state.error if state else ""))
    return rows


def render_status(state_dir: Path, console: Console | None = None) -> int:
    console = console or Console()
    files = sorted(state_dir.glob(f"*{_SUFFIX}"))
    if not files:
        console.print(f"no checkpoints in {state_dir}; run `sparkcdc run FILE --state-dir {state_dir}` first")
        return 1
    table = Table(title=f"pipelines in {state_dir}")
    for column in ("pipeline", "table", "phase", "splits", "error"):
        table.add_column(column)
    for path in files:
        name = path.name[: -len(_SUFFIX)]
        checkpoint = FileCheckpointStore(state_dir, name).load()
        if checkpoint is None:
            continue
        for row in checkpoint_rows(name, checkpoint):
            table.add_row(*row)
        offset = checkpoint.binlog_offset
        stage = (
            "streaming"
            if offset is not None
            else ("snapshot done" if checkpoint.snapshot_done else "snapshot")
        )
        table.add_row(name, "(binlog)", stage, "", f"offset {offset}" if offset else "", end_section=True)
    console.print(table)
    return 0
