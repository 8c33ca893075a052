"""The changelog sink renders a binlog batch held as columns (core/logged_columns.py) column-wise
(sinks/changelog_columns.py); the bytes must equal the per-record rendering (``_render`` of each
record) for every family's canonical values, nulls, escapes, values of an unexpected Python type
and piece boundaries — and absorbing one batch into another keeps the records and their order."""

from __future__ import annotations

import datetime as dt
import json
import random
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from harness.arrow_tables import STRINGS, TYPES
from sparkcdc.core.logged_columns import LoggedColumns, joined
from sparkcdc.core.microbatch import TableChanges
from sparkcdc.core.tables import TableId
from sparkcdc.engine.listener import record_counts
from sparkcdc.mysql.columns import Column
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks import changelog_columns
from sparkcdc.sinks.changelog import ChangelogSink
from sparkcdc.sinks.changelog_columns import logged_text

UTC = dt.timezone.utc


def _col(name: str, data_type: str, column_type: str | None = None, **kw: Any) -> Column:
    return Column(name, 0, data_type, column_type or data_type, **kw)


# Each column with canonical values of its family (harness.arrow_tables' edge values where it has
# them, as Python values), and None.
COLUMNS: list[tuple[Column, list[Any]]] = [
    (_col("id", "bigint", nullable=False), [1, -(2**63), 2**63 - 1]),
    (_col("i8", "tinyint"), TYPES["i8"][1]),
    (_col("u64", "bigint", "bigint unsigned", unsigned=True), TYPES["u64"][1]),
    (_col("u32", "int", "int unsigned", unsigned=True), [0, 4294967295, 7]),
    (_col("d10", "decimal", "decimal(10,2)", precision=10, scale=2), TYPES["d10"][1]),
    (_col("d30", "decimal", "decimal(38,30)", precision=38, scale=30), TYPES["d30"][1]),
    (_col("d65", "decimal", "decimal(65,30)", precision=65, scale=30), TYPES["d65"][1]),
    (_col("f32", "float"), [3.1415927410125732, -1e-38, 0.5]),
    (_col("f64", "double"), [1e16, 1e-05, -0.0, 0.1, 1.7976931348623157e308, float("nan"), float("-inf")]),
    (_col("b1", "bit", "bit(1)", precision=1), [True, False]),
    (_col("b9", "bit", "bit(9)", precision=9), [b"\x01\xff", b"\x00\x00"]),
    (_col("bin", "varbinary", "varbinary(300)"), TYPES["bin"][1]),
    (_col("date", "date"), TYPES["date"][1]),
    (_col("dtm", "datetime", "datetime(6)", datetime_precision=6), TYPES["dtm"][1]),
    (_col("ts", "timestamp", "timestamp(6)", datetime_precision=6), TYPES["ts"][1]),
    (_col("tm", "time", "time(6)", datetime_precision=6), TYPES["tm"][1]),
    (_col("yr", "year"), [1901, 2155, 2024]),
    (_col("s", "varchar", "varchar(60)", charset="utf8mb4"), STRINGS),
    (_col("e", "enum", "enum('a','b c')", members=("a", "b c")), ["a", "b c", ""]),
    (_col("st", "set", "set('x','y')", members=("x", "y")), ["x,y", "", "y"]),
    (_col("j", "json", "longtext", charset="utf8mb4"), ['{"a": [1, "\\u00e9"]}', "null", "[]"]),
    (_col("zd", "date", zero_dates=True), ["0000-00-00", "2024-02-30", "2024-01-01"]),
]
SCHEMA = TableSchema(TableId("shop", "t\u00e9st"), tuple(c for c, _ in COLUMNS), ("id",), ("id",), ("id",))


