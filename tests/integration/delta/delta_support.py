"""Helpers of the Delta sink tests: reading Delta tables (through delta_inspect.py, a subprocess
with a Delta-enabled Spark), reading the source's canonical rows, and comparing the two."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from harness.runner import subprocess_env
from sparkcdc.core.splits import SnapshotSplit
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.chunk_reader import read_chunk
from sparkcdc.mysql.connection import SourceConfig, connect
from sparkcdc.mysql.schema import TableSchema, load_table_schema
from sparkcdc.sinks.delta import commit_metadata
from sparkcdc.sinks.spark_types import to_spark_arrow

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class ChecksRun:
    returncode: int
    stdout: str
    stderr: str

    def passed(self) -> list[str]:
        return [line for line in self.stdout.splitlines() if line.startswith(("ok ", "failed "))]

    def describe(self) -> str:
        return f"passed: {self.passed()}\n{self.stdout[-3000:]}\n{self.stderr[-8000:]}"


def delta_sink(path: Path, **options: Any) -> dict[str, Any]:
    return {"type": "delta", "path": str(path), **options}


@dataclass
class DeltaTableDump:
    history: list[dict[str, Any]]
    latest: pa.Table
    versions: dict[int, pa.Table] = field(default_factory=dict)

    def binlog_commits(self) -> list[tuple[int, str]]:
        """(version, offset text) of the sparkcdc binlog commits, oldest first."""
        out = []
        for entry in sorted(self.history, key=lambda e: e["version"]):
            meta = commit_metadata(entry["userMetadata"])
            if meta is not None and meta.get("phase") == "binlog":
                out.append((int(entry["version"]), str(meta["offset"])))
        return out


def inspect_delta(
    work: Path, tables: Mapping[str, Path], pick: Mapping[str, Mapping[str, Any]] | None = None
) -> dict[str, DeltaTableDump]:
    """Dump ``tables`` (name -> Delta path) with one Delta-enabled Spark run. ``pick[name]`` may
    ask for time travel: ``{"after": "file:pos", "through": "file:pos", "count": n}`` reads up to
    ``n`` binlog versions whose offsets lie in ``[after, through]``, spread over the history."""
    request = {
        "tables": [
            {"name": n, "path": str(p), "pick": dict((pick or {}).get(n, {}))} for n, p in tables.items()
        ]
    }
    out = work / f"inspect-{len(list(work.glob('inspect-*')))}"
    out.mkdir(parents=True)
    (out / "request.json").write_text(json.dumps(request))
    result = subprocess.run(
        [sys.executable, str(HERE / "delta_inspect.py"), str(out / "request.json"), str(out)],
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, f"delta_inspect failed:\n{result.stderr[-5000:]}"
    dumps = {}
    for name in tables:
        history = json.loads((out / f"{name}.history.json").read_text())
        dump = DeltaTableDump(history, _read(out / f"{name}.latest.arrow"))
        for path in out.glob(f"{name}.v*.arrow"):
            dump.versions[int(path.name[len(name) + 2 : -len(".arrow")])] = _read(path)
        dumps[name] = dump
    return dumps


def _read(path: Path) -> pa.Table:
    with pa.memory_map(str(path)) as source:
        return pa.ipc.open_file(source).read_all()


def source_schema(source: SourceConfig, database: str, table: str) -> TableSchema:
    conn = connect(source)
    try:
        return load_table_schema(conn, TableId(database, table))
    finally:
        conn.close()


def source_rows(source: SourceConfig, schema: TableSchema) -> pa.Table:
    """The source table's canonical rows (the snapshot reader's own conversion)."""
    conn = connect(source)
    try:
        return read_chunk(conn, schema, SnapshotSplit(schema.table, 0, None, None))
    finally:
        conn.close()


def normalized(
    schema: TableSchema, data: pa.Table, columns: Sequence[str] | None = None
) -> list[tuple[Any, ...]]:
    """Rows as comparable tuples in key order: ``data`` holds Spark-stored values (delta or
    ``to_spark_arrow``); instants are compared in UTC."""
    names = list(columns or schema.column_names)
    arrays = []
    for name in names:
        array = data.column(name)
        if pa.types.is_timestamp(array.type) and array.type.tz is not None:
            array = array.cast(pa.timestamp("us", tz="UTC"))
        arrays.append(array)
    rows = list(zip(*(a.to_pylist() for a in arrays), strict=True)) if arrays else []
    positions = [names.index(k) for k in schema.row_key if k in names]
    return sorted(rows, key=lambda r: tuple(repr(r[p]) for p in positions))


def assert_rows_equal(
    schema: TableSchema, expected: Sequence[tuple[Any, ...]], actual: Sequence[tuple[Any, ...]], what: str
) -> None:
    if list(expected) == list(actual):
        return
    positions = [list(schema.column_names).index(k) for k in schema.row_key]

    def by_key(rows: Sequence[tuple[Any, ...]]) -> dict[tuple[Any, ...], list[tuple[Any, ...]]]:
        out: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}
        for row in rows:
            out.setdefault(tuple(row[p] for p in positions), []).append(row)
        return out

    want, got = by_key(expected), by_key(actual)
    lines = [f"{what}: expected {len(expected)} rows, Delta has {len(actual)}"]
    for key in sorted(set(want) | set(got), key=repr):
        if want.get(key) != got.get(key):
            lines.append(f"  key {key!r}: expected {want.get(key)!r} / delta {got.get(key)!r}")
            if len(lines) > 25:
                break
    raise AssertionError("\n".join(lines))


def assert_delta_equals_source(source: SourceConfig, schema: TableSchema, delta: pa.Table, what: str) -> None:
    expected = normalized(schema, to_spark_arrow(schema, source_rows(source, schema)))
    assert_rows_equal(schema, expected, normalized(schema, delta), what)
