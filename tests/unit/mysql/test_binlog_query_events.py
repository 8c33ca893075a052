"""Which statement events the Python reader hands on (mysql/binlog/reader.py ``_query_items``): a
transaction's COMMIT is a boundary, a DDL statement a statement to judge, and BEGIN and savepoints,
logged inside a transaction between its rows, nothing — a savepoint taken for a DDL statement
would end a batch inside a transaction (the Go decoder: binlogdec/follow_test.go)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.mysql.binlog.reader import DdlStatement, _query_items

AT = BinlogOffset("binlog.000001", 400)


def items(query: str) -> list[object]:
    return list(_query_items(SimpleNamespace(query=query.encode(), schema=b"db"), AT))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "query",
    [
        "SAVEPOINT `sparkcdc_bulk_load`",
        "rollback to savepoint x",
        "ROLLBACK WORK TO x",
        "ROLLBACK TO `x`",
        "  RELEASE SAVEPOINT x",
        "BEGIN",
    ],
)
def test_statements_inside_a_transaction_are_not_items(query: str) -> None:
    assert items(query) == []


def test_commit_is_a_boundary_and_ddl_a_statement() -> None:
    assert items("COMMIT") == [AT]
    assert items("ALTER TABLE t ADD c INT") == [DdlStatement(AT, "db", "ALTER TABLE t ADD c INT")]
    assert items("ROLLBACK") == [DdlStatement(AT, "db", "ROLLBACK")]  # judged, as before
