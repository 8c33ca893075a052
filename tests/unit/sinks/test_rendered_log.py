"""The changelog's lines as the Go decoder renders them (mysql/binlog/rendered.py,
core/rendered_log.py), without the decoder: which tables it is asked to spell, the records parsed
back from lines equal to the records they were rendered from, and the sink, the batch counts and
absorbed batches taking the lines as they are. (The decoder's own spelling is held to these same
lines in tests/integration/mysql/test_binlog_native_follow.py.)"""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from harness.arrow_tables import STRINGS
from sparkcdc.core.logged_columns import joined
from sparkcdc.core.microbatch import ChangelogRecord, TableChanges
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.rendered_log import RenderedLog
from sparkcdc.core.routing import SinkTarget
from sparkcdc.core.tables import TableId
from sparkcdc.engine.listener import record_counts
from sparkcdc.mysql.binlog.rendered import render_spec, rendered_log
from sparkcdc.mysql.columns import Column
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks.changelog import ChangelogSink

UTC = dt.timezone.utc


def _col(name: str, data_type: str, column_type: str | None = None, **kw: Any) -> Column:
    return Column(name, 0, data_type, column_type or data_type, **kw)


COLUMNS: list[tuple[Column, list[Any]]] = [
    (_col("id", "bigint", nullable=False), [1, -(2**63), 2**63 - 1]),
    (_col("u8", "tinyint", "tinyint unsigned", unsigned=True), [0, 255]),
    (_col("u64", "bigint", "bigint unsigned", unsigned=True), [Decimal(0), Decimal(2**64 - 1)]),
    (
        _col("d10", "decimal", "decimal(10,2)", precision=10, scale=2),
        [Decimal("-99999999.99"), Decimal("0.00")],
    ),
    (
        _col("d65", "decimal", "decimal(65,30)", precision=65, scale=30),
        [Decimal("0E-30"), Decimal("1.5E-12")],
    ),
    (_col("f32", "float"), [3.1415927410125732, -1e-38]),
    (_col("f64", "double"), [1e16, 1e-05, -0.0, 0.1]),
    (_col("dte", "date"), [dt.date(1000, 1, 1), dt.date(2024, 2, 29)]),
    (_col("dtm", "datetime", "datetime(6)", datetime_precision=6), [dt.datetime(2024, 2, 29, 12, 0, 0, 5)]),
    (
        _col("ts", "timestamp", "timestamp(6)", datetime_precision=6),
        [dt.datetime(2038, 1, 19, 3, 14, 7, tzinfo=UTC)],
    ),
    (_col("s", "varchar", "varchar(60)", charset="utf8mb4"), STRINGS),
    (_col("j", "longtext", charset="utf8mb4"), ['{"a": [1, "\\u00e9"]}', "[]"]),
    (_col("lat", "varchar", "varchar(9)", charset="latin1"), ["caf\u00e9", "\u20ac\ufffd"]),
]
SCHEMA = TableSchema(TableId("shop", "t\u00e9st"), tuple(c for c, _ in COLUMNS), ("id",), ("id",), ("id",))


