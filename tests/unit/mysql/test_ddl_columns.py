"""RENAME COLUMN, MODIFY, CHANGE and TRUNCATE read from DDL (mysql/ddl.py, mysql/ddl_alter.py),
and the widening rules that decide whether a redefinition is followed (mysql/widening.py)."""

from __future__ import annotations

import pytest

from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.tables import TableId
from sparkcdc.engine.schema_changes import affected
from sparkcdc.mysql.binlog.reader import DdlStatement
from sparkcdc.mysql.columns import Column
from sparkcdc.mysql.ddl import DdlKind, TableDdl, parse_ddl
from sparkcdc.mysql.widening import declared_conflicts, declared_matches, widening_problem

pytestmark = pytest.mark.unit

T = TableId("shop", "orders")


def one(sql: str, schema: str = "shop") -> TableDdl:
    entries = parse_ddl(sql, schema)
    assert len(entries) == 1, entries
    return entries[0]


@pytest.mark.parametrize(
    ("sql", "renamed", "modified", "added"),
    [
        ("ALTER TABLE orders RENAME COLUMN a TO b", (("a", "b"),), (), ()),
        (
            "alter table `shop`.`orders` rename column `we``ird` to `new name`",
            (("we`ird", "new name"),),
            (),
            (),
        ),
        ("ALTER TABLE orders RENAME COLUMN IF EXISTS a TO b", (("a", "b"),), (), ()),
        ("ALTER TABLE orders RENAME COLUMN a TO b, ADD c INT", (("a", "b"),), (), ("c",)),
        ("ALTER TABLE orders CHANGE a b INT NOT NULL", (("a", "b"),), (("b", "INT NOT NULL"),), ()),
        ("ALTER TABLE orders CHANGE COLUMN a a BIGINT", (), (("a", "BIGINT"),), ()),
        ("ALTER TABLE shop.orders MODIFY v VARCHAR(100)", (), (("v", "VARCHAR(100)"),), ()),
        (
            "ALTER TABLE orders MODIFY COLUMN `v` DECIMAL(12,4) DEFAULT '1,5', MODIFY n BIGINT UNSIGNED",
            (),
            (("v", "DECIMAL(12,4) DEFAULT '1,5'"), ("n", "BIGINT UNSIGNED")),
            (),
        ),
        (
            "/* tool */ ALTER TABLE orders RENAME COLUMN a TO b, MODIFY c INT NULL, ALGORITHM=INPLACE",
            (("a", "b"),),
            (("c", "INT NULL"),),
            (),
        ),
        ("ALTER TABLE orders CHANGE a A INT", (("a", "A"),), (("A", "INT"),), ()),
    ],
)
def test_renamed_and_modified_columns(
    sql: str,
    renamed: tuple[tuple[str, str], ...],
    modified: tuple[tuple[str, str], ...],
    added: tuple[str, ...],
) -> None:
    entry = one(sql)
    assert entry.kind is DdlKind.EVOLVE, entry
    assert (entry.table, entry.renamed, entry.modified, entry.added) == (T, renamed, modified, added)


@pytest.mark.parametrize(
    ("sql", "reason"),
    [
        ("ALTER TABLE orders CHANGE a b INT, CHANGE b a INT", "'a' is freed and taken again"),
        ("ALTER TABLE orders DROP b, RENAME COLUMN a TO b", "'b' is freed and taken again"),
        ("ALTER TABLE orders RENAME COLUMN a TO b, ADD a INT", "'a' is freed and taken again"),
        ("ALTER TABLE orders MODIFY v BIGINT, DROP PRIMARY KEY", "DROP PRIMARY KEY"),
        ("ALTER TABLE orders RENAME COLUMN a", "RENAME COLUMN a"),
    ],
)
def test_ambiguous_or_unsupported_column_changes_fail(sql: str, reason: str) -> None:
    entry = one(sql)
    assert entry.kind is DdlKind.FAIL and reason in entry.reason, entry


def test_truncate_and_which_tables_it_concerns() -> None:
    assert one("TRUNCATE `orders`") == TableDdl(T, DdlKind.TRUNCATE)
    assert one("truncate table `shop` . `orders`", "") == TableDdl(T, DdlKind.TRUNCATE)
    assert parse_ddl("TRUNCATE orders", "") == []  # no default schema: not resolvable
    ddl = DdlStatement(BinlogOffset("b.000002", 400), "shop", "TRUNCATE TABLE orders")
    assert [e.kind for e in affected(ddl, [T])] == [DdlKind.TRUNCATE]
    assert affected(ddl, [TableId("shop", "items")]) == []


def col(column_type: str, *, nullable: bool = True, collation: str | None = None, name: str = "c") -> Column:
    base = column_type.split("(")[0].split()[0].lower()
    args = (
        column_type[column_type.find("(") + 1 : column_type.find(")")].split(",")
        if "(" in column_type
        else []
    )
    unsigned = "unsigned" in column_type.lower()
    length = precision = scale = None
    if base in ("varchar", "varbinary", "char", "binary"):
        length = int(args[0])
    if base == "decimal":
        precision, scale = int(args[0]), int(args[1]) if len(args) > 1 else 0
    charset = collation.split("_")[0] if collation else None
    return Column(
        name, 1, base, column_type, nullable=nullable, unsigned=unsigned, precision=precision, scale=scale,
        length=length, charset=charset, collation=collation,
    )  # fmt: skip


