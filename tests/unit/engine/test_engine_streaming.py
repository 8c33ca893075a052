"""The binlog consumer loop, with a scripted reader and a recording sink: batch boundaries,
checkpoints after commits, DDL applied at its place, failed tables, heartbeats."""

from __future__ import annotations

import queue
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from sparkcdc.api.spec import BinlogSpec
from sparkcdc.core.checkpoint import Checkpoint, Phase, TableState
from sparkcdc.core.events import ChangeEvent, Op
from sparkcdc.core.microbatch import TableChanges
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.splits import FinishedSplitInfo, SnapshotSplit
from sparkcdc.core.tables import TableId
from sparkcdc.engine.listener import PipelineListener
from sparkcdc.engine.live_reader import END
from sparkcdc.engine.python_live import PythonLive
from sparkcdc.engine.schema_changes import Evolution, SchemaChange, fail_vanished_tables
from sparkcdc.engine.streaming import BinlogStreamer, StreamSettings, live_reader_server_id
from sparkcdc.engine.table_failures import StreamFailures
from sparkcdc.mysql.binlog.reader import DdlStatement
from sparkcdc.mysql.binlog.stream import SchemaInUse, project_schema
from sparkcdc.mysql.columns import Column
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks.base import AddedColumn, ColumnChanges, TableSchemaError
from sparkcdc.sinks.jdbc.evolution import alter_statements

pytestmark = pytest.mark.unit

A, B = TableId("shop", "a"), TableId("shop", "b")


def col(name: str, ordinal: int, column_type: str = "int", nullable: bool = True) -> Column:
    data_type = column_type.split("(")[0]
    return Column(name, ordinal, data_type, column_type, nullable=nullable)


def schema(table: TableId, *names: str) -> TableSchema:
    columns = tuple(col(n, i + 1, nullable=n != "id") for i, n in enumerate(names))
    return TableSchema(table, columns, ("id",), ("id",), ("id",))


def off(pos: int) -> BinlogOffset:
    return BinlogOffset("b.000001", pos)


def insert(table: TableId, pos: int, **row: Any) -> ChangeEvent:
    return ChangeEvent(table, Op.INSERT, None, row, off(pos))


@dataclass
class RecordingSink:
    log: list[tuple[str, Any]] = field(default_factory=list)

    def prepare(self, schemas: Sequence[TableSchema]) -> None: ...

    def write_split(self, *args: Any) -> None: ...

    def apply_changes(self, schema: TableSchema, changes: TableChanges) -> None:
        rows = sorted(tuple(sorted(r.items())) for r in changes.upserts.values())
        self.log.append(("apply", (str(changes.table), schema.column_names, rows)))

    def evolve_table(self, schema: TableSchema, changes: ColumnChanges) -> list[str]:
        added = [a.column.name for a in changes.added]
        self.log.append(("evolve", (str(schema.table), added, list(changes.dropped))))
        if changes.renamed:
            self.log.append(("renamed", list(changes.renamed)))
        return []

    def truncate_table(self, schema: TableSchema, offset: BinlogOffset, statement: str) -> list[str]:
        self.log.append(("truncate", (str(schema.table), str(offset))))
        return []

    def close(self) -> None: ...


class Warnings(PipelineListener):
    def __init__(self) -> None:
        self.warnings: list[str] = []

    def warning(self, text: str) -> None:
        self.warnings.append(text)


class ScriptedThread:
    """Stands in for the reader thread: a queue holding the script, then the end."""

    def __init__(self, items: list[object]) -> None:
        self.queue: queue.Queue[object] = queue.Queue()
        for item in [*items, END]:
            self.queue.put(item)
        self.error: BaseException | None = None


def consume(
    items: list[object], schemas: dict[TableId, TableSchema], checkpoint: Checkpoint | None = None
) -> tuple[Checkpoint, RecordingSink, list[Checkpoint], Warnings]:
    sink = RecordingSink()
    saved: list[Checkpoint] = []

    def save(cp: Checkpoint) -> None:
        sink.log.append(("checkpoint", str(cp.binlog_offset)))
        saved.append(cp)

    listener = Warnings()
    spec = BinlogSpec(batch_interval_ms=3_600_000, batch_rows=1000)
    source: Any = None
    streamer = BinlogStreamer(source, sink, schemas, StreamSettings(9, spec), listener, save)
    base = checkpoint or Checkpoint(binlog_offset=off(4))
    streamer.state.failures = StreamFailures(base, streamer.state.schemas, listener)
    result, behind = PythonLive(streamer.state)._consume(
        ScriptedThread(items),  # type: ignore[arg-type]
        base,
        streamer.build_filter(base),
        lambda: False,
        None,
    )
    assert not behind
    return result, sink, saved, listener


