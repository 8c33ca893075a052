"""A replay across several DDL statements decodes each row with the definition of its time.

The server logs ``binlog_row_metadata=MINIMAL``: row images name no columns and carry no
signedness, so nothing but the checkpoint's recorded definitions (engine/schema_history.py) can
tell how the rows written before each statement read. The pipeline is stopped with its
checkpoint, three statements each followed by rows are applied, and it resumes.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from binlog_support import Case, new_case

from harness.mariadb import start_server
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.schema_codec import decode_definition
from sparkcdc.testing.mariadb import MariaDBServer

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def minimal_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MariaDBServer]:
    server = start_server(
        tmp_path_factory.mktemp("minimal-mariadb"), extra_options=["--binlog-row-metadata=MINIMAL"]
    )
    try:
        yield server
    finally:
        server.cleanup()


@pytest.fixture
def minimal_case(minimal_server: MariaDBServer, tmp_path: Path) -> Iterator[Case]:
    created = new_case(minimal_server, tmp_path)
    try:
        yield created
    finally:
        created.cleanup()


def _recorded_columns(case: Case, table: TableId) -> list[tuple[str, str]]:
    checkpoint = case.checkpoint("history")
    assert checkpoint is not None and table in checkpoint.definitions
    schema = decode_definition(table, checkpoint.definitions[table]).schema
    return [(c.name, c.column_type) for c in schema.columns]


def test_replay_from_before_three_statements_decodes_every_row_right(minimal_case: Case) -> None:
    case = minimal_case
    assert case.execute("SELECT @@binlog_row_metadata")[0][0] == "MINIMAL"
    case.execute(
        f"CREATE TABLE `{case.db}`.t (id INT PRIMARY KEY, a TINYINT UNSIGNED NOT NULL, "
        "s VARCHAR(10) CHARACTER SET utf8mb4, b VARCHAR(5)) DEFAULT CHARSET=latin1"
    )
    case.execute(
        f"INSERT INTO `{case.db}`.t VALUES (1, 1, 'un', 'x'), (2, 2, 'deux', 'y'), (3, 3, 'trois', 'z')"
    )
    manifest = case.manifest("p.yaml", case.pipeline("history", ["t"]))
    case.run_ok(manifest)  # the snapshot
    case.execute(f"INSERT INTO `{case.db}`.t VALUES (4, 250, 'quatre', 'w')")
    case.run_ok(manifest)  # streamed: the checkpoint now records the definition it decodes with
    table = TableId(case.db, "t")
    before = _recorded_columns(case, table)
    assert [n for n, _ in before] == ["id", "a", "s", "b"]
    case.assert_replica("history", "t")

    # Stopped: three statements, each followed by rows, that the resume replays.
    t = f"`{case.db}`.t"
    case.execute(f"INSERT INTO {t} VALUES (5, 200, 'éàü€😀', 'v')")  # 200 reads -56 as SMALLINT
    case.execute(f"UPDATE {t} SET a = 255, s = '€€€€€€€€€€' WHERE id = 1")
    case.execute(f"ALTER TABLE {t} ADD COLUMN c INT DEFAULT 7")
    case.execute(f"INSERT INTO {t} VALUES (6, 201, 'six', 'u', 60)")
    case.execute(f"UPDATE {t} SET c = 20, a = 222 WHERE id = 2")
    case.execute(f"DELETE FROM {t} WHERE id = 3")
    case.execute(f"ALTER TABLE {t} RENAME COLUMN b TO bb")
    case.execute(f"INSERT INTO {t} VALUES (7, 254, 'sept😀', 't', 70)")
    case.execute(f"UPDATE {t} SET bb = 'q' WHERE id = 4")
    case.execute(f"ALTER TABLE {t} MODIFY a SMALLINT NOT NULL, MODIFY s VARCHAR(40) CHARACTER SET utf8mb4")
    case.execute(f"INSERT INTO {t} VALUES (8, -300, %s, 's', 80)", ("😀" * 30,))
    case.execute(f"UPDATE {t} SET a = -1 WHERE id = 6")
    case.execute(f"DELETE FROM {t} WHERE id = 7")

    result = case.run_ok(manifest)
    output = result.describe()
    assert "stopped streaming" not in output, output
    # Every row as on the source: rows written before the widening kept their unsigned values
    # (5 holds 200, 1 holds 255), rows before the ADD read its default, later ones their values.
    case.assert_replica("history", "t")
    sink = {r[0]: r for r in case.rows(case.sink_db("history"), "t")}
    assert sink[5][1] == 200 and sink[1][1] == 255 and sink[4][1] == 250
    assert sink[1][2] == "€€€€€€€€€€" and sink[5][2] == "éàü€😀"
    assert case.columns(case.sink_db("history"), "t") == ["id", "a", "s", "bb", "c"]
    after = _recorded_columns(case, table)
    assert after == [
        ("id", "int(11)"),
        ("a", "smallint(6)"),
        ("s", "varchar(40)"),
        ("bb", "varchar(5)"),
        ("c", "int(11)"),
    ]
