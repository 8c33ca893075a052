"""Planning referential actions: which parent events imply which predicate writes, and how a
batch with cascades is cut into segments (core/cascades.py)."""

from __future__ import annotations

from sparkcdc.core.cascades import Cascade, ForeignKey, Hop, ReferentialPlan, segments, unapplied
from sparkcdc.core.events import ChangeEvent, Op
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.tables import TableId

DEPT, EMP, TASK, BADGE = (TableId("hr", t) for t in ("dept", "emp", "task", "badge"))
SITE, ROOM = TableId("hr", "site"), TableId("hr", "room")
AT = BinlogOffset("b.000001", 100)


def _fk(name: str, child: TableId, col: str, parent: TableId, on_delete: str, on_update: str) -> ForeignKey:
    return ForeignKey(name, child, (col,), parent, ("id",), on_delete, on_update)


FKS = [
    _fk("emp_dept", EMP, "dept_id", DEPT, "CASCADE", "CASCADE"),
    _fk("task_emp", TASK, "emp_id", EMP, "CASCADE", "CASCADE"),
    _fk("badge_dept", BADGE, "dept_id", DEPT, "SET NULL", "CASCADE"),
    _fk("room_site", ROOM, "site_id", SITE, "CASCADE", "RESTRICT"),
]


def _event(
    table: TableId, op: Op, before: dict[str, object] | None, after: dict[str, object] | None
) -> ChangeEvent:
    return ChangeEvent(table, op, before, after, AT)


def test_delete_cascades_deepest_first_and_nulls_the_set_null_child() -> None:
    plan = ReferentialPlan(FKS, {DEPT, EMP, TASK, BADGE, ROOM})
    emp_hop = Hop(EMP, ("dept_id",), DEPT, ("id",))
    task_hop = Hop(TASK, ("emp_id",), EMP, ("id",))
    assert plan.cascades(_event(DEPT, Op.DELETE, {"id": 7, "name": "x"}, None)) == [
        Cascade("delete", (emp_hop, task_hop), (7,)),
        Cascade("delete", (emp_hop,), (7,)),
        Cascade("set", (Hop(BADGE, ("dept_id",), DEPT, ("id",)),), (7,), ("dept_id",), (None,)),
    ]
    assert plan.tables == {EMP, TASK, BADGE}


def test_key_change_cascades_by_value_and_other_updates_do_not() -> None:
    plan = ReferentialPlan(FKS, {DEPT, EMP, TASK, BADGE})
    rekey = plan.cascades(_event(DEPT, Op.UPDATE, {"id": 7, "name": "x"}, {"id": 9, "name": "x"}))
    assert [(c.table, c.match, c.values) for c in rekey] == [(EMP, (7,), (9,)), (BADGE, (7,), (9,))]
    assert plan.cascades(_event(DEPT, Op.UPDATE, {"id": 7, "name": "x"}, {"id": 7, "name": "y"})) == []
    assert plan.cascades(_event(DEPT, Op.INSERT, None, {"id": 7})) == []


def test_uncaptured_parent_set_default_and_cycles_are_warned() -> None:
    boss = _fk("boss", EMP, "boss_id", EMP, "SET DEFAULT", "CASCADE")
    plan = ReferentialPlan([*FKS, boss], {DEPT, EMP, TASK, ROOM})
    text = "\n".join(plan.warnings)
    assert "the parent hr.site is not captured" in text
    assert "ON DELETE SET DEFAULT is not followed" in text
    assert "cycle" in text
    # badge is not captured: nothing is planned for it, and nothing warned about it.
    assert "badge" not in text


def test_routed_child_is_not_followed() -> None:
    plan = ReferentialPlan(FKS[:1], {DEPT, EMP}, followable=lambda t: t != EMP)
    assert not plan and "routed or transformed" in plan.warnings[0]


def test_segments_keep_cascades_after_events_on_their_tables() -> None:
    ins_task = _event(TASK, Op.INSERT, None, {"id": 1, "emp_id": 3})
    del_dept = _event(DEPT, Op.DELETE, {"id": 7}, None)
    cascade = Cascade("delete", (Hop(TASK, ("emp_id",), EMP, ("id",)),), (3,))
    other = _event(BADGE, Op.INSERT, None, {"id": 2})
    # The task insert precedes the cascade that reads task: the cascade starts a new segment.
    assert segments([ins_task, del_dept, other], [(2, cascade)]) == [
        ([], [ins_task, del_dept]),
        ([cascade], [other]),
    ]
    # Nothing before it touches task: the cascade runs first, with the parent's delete after it.
    assert segments([other, del_dept], [(2, cascade)]) == [([cascade], [other, del_dept])]


def test_a_replayed_batch_drops_the_events_and_cascades_the_sink_holds() -> None:
    def at(pos: int, table: TableId, op: Op, row: dict[str, object]) -> ChangeEvent:
        before, after = (row, None) if op is Op.DELETE else (None, row)
        return ChangeEvent(table, op, before, after, BinlogOffset("b.000001", pos))

    events = [
        at(110, TASK, Op.INSERT, {"id": 1, "emp_id": 3}),
        at(120, DEPT, Op.DELETE, {"id": 7}),
        at(210, EMP, Op.INSERT, {"id": 4, "dept_id": 2}),
        at(220, DEPT, Op.DELETE, {"id": 2}),
    ]
    first = Cascade("delete", (Hop(EMP, ("dept_id",), DEPT, ("id",)),), (7,))
    second = Cascade("delete", (Hop(EMP, ("dept_id",), DEPT, ("id",)),), (2,))
    marks = [(2, first), (4, second)]
    assert unapplied(events, marks, None) == (events, marks)
    # The sink holds the batch up to 150 (a transaction's end): its events and their cascades go.
    assert unapplied(events, marks, BinlogOffset("b.000001", 150)) == (events[2:], [(2, second)])
    assert unapplied(events, marks, BinlogOffset("b.000001", 220)) == ([], [])
    assert unapplied(events, marks, BinlogOffset("b.000001", 100)) == (events, marks)
    # Positions of a later binlog file are past all of these.
    assert unapplied(events, marks, BinlogOffset("b.000002", 4)) == ([], [])
