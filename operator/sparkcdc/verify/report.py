"""The verification report: per table the chunks checked and the chunks that differ, as JSON
(``--report``) and as rich tables on the terminal."""

from __future__ import annotations

import base64
import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.splits import Key, KeyValue, SnapshotSplit
from sparkcdc.core.tables import TableId
from sparkcdc.verify.sums import ChunkChecksum

__all__ = ["ChunkDiff", "PipelineReport", "TableReport", "render", "report_json", "write_report"]

REPORT_VERSION = 1


@dataclass(frozen=True)
class ChunkDiff:
    """A chunk whose sink content differs from the source (``differ``) or could not be shown
    to match (``unsettled``, with ``reason``)."""

    split: SnapshotSplit
    status: str
    source: ChunkChecksum
    sink: ChunkChecksum
    position: BinlogOffset
    reason: str = ""
    differing_rows: int = 0
    sample_keys: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.split.index,
            "start": key_json(self.split.start),
            "end": key_json(self.split.end),
            "status": self.status,
            "sourceRows": self.source.rows,
            "sinkRows": self.sink.rows,
            "sourceChecksum": self.source.to_json()["digest"],
            "sinkChecksum": self.sink.to_json()["digest"],
            "sourcePosition": str(self.position),
            "differingRows": self.differing_rows,
            "sampleKeys": list(self.sample_keys),
            **({"reason": self.reason} if self.reason else {}),
        }


@dataclass
class TableReport:
    table: TableId
    chunks: int = 0
    source_rows: int = 0
    sink_rows: int = 0
    rechecked: int = 0
    differing: list[ChunkDiff] = field(default_factory=list)
    repaired: list[ChunkDiff] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.differing

    def count(self, status: str) -> int:
        return sum(1 for d in self.differing if d.status == status)

    def to_json(self) -> dict[str, Any]:
        return {
            "table": str(self.table),
            "chunksChecked": self.chunks,
            "chunksDiffering": self.count("differ"),
            "chunksUnsettled": self.count("unsettled"),
            "chunksRechecked": self.rechecked,
            "chunksRepaired": len(self.repaired),
            "sourceRows": self.source_rows,
            "sinkRows": self.sink_rows,
            "differing": [d.to_json() for d in self.differing],
            "repaired": [d.to_json() for d in self.repaired],
        }


@dataclass
class PipelineReport:
    pipeline: str
    sink: str
    started: dt.datetime
    seconds: float = 0.0
    tables: list[TableReport] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(t.ok for t in self.tables)

    @property
    def rows_verified(self) -> int:
        return sum(t.source_rows for t in self.tables)

    def to_json(self) -> dict[str, Any]:
        return {
            "pipeline": self.pipeline,
            "sink": self.sink,
            "ok": self.ok,
            "started": self.started.isoformat(timespec="seconds"),
            "seconds": round(self.seconds, 3),
            "rowsVerified": self.rows_verified,
            "rowsPerSecond": round(self.rows_verified / self.seconds) if self.seconds > 0 else None,
            "chunksChecked": sum(t.chunks for t in self.tables),
            "chunksDiffering": sum(len(t.differing) for t in self.tables),
            "chunksRepaired": sum(len(t.repaired) for t in self.tables),
            "tables": [t.to_json() for t in self.tables],
            "notes": list(self.notes),
        }


def _value_json(value: KeyValue) -> Any:
    if isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, bytes):
        return {"base64": base64.b64encode(value).decode("ascii")}
    if isinstance(value, (dt.date, dt.datetime, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return {"microseconds": value // dt.timedelta(microseconds=1)}
    return repr(value)


def key_json(key: Key | None) -> list[Any] | None:
    """A split bound for JSON: None is unbounded; bytes are base64, Decimals strings."""
    return None if key is None else [_value_json(v) for v in key]


def _key_text(key: Key | None, unbounded: str) -> str:
    if key is None:
        return unbounded
    parts = [v.hex() if isinstance(v, bytes) else str(v) for v in key]
    return parts[0] if len(parts) == 1 else "(" + ", ".join(parts) + ")"


def range_text(split: SnapshotSplit) -> str:
    return f"[{_key_text(split.start, '-∞')}, {_key_text(split.end, '+∞')})"


def report_json(reports: Sequence[PipelineReport]) -> dict[str, Any]:
    return {
        "version": REPORT_VERSION,
        "ok": all(r.ok for r in reports),
        "pipelines": [r.to_json() for r in reports],
    }


def write_report(path: Path, reports: Sequence[PipelineReport]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(report_json(reports), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)


def render(reports: Sequence[PipelineReport], console: Console) -> None:
    """A summary per table, then one row per chunk that differs or was repaired."""
    summary = Table(title="verification: source vs sink, chunk by chunk")
    for column in ("pipeline", "table", "result"):
        summary.add_column(column)
    for column in ("chunks", "source rows", "sink rows", "differing", "repaired"):
        summary.add_column(column, justify="right")
    for report in reports:
        for t in report.tables:
            result = "[green]match[/]" if t.ok else "[red]DIFFERS[/]"
            if t.ok and t.repaired:
                result = "[green]repaired[/]"
            summary.add_row(
                report.pipeline,
                str(t.table),
                result,
                f"{t.chunks:,}",
                f"{t.source_rows:,}",
                f"{t.sink_rows:,}",
                str(len(t.differing)),
                str(len(t.repaired)),
            )
    console.print(summary)
    chunks = Table(title="differing chunks")
    for column in ("pipeline", "table", "chunk", "key range", "source rows", "sink rows", "rows differing"):
        chunks.add_column(column)
    chunks.add_column("status")
    shown = 0
    for report in reports:
        for t in report.tables:
            for diff, repaired in [(d, False) for d in t.differing] + [(d, True) for d in t.repaired]:
                status = "repaired" if repaired else diff.status + (f": {diff.reason}" if diff.reason else "")
                if diff.sample_keys:
                    status += (
                        " (keys "
                        + ", ".join(diff.sample_keys[:3])
                        + (", …" if diff.differing_rows > 3 else "")
                        + ")"
                    )
                chunks.add_row(
                    report.pipeline,
                    str(t.table),
                    str(diff.split.index),
                    range_text(diff.split),
                    f"{diff.source.rows:,}",
                    f"{diff.sink.rows:,}",
                    f"{diff.differing_rows:,}",
                    status,
                )
                shown += 1
    if shown:
        console.print(chunks)
    for report in reports:
        for note in report.notes:
            console.print(f"[dim]{report.pipeline}: {note}[/]")
        rate = report.rows_verified / report.seconds if report.seconds > 0 else 0.0
        verdict = "[green]replica matches its source[/]" if report.ok else "[red]replica differs[/]"
        console.print(
            f"{report.pipeline}: {verdict} — {report.rows_verified:,} rows in "
            f"{report.seconds:.1f}s ({rate:,.0f} rows/s)"
        )
