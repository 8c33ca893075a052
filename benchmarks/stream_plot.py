"""The bar chart of ``benchmarks/stream.py``: events/s per path, horizontal bars (matplotlib, Agg)."""

from __future__ import annotations

from collections.abc import Sequence
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