def test_boundaries_commit_and_checkpoint_after_the_sink() -> None:
    items: list[object] = [insert(A, 10, id=1, v=1), off(20), insert(A, 30, id=2, v=2)]
    result, sink, _saved, _ = consume(items, {A: schema(A, "id", "v")})
    # The open transaction at the end is not committed: only up to the boundary.
    assert sink.log == [
        ("apply", ("shop.a", ("id", "v"), [(("id", 1), ("v", 1))])),
        ("checkpoint", "b.000001:20"),
    ]
    assert result.binlog_offset == off(20)


def test_boundaries_without_captured_changes_move_the_offset() -> None:
    """Commits of other tables and heartbeats are boundaries: the offset advances alone."""
    result, sink, saved, _ = consume([off(50), off(90)], {A: schema(A, "id", "v")})
    assert [e for e in sink.log if e[0] == "apply"] == []
    assert result.binlog_offset == off(90) and saved[-1].binlog_offset == off(90)


def test_add_column_is_applied_in_place() -> None:
    old, new = schema(A, "id", "v"), schema(A, "id", "v", "c")
    added = (AddedColumn(new.columns[2], "7", "v"),)
    items: list[object] = [
        insert(A, 10, id=1, v=1),
        off(20),
        SchemaChange(off(30), "ALTER TABLE a ADD c INT DEFAULT 7", (Evolution(A, new, added),)),
        insert(A, 40, id=2, v=2, c=3),
        off(50),
    ]
    result, sink, _saved, _ = consume(items, {A: old})
    assert sink.log == [
        ("apply", ("shop.a", ("id", "v"), [(("id", 1), ("v", 1))])),
        ("checkpoint", "b.000001:20"),
        ("evolve", ("shop.a", ["c"], [])),
        ("checkpoint", "b.000001:30"),
        ("apply", ("shop.a", ("id", "v", "c"), [(("c", 3), ("id", 2), ("v", 2))])),
        ("checkpoint", "b.000001:50"),
    ]
    assert result.binlog_offset == off(50)


def test_truncate_empties_the_target_between_the_rows_around_it() -> None:
    items: list[object] = [
        insert(A, 10, id=1, v=1),
        off(20),
        SchemaChange(off(30), "TRUNCATE a", truncated=(A,)),
        insert(A, 40, id=2, v=2),
        off(50),
    ]
    result, sink, _saved, _ = consume(items, {A: schema(A, "id", "v")})
    assert sink.log == [
        ("apply", ("shop.a", ("id", "v"), [(("id", 1), ("v", 1))])),
        ("checkpoint", "b.000001:20"),
        ("truncate", ("shop.a", "b.000001:30")),
        ("checkpoint", "b.000001:30"),
        ("apply", ("shop.a", ("id", "v"), [(("id", 2), ("v", 2))])),
        ("checkpoint", "b.000001:50"),
    ]
    assert result.binlog_offset == off(50)


def test_truncate_inside_the_snapshot_handoff_stops_the_table() -> None:
    """Splits read after the TRUNCATE already hold later rows that the split filter keeps out of
    the stream: emptying the target there would lose them."""
    split = SnapshotSplit(A, 0, None, None)
    checkpoint = Checkpoint(binlog_offset=off(4), finished={A: (FinishedSplitInfo(split, off(100)),)})
    items: list[object] = [SchemaChange(off(30), "TRUNCATE a", truncated=(A,)), off(50)]
    result, sink, _saved, listener = consume(items, {A: schema(A, "id", "v")}, checkpoint)
    assert [e for e in sink.log if e[0] == "truncate"] == []
    assert result.tables[A].phase is Phase.FAILED and "TRUNCATE a" in result.tables[A].error
    assert listener.warnings and "snapshot splits" in listener.warnings[0]