def _logged(changes: int, seed: int, values: list[list[Any]] | None = None) -> LoggedColumns:
    """``changes`` random inserts, updates and deletes, as native.py's ``_logged`` lays them out."""
    rng = random.Random(seed)
    pools = values or [[*v, None] for _, v in COLUMNS]
    befores: list[list[Any]] = [[] for _ in COLUMNS]
    afters: list[list[Any]] = [[] for _ in COLUMNS]
    kinds = [rng.choice("IUD") for _ in range(changes)]
    for column, pool in enumerate(pools):
        befores[column] = [rng.choice(pool) for k in kinds if k != "I"]
        afters[column] = [rng.choice(pool) for k in kinds if k != "D"]
    shift, before, after = len(befores[0]), 0, len(befores[0])
    picks, ops, files, positions, indexes, times = [], [], [], [], [], []
    for n, kind in enumerate(kinds):
        file, pos = f"binlog.00000{1 + n // 40}", 400 + 30 * (n // 3)
        at, ts = 2 * (n % 3), 1_700_000_000_000 + n
        steps = {"I": [("+I", None)], "D": [("-D", True)], "U": [("-U", True), ("+U", None)]}[kind]
        for i, (op, is_before) in enumerate(steps):
            picks.append(before if is_before else after)
            before, after = (before + 1, after) if is_before else (before, after + 1)
            ops.append(op)
            files.append(file)
            positions.append(pos)
            indexes.append(at + i)
            times.append(ts)
    assert after == shift + len(afters[0])
    images = [[*b, *a] for b, a in zip(befores, afters, strict=True)]
    return LoggedColumns(SCHEMA.column_names, images, picks, ops, files, positions, indexes, times)


def _reference(records: LoggedColumns | tuple[Any, ...]) -> bytes:
    table = str(SCHEMA.table)
    return "".join(ChangelogSink._render(table, r) + "\n" for r in records).encode()


def _fast(records: LoggedColumns) -> bytes:
    return b"".join(bytes(chunk) for chunk in logged_text(SCHEMA, records))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_column_wise_lines_equal_the_per_record_rendering(seed: int) -> None:
    records = _logged(300, seed)
    fast = _fast(records)
    assert fast == _reference(records.records())
    first = json.loads(fast.splitlines()[0])
    assert list(first) == ["op", "table", "data", "source", "id"] and first["table"] == "shop.t\u00e9st"


def test_values_of_another_python_type_are_rendered_value_by_value() -> None:
    # Arrow would take these silently (a float as an integer, bytes as a string, a datetime as a
    # date, an aware datetime as a naive one): the type check sends them down the per-value path.
    pools = [[*v, None] for _, v in COLUMNS]
    names = [c.name for c, _ in COLUMNS]
    pools[names.index("i8")] = [1.0, 2, None]
    pools[names.index("s")] = [b"bytes", "text", None]
    pools[names.index("date")] = [dt.datetime(2024, 1, 1, 5), dt.date(2024, 1, 2), None]
    pools[names.index("dtm")] = [dt.datetime(2024, 1, 1, tzinfo=UTC), dt.datetime(2024, 1, 1), None]
    pools[names.index("ts")] = [dt.datetime(2024, 1, 1), dt.datetime(2024, 1, 1, tzinfo=UTC), None]
    pools[names.index("d10")] = [Decimal("2.5"), 3, None]
    pools[names.index("f64")] = [1.5, 2, True, None]
    pools[names.index("d30")] = [Decimal("2.5"), Decimal("1E+3"), Decimal("-0"), None]
    records = _logged(200, 4, pools)
    assert _fast(records) == _reference(records.records())


def test_piece_boundaries_and_one_record(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(changelog_columns, "_PIECE_RECORDS", 7)
    records = _logged(50, 5)
    assert _fast(records) == _reference(records.records())
    one = _logged(1, 6)
    assert _fast(one) == _reference(one.records())


def test_a_piece_too_large_for_arrow_is_rendered_in_halves(monkeypatch: pytest.MonkeyPatch) -> None:
    records = _logged(40, 11)
    real = changelog_columns._piece

    def small_arrow(schema: TableSchema, logged: LoggedColumns, data: Any, start: int, stop: int) -> Any:
        if stop - start > 9:  # as if more than 9 lines held more text than 32-bit offsets address
            raise pa.ArrowCapacityError("too much text")
        return real(schema, logged, data, start, stop)

    monkeypatch.setattr(changelog_columns, "_piece", small_arrow)
    assert _fast(records) == _reference(records.records())


def test_joined_batches_keep_their_records_in_order() -> None:
    first, then = _logged(30, 7), _logged(20, 8)
    both = joined(first, then)
    assert isinstance(both, LoggedColumns)
    assert both.records() == (*first.records(), *then.records())
    assert _fast(both) == _reference(both.records())
    assert joined((), then) is then
    assert joined(tuple(first), then) == (*first.records(), *then.records())


def test_the_sink_writes_the_same_file_from_columns_and_from_records(tmp_path: Path) -> None:
    records = _logged(120, 9)
    files = []
    for name, changelog in (("columns", records), ("records", records.records())):
        sink = ChangelogSink(tmp_path / name)
        sink.prepare([SCHEMA])
        sink.apply_changes(SCHEMA, TableChanges(SCHEMA.table, {}, (), changelog))
        (written,) = (tmp_path / name / "shop.t\u00e9st").iterdir()
        files.append((written.name, written.read_bytes()))
    assert files[0] == files[1]
    assert files[0][0] == f"binlog-{records.files[0]}-{records.positions[0]:012d}.jsonl"


def test_batch_counts_come_from_the_operations_alone() -> None:
    records = _logged(200, 10)
    counted = record_counts({SCHEMA.table: records})
    assert records._records is None  # no record was made for counting
    assert counted == record_counts({SCHEMA.table: records.records()})
    changes = {op: records.ops.count(op) for op in ("+I", "+U", "-D")}
    expected = {"create": changes["+I"], "update": changes["+U"], "delete": changes["-D"]}
    assert counted == {(SCHEMA.table, name): n for name, n in expected.items() if n}
