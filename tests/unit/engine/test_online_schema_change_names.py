"""Online schema-change tools' tables told by name, and their swap told from other renames."""

from __future__ import annotations

import pytest

from sparkcdc.core.shadow_tables import MAX_NAME, Role, is_shadow_of, shadow_tables
from sparkcdc.core.tables import TableId
from sparkcdc.engine.online_schema_change import swaps
from sparkcdc.mysql.ddl import rename_pairs

pytestmark = pytest.mark.unit

X = TableId("shop", "x")


@pytest.mark.parametrize(
    ("name", "table", "role"),
    [
        ("_x_gho", "x", Role.GHOST),
        ("_x_ghc", "x", Role.CHANGELOG),
        ("_x_del", "x", Role.OLD),
        ("_x_20261127034128_del", "x", Role.OLD),
        ("_my_table_gho", "my_table", Role.GHOST),
        ("_x_new", "x", Role.GHOST),
        ("__x_new", "x", Role.GHOST),
        ("_x_old", "x", Role.OLD),
        ("___x_old", "x", Role.OLD),
        ("__________A1B2C3_x_old", "x", Role.OLD),
        ("_orders_new", "orders", Role.GHOST),
    ],
)
def test_tool_names_are_recognised(name: str, table: str, role: Role) -> None:
    assert is_shadow_of(name, table, role)
    assert is_shadow_of(name, table)


@pytest.mark.parametrize(
    ("name", "table"),
    [
        ("x", "x"),
        ("_x_gho", "y"),
        ("_xy_gho", "x"),
        ("x_new", "x"),  # no leading underscore: the user's own table
        ("_x_newer", "x"),
        ("_x_gho_", "x"),
        ("orders_old", "orders"),
        ("_x_1234_del", "x"),  # not gh-ost's timestamp
    ],
)
def test_other_names_are_not(name: str, table: str) -> None:
    assert not is_shadow_of(name, table)


def test_names_cut_to_64_characters() -> None:
    long = "t" * 62
    # gh-ost cuts the end of the table's name so that the suffix fits.
    ghost = f"_{long[: MAX_NAME - 5]}_gho"
    assert len(ghost) == MAX_NAME
    assert is_shadow_of(ghost, long, Role.GHOST)
    assert not is_shadow_of(ghost, "t" * 10, Role.GHOST)
    # pt-osc cuts the whole name at 64, here inside the suffix.
    shorter = "t" * 61
    new = f"_{shorter}_new"[:MAX_NAME]
    assert new.endswith("t_n")
    assert is_shadow_of(new, shorter, Role.GHOST)
    assert not is_shadow_of(new, "u" * 61, Role.GHOST)
    assert not is_shadow_of(new, shorter + "x", Role.GHOST)
    assert is_shadow_of(f"_{long}_new"[:MAX_NAME], long, Role.GHOST)  # cut right after the name


def test_discovery_leaves_out_tool_tables_only_beside_their_table() -> None:
    tables = [TableId("shop", n) for n in ("x", "_x_gho", "_x_ghc", "_x_del", "_y_new", "_z_old", "z")]
    tables.append(TableId("other", "_x_new"))  # no x in that database
    assert shadow_tables(tables) == {
        TableId("shop", "_x_gho"),
        TableId("shop", "_x_ghc"),
        TableId("shop", "_x_del"),
        TableId("shop", "_z_old"),
    }


def test_rename_pairs() -> None:
    sql = "rename /* gh-ost */ table `shop`.`x` to `shop`.`_x_del`, `_x_gho` to x"
    assert rename_pairs(sql, "shop") == [(X, TableId("shop", "_x_del")), (TableId("shop", "_x_gho"), X)]
    assert rename_pairs("RENAME TABLE a TO b", "") == []  # no default schema: unreadable
    assert rename_pairs("ALTER TABLE x RENAME TO y", "shop") == []


@pytest.mark.parametrize(
    "sql",
    [
        "rename /* gh-ost */ table `shop`.`x` to `shop`.`_x_del`, `shop`.`_x_gho` to `shop`.`x`",
        "RENAME TABLE `shop`.`x` TO `shop`.`_x_old`, `shop`.`_x_new` TO `shop`.`x`",
        "RENAME TABLE x TO __x_old, _x_new TO x, a TO b",
    ],
)
def test_swaps_are_recognised(sql: str) -> None:
    assert set(swaps(sql, "shop", [X, TableId("shop", "y")])) == {X}


@pytest.mark.parametrize(
    "sql",
    [
        "RENAME TABLE x TO x2",  # a plain rename
        "RENAME TABLE x TO _x_old",  # gh-ost's two-step cut-over, or a rename away: x is gone
        "RENAME TABLE _x_new TO x",  # x was not captured under that name before
        "RENAME TABLE x TO _x_old, other TO x",  # not x's copy swapped in
        "RENAME TABLE x TO _x_old, _y_new TO x",
        "RENAME TABLE x TO _x_gho, _x_del TO x",  # roles the wrong way round
        "RENAME TABLE x TO other._x_old, _x_new TO x",  # into another database
    ],
)
def test_other_renames_are_not_swaps(sql: str) -> None:
    assert swaps(sql, "shop", [X]) == {}