def test_rename_met_with_the_later_definition_after_rows_stops_the_table() -> None:
    """Resumed from before a rename with the renamed definition: rows decoded before the
    statement lacked the column under its old name, so the table cannot be followed exactly."""
    renamed = schema(A, "id", "w")
    late = Evolution(A, renamed, renamed=(("v", "w"),), decoded_late=True)
    items: list[object] = [
        insert(A, 10, id=1),
        off(20),
        SchemaChange(off(30), "ALTER TABLE a RENAME COLUMN v TO w", (late,)),
        insert(A, 40, id=2, w=2),
        off(50),
    ]
    result, sink, _saved, _ = consume(items, {A: renamed})
    assert [e[0] for e in sink.log] == ["apply", "checkpoint", "checkpoint", "checkpoint"]
    assert result.tables[A].phase is Phase.FAILED and "later definition" in result.tables[A].error
    # Without rows before it (a crash right after the target's rename), it is followed by name.
    result, sink, _saved, _ = consume([SchemaChange(off(30), "RENAME", (late,)), off(50)], {A: renamed})
    assert ("renamed", [("v", "w")]) in sink.log and A not in result.tables


def test_failed_table_stops_alone() -> None:
    items: list[object] = [
        SchemaChange(off(30), "ALTER TABLE b MODIFY v TEXT", failures={B: "table shop.b stopped"}),
        insert(B, 40, id=2, v=2),
        insert(A, 41, id=2, v=2),
        off(50),
    ]
    checkpoint = Checkpoint(binlog_offset=off(4), tables={A: TableState(Phase.BINLOG)})
    result, sink, _saved, listener = consume(
        items, {A: schema(A, "id", "v"), B: schema(B, "id", "v")}, checkpoint
    )
    applied = [e[1][0] for e in sink.log if e[0] == "apply"]
    assert applied == ["shop.a"]
    assert result.tables[B] == TableState(Phase.FAILED, "table shop.b stopped")
    assert result.tables[A].phase is Phase.BINLOG
    assert listener.warnings == ["table shop.b stopped"]


def test_a_failed_table_stays_failed_on_resume() -> None:
    checkpoint = Checkpoint(binlog_offset=off(4), tables={B: TableState(Phase.FAILED, "stopped before")})
    items: list[object] = [insert(B, 10, id=1, v=1), off(20)]
    result, sink, _, _ = consume(items, {B: schema(B, "id", "v")}, checkpoint)
    assert [e for e in sink.log if e[0] == "apply"] == []
    assert result.tables[B].phase is Phase.FAILED


def test_schema_in_use_switches_the_written_columns() -> None:
    """Rows decoded before a later ADD COLUMN are written without the column (its default)."""
    current = schema(A, "id", "v", "c")
    projected = project_schema(current, ["id", "v", "gone"])
    items: list[object] = [
        SchemaInUse(A, projected),
        insert(A, 10, id=1, v=1),
        off(20),
        DdlStatement(off(30), "shop", "CREATE TABLE x (id INT)"),
        SchemaInUse(A, current),
        insert(A, 40, id=2, v=2, c=5),
        off(50),
    ]
    result, sink, _, _ = consume(items, {A: current})
    applied = [e[1][1] for e in sink.log if e[0] == "apply"]
    assert applied == [("id", "v"), ("id", "v", "c")]
    assert result.binlog_offset == off(50)


def test_project_schema() -> None:
    current = schema(A, "id", "v", "c")
    assert project_schema(current, ["ID", "c"]).column_names == ("id", "c")
    with pytest.raises(Exception, match="without key column 'id'"):
        project_schema(current, ["v", "c"])


def test_stop_at_returns_once_committed() -> None:
    sink = RecordingSink()
    spec = BinlogSpec(batch_interval_ms=3_600_000)
    settings = StreamSettings(9, spec, off(20))
    source: Any = None
    streamer = BinlogStreamer(source, sink, {A: schema(A, "id", "v")}, settings, Warnings(), lambda c: None)
    thread = ScriptedThread([insert(A, 10, id=1, v=1), off(20), insert(A, 30, id=9, v=9), off(40)])
    base = Checkpoint(binlog_offset=off(4))
    result, behind = PythonLive(streamer.state)._consume(
        thread, base, streamer.build_filter(base), lambda: False, None
    )  # type: ignore[arg-type]
    assert result.binlog_offset == off(20) and not behind
    assert len([e for e in sink.log if e[0] == "apply"]) == 1


