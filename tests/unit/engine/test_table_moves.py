"""Table renames and drops read from DDL and judged (mysql/ddl.py, engine/table_moves.py), and the
consumer moving a renamed table's state (engine/schema_apply.py, engine/streaming.py)."""

from __future__ import annotations

import queue
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from sparkcdc.api.spec import BinlogSpec
from sparkcdc.core.checkpoint import Checkpoint, Phase, TablePlan, TableState
from sparkcdc.core.events import ChangeEvent, Op
from sparkcdc.core.microbatch import TableChanges
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.routing import CaptureRules, Route, Routing, captures
from sparkcdc.core.splits import FinishedSplitInfo
from sparkcdc.core.tables import TableId
from sparkcdc.engine.listener import PipelineListener
from sparkcdc.engine.live_reader import END
from sparkcdc.engine.python_live import PythonLive
from sparkcdc.engine.schema_changes import SchemaChange, fail_vanished_tables
from sparkcdc.engine.streaming import BinlogStreamer, StreamSettings
from sparkcdc.engine.table_failures import StreamFailures
from sparkcdc.engine.table_moves import TableMove, judge_moves
from sparkcdc.mysql.columns import Column
from sparkcdc.mysql.ddl import DdlKind, TableDdl, parse_ddl
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks.base import TableSchemaError

pytestmark = pytest.mark.unit

A, B, TMP = TableId("shop", "a"), TableId("shop", "b"), TableId("shop", "tmp")
RULES = CaptureRules((r"shop\.(a|b|c)",), (r"shop\.c",), Routing("{table}"))


def schema(table: TableId, rules: CaptureRules | None = RULES) -> TableSchema:
    columns = (Column("id", 1, "int", "int", nullable=False), Column("v", 2, "int", "int"))
    target = rules.target(table) if rules is not None else None
    return TableSchema(table, columns, ("id",), ("id",), ("id",), target=target)


def off(pos: int) -> BinlogOffset:
    return BinlogOffset("b.000001", pos)


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("ALTER TABLE a RENAME TO b", [TableDdl(A, DdlKind.RENAME, new_name=B)]),
        ("ALTER TABLE shop.a RENAME AS `shop`.`b`", [TableDdl(A, DdlKind.RENAME, new_name=B)]),
        ("ALTER TABLE a RENAME b", [TableDdl(A, DdlKind.RENAME, new_name=B)]),
        ("RENAME TABLE a TO b", [TableDdl(A, DdlKind.RENAME, new_name=B)]),
        (
            "RENAME TABLE a TO tmp, b TO a",
            [TableDdl(A, DdlKind.RENAME, new_name=TMP), TableDdl(B, DdlKind.RENAME, new_name=A)],
        ),
        ("DROP TABLE IF EXISTS a", [TableDdl(A, DdlKind.DROP, reason="the table was dropped")]),
        ("CREATE OR REPLACE TABLE a (id INT)", [TableDdl(A, DdlKind.DROP, reason="the table was replaced")]),
    ],
)
def test_table_renames_and_drops_are_read(sql: str, expected: list[TableDdl]) -> None:
    assert parse_ddl(sql, "shop") == expected


def test_a_rename_among_other_changes_or_unreadable_stops_the_table() -> None:
    [combined] = parse_ddl("ALTER TABLE a RENAME TO b, ADD c INT", "shop")
    assert combined.kind is DdlKind.FAIL and "combined with other changes" in combined.reason
    [unread] = parse_ddl("RENAME TABLE a TO", "shop")
    assert unread.kind is DdlKind.FAIL
    [column] = parse_ddl("ALTER TABLE a RENAME COLUMN v TO w", "shop")
    assert column.kind is DdlKind.EVOLVE


def test_captures_follows_discovery_rules() -> None:
    assert captures([r"shop\..*"], [], B)
    assert not captures([r"shop\..*"], [r"shop\.b"], B)
    assert not captures([r"shop\..*"], [], TableId("shop", "_a_gho"))  # a tool's table
    assert captures(["shop._a_gho"], [], TableId("shop", "_a_gho"))  # named exactly
    assert captures([r"shop\..*"], [], TableId("shop", "_a_new"), [TableId("shop", "_a_new")])
    assert not captures([r"shop\..*"], [], TableId("shop", "_a_new"), [A, TableId("shop", "_a_new")])


