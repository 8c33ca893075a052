"""The benchmarks' pictures for the docs (matplotlib, Agg): bars of a rate per path
(``stream.py``, ``snapshot.py``) and lines over time (``latency.py``: lag under load)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # after the backend is chosen
from matplotlib.ticker import StrMethodFormatter


def bar_chart(rows: Sequence[tuple[str, float]], title: str, path: Path, unit: str = "events/s") -> Path:
    """``rows`` as (label, ``unit``), the first at the top; sparkcdc's bars in their own colour."""
    labels = [label for label, _ in rows][::-1]
    rates = [rate for _, rate in rows][::-1]
    colours = ["#d9822b" if label.startswith("sparkcdc") else "#5b7fa6" for label in labels]
    figure, axes = plt.subplots(figsize=(10, 0.55 * len(rows) + 1.6))
    bars = axes.barh(labels, rates, color=colours)
    axes.bar_label(bars, labels=[f"{rate:,.0f}" for rate in rates], padding=4, fontsize=9)
    axes.set_xlabel(f"{unit} (more is better)")
    axes.xaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
    axes.set_xlim(0, max(rates, default=1) * 1.18)
    axes.set_title(title, fontsize=10)
    axes.grid(axis="x", alpha=0.3)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def line_chart(
    series: Mapping[str, Sequence[tuple[float, float]]],
    title: str,
    axis_labels: tuple[str, str],
    path: Path,
    shade: Sequence[tuple[float, float, str]] = (),
) -> Path:
    """Each of ``series`` as a line of (x, y) points; ``shade`` marks spans of x (start, end, label)."""
    figure, axes = plt.subplots(figsize=(10, 4.2))
    for start, end, label in shade:
        axes.axvspan(start, end, color="#d9822b", alpha=0.12, label=label)
    for label, points in series.items():
        axes.plot([x for x, _ in points], [y for _, y in points], label=label, linewidth=1.4)
    axes.set_xlabel(axis_labels[0])
    axes.set_ylabel(axis_labels[1])
    axes.set_ylim(bottom=0)
    axes.set_title(title, fontsize=10)
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8, loc="upper right")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


SNAPSHOT_PNG = Path(__file__).resolve().parents[1] / "docs" / "performance_snapshot.png"


def snapshot_chart(document: Mapping[str, Any], path: Path = SNAPSHOT_PNG) -> Path:
    """The bars of ``snapshot.py``'s results (``benchmarks/results/snapshot.json``): rows/s per path."""
    measured: Mapping[str, Mapping[str, Any]] = document["results"]
    machine = document.get("machine", {})
    rows = document.get("settings", {}).get("rows", 0)
    load = (machine.get("load_average_at_start") or ["?"])[0]
    title = f"snapshot of {rows:,} rows: rows/s per path ({machine.get('cpus', '?')} CPUs, load {load})"
    bars = [(name, float(f["rows_per_second"])) for name, f in measured.items()]
    return bar_chart(bars, title, path, unit="rows/s")


if __name__ == "__main__":  # redraw from the last results: python benchmarks/plots.py
    results = Path(__file__).resolve().parent / "results" / "snapshot.json"
    print(snapshot_chart(json.loads(results.read_text(encoding="utf-8"))))