class AlwaysBehind:
    """A backlog probe whose source is always far ahead."""

    last_backlog = 10**9

    def __init__(self) -> None:
        self.asked: list[BinlogOffset] = []

    def behind(self, committed: BinlogOffset) -> bool:
        self.asked.append(committed)
        return True


def test_falling_behind_hands_over_at_the_committed_boundary() -> None:
    """Past the backlog threshold the live loop stops right after a commit: everything up to the
    checkpoint is in the sink, the open transaction is left for catch-up to read again."""
    sink, saved = RecordingSink(), list[Checkpoint]()
    spec = BinlogSpec(batch_interval_ms=3_600_000, batch_rows=1)
    source: Any = None
    streamer = BinlogStreamer(
        source, sink, {A: schema(A, "id", "v")}, StreamSettings(9, spec), Warnings(), saved.append
    )
    thread = ScriptedThread([insert(A, 10, id=1, v=1), off(20), insert(A, 30, id=2, v=2), off(40)])
    base, probe = Checkpoint(binlog_offset=off(4)), AlwaysBehind()
    result, behind = PythonLive(streamer.state)._consume(
        thread, base, streamer.build_filter(base), lambda: False, probe
    )  # type: ignore[arg-type]
    assert behind and result.binlog_offset == off(20) and probe.asked == [off(20)]
    assert [e for e in sink.log if e[0] == "apply"] == [
        ("apply", ("shop.a", ("id", "v"), [(("id", 1), ("v", 1))]))
    ]
    assert saved[-1].binlog_offset == off(20)


def test_hands_back_to_the_go_decoder_past_its_stop() -> None:
    """Past the offset the Go decoder stopped at, the Python reader hands back at a commit once it
    read for the minimum: at once after a schema change (0 s), not while the minimum runs."""

    def hand_back(retry_seconds: float) -> tuple[Checkpoint, str | None]:
        spec = BinlogSpec(batch_interval_ms=3_600_000, batch_rows=1)
        source: Any = None
        streamer = BinlogStreamer(
            source, RecordingSink(), {A: schema(A, "id", "v")}, StreamSettings(9, spec), Warnings(), print
        )
        items = [insert(A, 10, id=1, v=1), off(20), insert(A, 30, id=2, v=2), off(40)]
        base = Checkpoint(binlog_offset=off(4))
        return PythonLive(streamer.state)._consume(
            ScriptedThread(items),  # type: ignore[arg-type]
            base,
            streamer.build_filter(base),
            lambda: False,
            None,
            off(4),
            retry_seconds,
        )

    result, why = hand_back(0.0)
    assert why == "native" and result.binlog_offset == off(20)
    result, why = hand_back(3600.0)
    assert why is None and result.binlog_offset == off(40)


def test_live_reader_id_is_the_end_of_the_range() -> None:
    from sparkcdc.engine.discovery import default_server_ids

    start, end = default_server_ids("default", "shop", 4 + 1)
    tasks = list(range(start, end + 1))[:4]
    assert live_reader_server_id((start, end)) == end and end not in tasks
    assert live_reader_server_id((5400, 5400)) == 5400


def test_fail_vanished_tables() -> None:
    checkpoint = Checkpoint(
        binlog_offset=off(70),
        tables={A: TableState(Phase.BINLOG), B: TableState(Phase.BINLOG)},
    )
    assert fail_vanished_tables(checkpoint, [A, B]) is checkpoint
    updated = fail_vanished_tables(checkpoint, [A])
    assert updated.tables[A].phase is Phase.BINLOG
    assert updated.tables[B].phase is Phase.FAILED
    assert "table shop.b stopped streaming: it no longer exists" in updated.tables[B].error
    assert fail_vanished_tables(replace(updated), [A]) == updated


