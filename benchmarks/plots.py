"""The benchmarks' pictures for the docs (matplotlib, Agg): bars of a rate per path
(``stream.py``, ``snapshot.py``) and lines over time (``latency.py``: lag under load)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # after the backend is chosen
from matplotlib.ticker import StrMethodFormatter


def bar_chart(rows: Sequence[tuple[str, float]], title: str, path: Path) -> Path:
    """``rows`` as (label, events/s), the first at the top; sparkcdc's bars in their own colour."""
    labels = [label for label, _ in rows][::-1]
    rates = [rate for _, rate in rows][::-1]
    colours = ["#d9822b" if label.startswith("sparkcdc") else "#5b7fa6" for label in labels]
    figure, axes = plt.subplots(figsize=(10, 0.55 * len(rows) + 1.6))
    bars = axes.barh(labels, rates, color=colours)
    axes.bar_label(bars, labels=[f"{rate:,.0f}" for rate in rates], padding=4, fontsize=9)
    axes.set_xlabel("events/s (more is better)")
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
