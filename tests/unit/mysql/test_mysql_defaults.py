"""Column defaults travel from the source's information_schema into the sink's CREATE TABLE, so rows
the binlog wrote before an ADD COLUMN read the column's default in the sink as on the source."""

from __future__ import annotations

import pytest

from sparkcdc.core.tables import TableId
from sparkcdc.mysql.columns import Column, default_sql
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks.jdbc.dialects import dialect_for

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("reported", "extra", "is_mariadb", "expected"),
    [
        (None, "", True, None),
        ("NULL", "", True, "NULL"),
        ("'it''s'", "", True, "'it''s'"),
        ("current_timestamp()", "", True, "current_timestamp()"),
        ("7", "", False, "'7'"),
        ("it's \\ here", "", False, "'it''s \\\\ here'"),
        ("now()", "DEFAULT_GENERATED", False, "(now())"),
    ],
)
def test_default_sql_per_flavour(
    reported: str | None, extra: str, is_mariadb: bool, expected: str | None
) -> None:
    assert default_sql(reported, extra, is_mariadb) == expected


def _schema() -> TableSchema:
    columns = (
        Column("id", 1, "int", "int(11)", nullable=False),
        Column("qty", 2, "int", "int(11)", nullable=False, default_sql="7"),
        Column("note", 3, "varchar", "varchar(10)", default_sql="'x'"),
        Column("at", 4, "datetime", "datetime", default_sql="current_timestamp()"),
    )
    return TableSchema(TableId("db", "t"), columns, ("id",), ("id",), ("id",))


def test_mysql_sink_tables_carry_the_defaults() -> None:
    sql = dialect_for("mysql").create_table_sql(_schema())
    assert "`id` int(11) NOT NULL," in sql
    assert "`qty` int(11) NOT NULL DEFAULT 7," in sql
    assert "`note` varchar(10) DEFAULT 'x'," in sql
    assert "`at` datetime DEFAULT current_timestamp()," in sql


def test_postgres_sink_tables_carry_literal_defaults_only() -> None:
    sql = dialect_for("postgresql").create_table_sql(_schema())
    assert '"qty" integer NOT NULL DEFAULT 7' in sql
    assert """"note" text DEFAULT 'x'""" in sql
    assert "current_timestamp" not in sql.lower()