def test_alter_statements_for_targets() -> None:
    new = TableSchema(
        A,
        (col("id", 1, nullable=False), col("v", 2), Column("c", 3, "varchar", "varchar(5)", nullable=False)),
        ("id",),
        ("id",),
        ("id",),
    )
    added = [AddedColumn(new.columns[2], "'x'", "v")]

    def quote(n: str) -> str:
        return f"`{n}`"

    change = ColumnChanges(tuple(added), ("old",))
    assert alter_statements("mysql", quote, new, ["id", "v", "old"], change) == [
        "ALTER TABLE `a` DROP COLUMN `old`",
        "ALTER TABLE `a` ADD COLUMN `c` varchar(5) NOT NULL DEFAULT 'x' AFTER `v`",
    ]
    # Replayed: nothing left to do.
    assert alter_statements("mysql", quote, new, ["id", "v", "c"], change) == []
    pg = alter_statements("postgresql", lambda n: f'"{n}"', new, ["id", "v"], ColumnChanges(tuple(added)))
    assert pg == ['ALTER TABLE "a" ADD COLUMN "c" text DEFAULT \'x\'']
    expr = ColumnChanges((AddedColumn(new.columns[2], "current_timestamp()", None),))
    assert alter_statements("postgresql", lambda n: f'"{n}"', new, ["id"], expr) == [
        'ALTER TABLE "a" ADD COLUMN "c" text'
    ]
    assert alter_statements("mysql", quote, new, ["id"], expr) == [
        "ALTER TABLE `a` ADD COLUMN `c` varchar(5) NOT NULL DEFAULT current_timestamp() FIRST"
    ]


def test_alter_statements_rename_and_widen() -> None:
    wide = Column("n", 3, "bigint", "bigint(20)", default_sql="5")
    new = TableSchema(A, (col("key", 1, nullable=False), col("w", 2), wide), ("key",), ("key",), ("key",))
    change = ColumnChanges(renamed=(("id", "key"), ("v", "w")), altered=(wide,))

    def quote(n: str) -> str:
        return f"`{n}`"

    assert alter_statements("mysql", quote, new, ["id", "v", "n"], change) == [
        "ALTER TABLE `a` RENAME COLUMN `id` TO `key`",
        "ALTER TABLE `a` RENAME COLUMN `v` TO `w`",
        "ALTER TABLE `a` MODIFY COLUMN `n` bigint(20) DEFAULT 5",
    ]
    # Replayed after the renames: only the (harmless) MODIFY again.
    assert alter_statements("mysql", quote, new, ["key", "w", "n"], change) == [
        "ALTER TABLE `a` MODIFY COLUMN `n` bigint(20) DEFAULT 5"
    ]
    pg = alter_statements("postgresql", lambda n: f'"{n}"', new, ["id", "v", "n"], change, {"n": "integer"})
    assert pg == [
        'ALTER TABLE "a" RENAME COLUMN "id" TO "key"',
        'ALTER TABLE "a" RENAME COLUMN "v" TO "w"',
        'ALTER TABLE "a" ALTER COLUMN "n" TYPE bigint USING "n"::bigint',
        'ALTER TABLE "a" ALTER COLUMN "n" DROP NOT NULL',
    ]
    pg_done = alter_statements(
        "postgresql", lambda n: f'"{n}"', new, ["key", "w", "n"], change, {"n": "bigint"}
    )
    assert pg_done == ['ALTER TABLE "a" ALTER COLUMN "n" DROP NOT NULL']
    # A column renamed and widened in one statement: its type is looked up under its old name.
    dec = Column("dd", 2, "decimal", "decimal(9,3)", precision=9, scale=3)
    both = ColumnChanges(renamed=(("d", "dd"),), altered=(dec,))
    moved = replace(new, columns=(new.columns[0], dec))
    assert alter_statements("postgresql", lambda n: n, moved, ["key", "d"], both, {"d": "numeric(6,2)"}) == [
        "ALTER TABLE a RENAME COLUMN d TO dd",
        "ALTER TABLE a ALTER COLUMN dd TYPE numeric(9,3) USING dd::numeric(9,3)",
        "ALTER TABLE a ALTER COLUMN dd DROP NOT NULL",
    ]
    with pytest.raises(TableSchemaError, match="has neither"):
        alter_statements("mysql", quote, new, ["other", "w", "n"], change)