def judge(sql: str, schemas: dict[TableId, TableSchema]) -> tuple[list[TableMove], dict[TableId, str]]:
    entries = [e for e in parse_ddl(sql, "shop") if e.table in schemas]
    return judge_moves(entries, schemas, sql, "shop")


def test_rename_to_a_captured_name_moves_the_table() -> None:
    moves, refused = judge("RENAME TABLE a TO b", {A: schema(A)})
    assert not refused
    [move] = moves
    assert move.table == A and move.new == B and move.schema is not None
    assert move.schema.table == B and move.schema.sink_name == "b"
    assert move.schema.columns == schema(A).columns


def test_rename_to_a_name_not_captured_drops_the_table() -> None:
    moves, refused = judge("RENAME TABLE a TO c", {A: schema(A)})  # excluded
    assert not refused and moves == [TableMove(A, reason=moves[0].reason)]
    assert "shop.c" in moves[0].reason and not moves[0].drop_target
    dropping = replace(RULES, on_table_drop="drop")
    moves, _ = judge("DROP TABLE a", {A: schema(A, dropping)})
    assert moves == [TableMove(A, drop_target=True, reason="the table was dropped")]


@pytest.mark.parametrize(
    ("sql", "why"),
    [
        ("RENAME TABLE a TO tmp, b TO a", "takes a name another of its renames frees"),
        ("RENAME TABLE a TO b, b TO a2", "renames a table twice"),
        ("RENAME TABLE a TO _a_old", "online schema-change tool"),
    ],
)
def test_ambiguous_renames_stop_the_table(sql: str, why: str) -> None:
    moves, refused = judge(sql, {A: schema(A), B: schema(B)})
    assert A in refused and why in refused[A]
    assert not [m for m in moves if m.table == A]


def test_a_merged_target_stops_the_rename() -> None:
    rules = replace(RULES, routing=Routing("{table}", (Route(r"shop\.(a|b)", "all"),)))
    moves, refused = judge("RENAME TABLE a TO b", {A: schema(A, rules)})
    assert not moves and "merging route" in refused[A]


def test_without_capture_rules_a_rename_stops_and_a_drop_keeps_the_target() -> None:
    _, refused = judge("RENAME TABLE a TO b", {A: schema(A, None)})
    assert "capture rules" in refused[A]
    moves, _ = judge("DROP TABLE a", {A: schema(A, None)})
    assert moves == [TableMove(A, reason="the table was dropped")]


# -- the consumer ---------------------------------------------------------------------------------


@dataclass
class FollowingSink:
    log: list[tuple[str, Any]] = field(default_factory=list)
    refuse_rename: bool = False

    def prepare(self, schemas: Sequence[TableSchema]) -> None: ...

    def write_split(self, *args: Any) -> None: ...

    def apply_changes(self, schema: TableSchema, changes: TableChanges) -> None:
        self.log.append(("apply", (schema.sink_name, str(changes.table), sorted(changes.upserts))))

    def rename_table(
        self, old: TableSchema, new: TableSchema, offset: BinlogOffset, statement: str
    ) -> list[str]:
        if self.refuse_rename:
            raise TableSchemaError(f"the sink has a table {new.sink_name} already, with rows", old.table)
        self.log.append(("rename", (old.sink_name, new.sink_name)))
        return []

    def drop_table(self, schema: TableSchema, drop: bool, offset: BinlogOffset, statement: str) -> list[str]:
        self.log.append(("drop", (schema.sink_name, drop)))
        return []

    def close(self) -> None: ...


class ScriptedThread:
    def __init__(self, items: list[object]) -> None:
        self.queue: queue.Queue[object] = queue.Queue()
        for item in [*items, END]:
            self.queue.put(item)
        self.error: BaseException | None = None


def consume(
    items: list[object], schemas: dict[TableId, TableSchema], checkpoint: Checkpoint, sink: FollowingSink
) -> Checkpoint:
    saved: list[Checkpoint] = []
    listener = PipelineListener()
    spec = BinlogSpec(batch_interval_ms=3_600_000, batch_rows=1000)
    source: Any = None
    streamer = BinlogStreamer(source, sink, schemas, StreamSettings(9, spec), listener, saved.append)
    streamer.state.failures = StreamFailures(checkpoint, streamer.state.schemas, listener)
    result, _ = PythonLive(streamer.state)._consume(
        ScriptedThread(items),  # type: ignore[arg-type]
        checkpoint,
        streamer.build_filter(checkpoint),
        lambda: False,
        None,
    )
    return result