UTF = "utf8mb4_general_ci"


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (col("varchar(20)", collation=UTF), col("varchar(100)", collation=UTF)),
        (col("varbinary(4)"), col("varbinary(8)")),
        (col("tinyint(4)"), col("smallint(6)")),
        (col("smallint(6)"), col("mediumint(9)")),
        (col("mediumint(9)"), col("int(11)")),
        (col("int(11)"), col("bigint(20)")),
        (col("tinyint(3) unsigned"), col("smallint(6)")),
        (col("int(10) unsigned"), col("bigint(20)")),
        (col("int(10) unsigned"), col("bigint(20) unsigned")),
        (col("decimal(5,2)"), col("decimal(7,3)")),
        (col("decimal(5,2) unsigned"), col("decimal(6,2)")),
        (col("int(11)", nullable=False), col("int(11)")),
        (col("varchar(20)", nullable=False, collation=UTF), col("varchar(30)", collation=UTF)),
    ],
)
def test_widenings(old: Column, new: Column) -> None:
    assert widening_problem(old, new) is None


@pytest.mark.parametrize(
    ("old", "new", "why"),
    [
        (col("varchar(20)", collation=UTF), col("varchar(10)", collation=UTF), "shorter"),
        (col("bigint(20)"), col("int(11)"), "smaller range"),
        (col("tinyint(4)"), col("tinyint(3) unsigned"), "smaller range"),
        (col("int(11)"), col("bigint(20) unsigned"), "smaller range"),
        (col("smallint(5) unsigned"), col("smallint(6)"), "smaller range"),
        (col("decimal(7,3)"), col("decimal(7,2)"), "fewer digits"),
        (col("decimal(7,3)"), col("decimal(8,5)"), "fewer digits"),
        (col("decimal(5,2)"), col("decimal(8,2) unsigned"), "negative"),
        (col("int(11)"), col("int(11)", nullable=False), "NOT NULL"),
        (col("int(11)"), col("varchar(20)", collation=UTF), "type family"),
        (col("varchar(20)", collation=UTF), col("varchar(30)", collation="latin1_swedish_ci"), "collation"),
        (col("char(5)", collation=UTF), col("char(9)", collation=UTF), "not a widening"),
        (col("varchar(20)", collation=UTF), col("text", collation=UTF), "not a widening"),
    ],
)
def test_not_widenings(old: Column, new: Column, why: str) -> None:
    problem = widening_problem(old, new)
    assert problem is not None and why in problem, problem


@pytest.mark.parametrize(
    ("column", "declared", "expected"),
    [
        (col("bigint(20)"), "BIGINT", True),
        (col("bigint(20)"), "bigint(20) NOT NULL DEFAULT 5", False),
        (col("bigint(20)", nullable=False), "BIGINT NOT NULL COMMENT 'x'", True),
        (col("int(10) unsigned"), "INTEGER UNSIGNED", True),
        (col("int(10) unsigned"), "INT", False),
        (col("varchar(100)", collation=UTF), "VARCHAR(100) CHARACTER SET utf8mb4 AFTER id", True),
        (col("varchar(100)", collation=UTF), "varchar(50)", False),
        (col("decimal(12,4)"), "NUMERIC(12,4)", True),
        (col("decimal(10,0)"), "DECIMAL", True),
        (col("decimal(12,4)"), "DECIMAL(12,2)", False),
        (col("int(11)", nullable=False), "INT NULL", False),
        (col("int(11)"), "INT NULL DEFAULT NULL", True),
        (col("varbinary(8)"), "VARBINARY(8)", True),
    ],
)
def test_declared_matches(column: Column, declared: str, expected: bool) -> None:
    assert declared_matches(column, declared) is expected


def test_declared_conflicts_of_added_columns() -> None:
    """ADD COLUMN is judged leniently: only a type certainly other than the declared one stops."""
    assert declared_conflicts(col("smallint(6)"), "TINYINT UNSIGNED AFTER id")
    assert declared_conflicts(col("varchar(40)", collation=UTF), "VARCHAR(10) DEFAULT 'x'")
    assert not declared_conflicts(col("int(11)"), "INT NOT NULL DEFAULT 7")  # NULL since: decodes alike
    assert declared_conflicts(col("bigint(20)"), "INT NOT NULL DEFAULT 7")
    assert not declared_conflicts(col("longtext", collation=UTF), "JSON")  # MariaDB's JSON
    assert not declared_conflicts(col("bigint(20) unsigned", nullable=False), "SERIAL")
    assert not declared_conflicts(col("tinyint(1)"), "BOOLEAN DEFAULT 0")