def _records(changes: int, seed: int) -> list[ChangelogRecord]:
    """Random inserts, updates and deletes, up to three rows an event, as the Python reader makes them."""
    rng = random.Random(seed)
    records = []
    for n in range(changes):
        offset = BinlogOffset(f"binlog.00000{1 + n // 39}", 400 + 30 * (n // 3))  # events of 3 rows
        row, ts = n % 3, 1_700_000_000_000 + 1000 * (n // 3)
        ops = {"I": ["+I"], "D": ["-D"], "U": ["-U", "+U"]}[rng.choice("IUD")]
        for i, op in enumerate(ops):
            data = {c.name: rng.choice([*values, None]) for c, values in COLUMNS}
            records.append(ChangelogRecord(op, data, offset, 2 * row + i, ts))
    return records


def _lines(records: list[ChangelogRecord]) -> bytes:
    return "".join(ChangelogSink._render(str(SCHEMA.table), r) + "\n" for r in records).encode()


def _rendered(records: list[ChangelogRecord]) -> RenderedLog:
    """The log the follower makes of a table's part of an answer and the lines after it."""
    ops = {op: sum(r.op == op for r in records) for op in ("+I", "-U", "+U", "-D")}
    first = {"file": records[0].offset.file, "pos": records[0].offset.pos}
    log = rendered_log(SCHEMA, {"ops": ops, "first": first}, _lines(records))
    assert log is not None
    return log


def test_the_decoder_spells_the_families_it_can_of_plain_targets_only() -> None:
    spec = render_spec(SCHEMA)
    assert spec is not None and spec["table"] == "shop.t\u00e9st"
    kinds = {c["name"]: (c["kind"], c["bits"], c["scale"]) for c in spec["columns"]}
    assert kinds["u8"] == ("uint", 8, 0) and kinds["u64"] == ("uint64", 64, 0)
    assert kinds["d65"] == ("decimal", 0, 30) and kinds["f32"] == kinds["f64"] == ("float", 0, 0)
    assert [kinds[n][0] for n in ("dte", "dtm", "ts", "s", "j")] == [
        "date",
        "datetime",
        "timestamp",
        "text",
        "text",
    ]
    others = [
        _col("tm", "time"),
        _col("yr", "year"),
        _col("b", "bit", "bit(3)", precision=3),
        _col("vb", "varbinary", "varbinary(8)"),
        _col("e", "enum", "enum('a')", members=("a",)),
        _col("koi", "varchar", "varchar(9)", charset="koi8r"),
        _col("zd", "date", zero_dates=True),
        _col("g", "geometry"),
    ]
    for column in others:
        assert (
            render_spec(TableSchema(SCHEMA.table, (COLUMNS[0][0], column), ("id",), ("id",), ("id",))) is None
        )
    masked = SinkTarget("shop.t", route=0, metadata=("_op",))
    assert (
        render_spec(TableSchema(SCHEMA.table, SCHEMA.columns, ("id",), ("id",), ("id",), target=masked))
        is None
    )


@pytest.mark.parametrize("seed", [1, 2])
def test_records_parsed_from_the_lines_are_the_records_rendered(seed: int) -> None:
    records = _records(90, seed)
    log = _rendered(records)
    assert len(log) == len(records) and log.first_offset() == records[0].offset
    assert list(log) == records  # values (Decimal, date, aware datetime), offsets, indexes, times
    assert [list(r.data) for r in log] == [list(r.data) for r in records]


def test_the_sink_writes_the_lines_as_they_came(tmp_path: Path) -> None:
    records = _records(60, 3)
    files = []
    for name, changelog in (("lines", _rendered(records)), ("records", records)):
        sink = ChangelogSink(tmp_path / name)
        sink.prepare([SCHEMA])
        sink.apply_changes(SCHEMA, TableChanges(SCHEMA.table, {}, (), changelog))
        (written,) = (tmp_path / name / "shop.t\u00e9st").iterdir()
        files.append((written.name, written.read_bytes()))
    assert files[0] == files[1] and files[0][1] == _lines(records)


def test_batches_absorbed_and_counted_keep_their_lines() -> None:
    first, then = _records(30, 4), _records(20, 5)
    both = joined(_rendered(first), _rendered(then))
    assert isinstance(both, RenderedLog) and both.text == _lines(first) + _lines(then)
    assert list(both) == first + then
    counted = record_counts({SCHEMA.table: both})
    assert counted == {
        (SCHEMA.table, name): n
        for op, name in (("+I", "create"), ("+U", "update"), ("-D", "delete"))
        if (n := sum(r.op == op for r in first + then))
    }
    other = RenderedLog("shop.other", SCHEMA.column_names, b"x\n", {"+I": 1}, first[0].offset, lambda _: ())
    assert joined(_rendered(first), other) == (*first, *other)
    with pytest.raises(ValueError, match="cannot follow"):
        _rendered(first).followed_by(other)