def insert(table: TableId, pos: int, key: int) -> ChangeEvent:
    return ChangeEvent(table, Op.INSERT, None, {"id": key, "v": key}, off(pos))


def collapsed(table: TableId, wm: int) -> Checkpoint:
    plan = TablePlan((), True, ("id",))
    [split] = plan.splits(table)
    return Checkpoint(
        tables={table: TableState(Phase.BINLOG)},
        plans={table: plan},
        finished={table: (FinishedSplitInfo(split, off(wm), 3),)},
        binlog_offset=off(wm),
    )


def test_a_renamed_table_streams_on_under_its_new_name() -> None:
    moved = schema(B)
    change = SchemaChange(off(30), "RENAME TABLE a TO b", moves=(TableMove(A, B, moved),))
    items: list[object] = [insert(A, 10, 1), off(20), change, insert(B, 40, 2), off(50)]
    sink = FollowingSink()
    result = consume(items, {A: schema(A)}, collapsed(A, 5), sink)
    assert sink.log == [
        ("apply", ("a", "shop.a", [(1,)])),
        ("rename", ("a", "b")),
        ("apply", ("b", "shop.b", [(2,)])),
    ]
    assert A not in result.tables and result.tables[B].phase is Phase.BINLOG
    assert [i.split.table for i in result.finished[B]] == [B]


def test_a_dropped_table_is_forgotten() -> None:
    change = SchemaChange(off(30), "DROP TABLE a", moves=(TableMove(A, drop_target=True),))
    items: list[object] = [insert(A, 10, 1), off(20), change, insert(A, 40, 2), off(50)]
    sink = FollowingSink()
    result = consume(items, {A: schema(A)}, collapsed(A, 5), sink)
    assert sink.log == [("apply", ("a", "shop.a", [(1,)])), ("drop", ("a", True))]
    assert A not in result.tables and A not in result.plans and A not in result.finished


def test_a_rename_the_sink_refuses_stops_the_table_under_its_new_name() -> None:
    change = SchemaChange(off(30), "RENAME TABLE a TO b", moves=(TableMove(A, B, schema(B)),))
    items: list[object] = [change, insert(B, 40, 2), off(50)]
    result = consume(items, {A: schema(A)}, collapsed(A, 5), FollowingSink(refuse_rename=True))
    assert A not in result.tables
    assert result.tables[B].phase is Phase.FAILED and "RENAME TABLE a TO b" in result.tables[B].error


def test_a_rename_inside_the_snapshot_handoff_stops_the_table() -> None:
    change = SchemaChange(off(30), "RENAME TABLE a TO b", moves=(TableMove(A, B, schema(B)),))
    sink = FollowingSink()
    result = consume([change, off(50)], {A: schema(A)}, collapsed(A, 100), sink)
    assert sink.log == [] and result.tables[A].phase is Phase.FAILED
    assert "snapshot splits" in result.tables[A].error


def test_a_table_named_exactly_stops_where_it_goes() -> None:
    """A start would refuse an exact name the source lacks unless the table is marked failed."""
    rules = CaptureRules(("shop.a", r"shop\.b"), (), Routing("{table}"))
    change = SchemaChange(off(30), "DROP TABLE a", moves=(TableMove(A, reason="the table was dropped"),))
    sink = FollowingSink()
    result = consume([change, off(50)], {A: schema(A, rules)}, collapsed(A, 5), sink)
    assert sink.log == [("drop", ("a", False))]
    state = result.tables[A]
    assert state.phase is Phase.FAILED and "DROP TABLE a" in state.error and "names it exactly" in state.error


def test_vanished_tables_are_kept_where_the_stream_can_follow_them() -> None:
    checkpoint = Checkpoint(
        binlog_offset=off(70),
        tables={A: TableState(Phase.BINLOG), B: TableState(Phase.BINLOG)},
        definitions={A: {"doc": 1}},
    )
    assert fail_vanished_tables(checkpoint, [], lambda t: True).tables[A].phase is Phase.BINLOG
    assert (
        fail_vanished_tables(checkpoint, [], lambda t: True).tables[B].phase is Phase.FAILED
    )  # no definition
    assert fail_vanished_tables(checkpoint, []).tables[A].phase is Phase.FAILED
    assert fail_vanished_tables(checkpoint, [], lambda t: False).tables[A].phase is Phase.FAILED
