from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from sparkcdc.core.assigner import SnapshotSplitAssigner
from sparkcdc.core.checkpoint import encode
from sparkcdc.core.chunking import splits_from_boundaries
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.splits import FinishedSplitInfo
from sparkcdc.core.tables import TableId
from sparkcdc.status_table import render_status

pytestmark = pytest.mark.unit


def test_status_table_shows_split_progress_per_table(tmp_path: Path) -> None:
    orders = TableId("shop", "orders")
    splits = splits_from_boundaries(orders, [(100,), (200,)])
    assigner = SnapshotSplitAssigner()
    assigner.add_table(orders, splits, key_columns=("id",))
    assigner.next_wave(1)
    assigner.on_finished([FinishedSplitInfo(splits[0], BinlogOffset("binlog.000001", 400), 99)])
    (tmp_path / "shop.checkpoint.json").write_text(json.dumps(encode(assigner.to_checkpoint())))
    console = Console(record=True, width=120)
    assert render_status(tmp_path, console) == 0
    text = console.export_text()
    assert "shop.orders" in text
    assert "1/3" in text
    assert "snapshot" in text


def test_status_without_checkpoints_says_what_to_run(tmp_path: Path) -> None:
    console = Console(record=True, width=160)
    assert render_status(tmp_path, console) == 1
    assert "sparkcdc run" in console.export_text()
