"""Temporary files a killed changelog writer leaves behind are removed when the sink is prepared:
only the sink's own (``.<final name>.<pid>.tmp`` in a prepared table's directory), never other
files, never committed ones, never those of tables the pipeline does not prepare."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pyarrow as pa

from sparkcdc.core.events import ChangeEvent, Op
from sparkcdc.core.microbatch import build_batch
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.splits import SnapshotSplit
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.columns import Column
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks import changelog
from sparkcdc.sinks.changelog import ChangelogSink

T, OTHER = TableId("shop", "t"), TableId("shop", "other")
SCHEMA = TableSchema(
    T,
    (Column("id", 1, "int", "int", nullable=False), Column("v", 2, "int", "int")),
    ("id",),
    ("id",),
    ("id",),
)
STALE = [
    ".snapshot-000000.jsonl.4242.tmp",
    ".snapshot-1234567.jsonl.7.tmp",
    ".binlog-binlog.000003-000000001234.jsonl.4242.tmp",
]
KEPT = [
    "snapshot-000000.jsonl",
    "binlog-binlog.000003-000000001234.jsonl",
    "notes.tmp",
    ".keep.tmp",
    ".snapshot-000000.jsonl.tmp",  # no pid: not a name the sink gives
    ".snapshot-000000.jsonl.4242.tmp.bak",
    "snapshot-000001.jsonl.4242.tmp",  # not hidden
]


def _populate(directory: Path, names: list[str]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name in names:
        (directory / name).write_text('{"op":"+I","table":"shop.t","da', encoding="utf-8")  # cut short


def test_prepare_removes_only_the_sinks_own_temporaries(tmp_path: Path) -> None:
    sink = ChangelogSink(tmp_path)
    _populate(sink.table_dir(SCHEMA), STALE + KEPT)
    _populate(sink.table_dir(SCHEMA) / "sub", STALE[:1])
    _populate(sink.table_dir(replace(SCHEMA, table=OTHER)), STALE)  # a table this pipeline does not capture

    sink.prepare([SCHEMA])

    assert sorted(p.name for p in sink.table_dir(SCHEMA).iterdir()) == sorted([*KEPT, "sub"])
    assert [p.name for p in (sink.table_dir(SCHEMA) / "sub").iterdir()] == STALE[:1]
    assert sorted(p.name for p in sink.table_dir(replace(SCHEMA, table=OTHER)).iterdir()) == sorted(STALE)


def test_every_temporary_name_the_sink_writes_is_recognised(tmp_path: Path) -> None:
    """The pattern follows the names ``_write_bytes`` really uses, so a rename of either is caught."""
    sink = ChangelogSink(tmp_path)
    sink.prepare([SCHEMA])
    names: list[str] = []
    real = changelog._temporary_name

    def recording(final: str) -> str:
        names.append(real(final))
        return real(final)

    changelog._temporary_name = recording
    try:
        data = pa.table({"id": [1], "v": [2]})
        sink.write_split(SCHEMA, SnapshotSplit(T, 12, None, None), data, BinlogOffset("binlog.000003", 4))
        event = ChangeEvent(T, Op.INSERT, None, {"id": 1, "v": 3}, BinlogOffset("binlog.000003", 987654))
        for changes in build_batch([event], {T: ("id",)}, end=BinlogOffset("binlog.000003", 987700)):
            sink.apply_changes(SCHEMA, changes)
    finally:
        changelog._temporary_name = real
    assert len(names) == 2
    assert all(changelog._TEMPORARY.fullmatch(n) for n in names), names
    # The writes themselves left nothing behind, and the committed files are not temporaries.
    assert sorted(p.name for p in sink.table_dir(SCHEMA).iterdir()) == [
        "binlog-binlog.000003-000000987654.jsonl",
        "snapshot-000012.jsonl",
    ]
    assert not any(changelog._TEMPORARY.fullmatch(p.name) for p in sink.table_dir(SCHEMA).iterdir())
