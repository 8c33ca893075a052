"""RENAME COLUMN, widening MODIFY/CHANGE and TRUNCATE followed mid-stream into MariaDB,
PostgreSQL and the changelog, under a concurrent writer; a narrowing MODIFY stops only its table.

``harness.ddl_writer.DdlWriter`` writes four tables while three pipelines stream them (JDBC into
MariaDB — on the Go decoder where it is built, which hands each statement to the Python reader
— JDBC into PostgreSQL, and the changelog), and runs ``DDL_SCRIPT`` between its transactions:
rows are written before and after every statement. Then a second run resumes (its definitions
loaded after every statement) and catches up.

* ``t`` — a column renamed in the same statement that adds one, its key column renamed, columns
  widened (TINYINT → INT, NOT NULL → NULL, DECIMAL(6,2) → DECIMAL(9,3) under a new name,
  TINYINT UNSIGNED → SMALLINT, VARCHAR(20) → VARCHAR(60)): each target has the source's columns
  under the new names, in the target's types for the new definitions, and exactly its rows;
* ``k`` — truncated twice while written: each target holds exactly what was written after the
  last TRUNCATE;
* ``x`` — narrowed: FAILED in every pipeline's checkpoint with a message naming the statement
  and ``resnapshotTables``, the run exits 4 naming it; ``y`` and the others keep streaming.
"""

from __future__ import annotations

import time
from decimal import Decimal
from typing import Any

from binlog_support import Case, assert_same_rows, replay_changelog

from harness.ddl_writer import ADDED_DEFAULTS, DDL_SCRIPT, NARROWING, DdlWriter, create_ddl_tables
from harness.decoder import built_decoder
from harness.waiting import wait_until
from sparkcdc.core.checkpoint import Phase
from sparkcdc.testing.postgres import PostgresServer

TABLES = ["t", "k", "x", "y"]
PIPELINES = ("ddl-my", "ddl-pg", "ddl-log")


def _stream_the_script(case: Case, manifest: Any) -> str:
    """The script run while the pipelines stream; their log (stderr)."""
    run = case.start(manifest)
    with run:
        now = case.position()
        for pipeline in PIPELINES:
            case.wait_offset(run, pipeline, now, timeout=240)
        writer = DdlWriter(case.server, case.db, seed=19)
        with writer:
            for done, (statement, changes) in enumerate(DDL_SCRIPT, start=1):
                time.sleep(0.6)  # rows before the statement, in flight while it comes
                writer.next_ddl(statement, dict(changes))
                wait_until(lambda done=done: writer.ddl_done >= done, timeout=30, message=statement)
            time.sleep(0.6)
        target = case.position()
        for pipeline in PIPELINES:
            case.wait_offset(run, pipeline, target, timeout=180)
        run.kill()
    return run.result().stderr


def _source_columns(case: Case, table: str) -> list[tuple[str, str, str]]:
    rows = case.execute(
        "SELECT COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE FROM information_schema.COLUMNS "
        "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION",
        (case.db, table),
    )
    return [(str(n), str(t), str(nullable)) for n, t, nullable in rows]


def _changelog_rows(case: Case, table: str, columns: list[str]) -> list[tuple[Any, ...]]:
    # The key column is renamed midway (id to tid): records before it carry the old name.
    replayed = replay_changelog(
        case.changelog_dir("ddl-log") / f"{case.db}.{table}", key=lambda d: d.get("tid", d.get("id"))
    )
    out = []
    for data in replayed.values():
        row = [data.get(c, ADDED_DEFAULTS.get(c)) for c in columns]
        out.append(
            tuple(
                Decimal(str(v)) if c == "dd" and v is not None else v
                for c, v in zip(columns, row, strict=True)
            )
        )
    return out


def test_ddl_followed_into_mariadb_postgres_and_the_changelog(case: Case, postgres: PostgresServer) -> None:
    db = case.db
    create_ddl_tables(case.server, db)
    my = case.pipeline("ddl-my", TABLES)
    pg = case.pipeline("ddl-pg", TABLES)
    pg_db, pg_secret = case.to_postgres(pg, postgres)
    log = case.pipeline("ddl-log", TABLES, sink="changelog")
    manifest = case.manifest("ddl.yaml", pg_secret, my, pg, log)

    streamed = _stream_the_script(case, manifest)
    # The JDBC pipelines follow on the Go decoder, which hands every statement to the Python reader.
    assert built_decoder() is not None, "build the Go decoder first: bash binlogdec/build.sh"
    handed = "the Go decoder stops (a schema change of a captured table)"
    assert "[ddl-my] at " in streamed and handed in streamed, streamed[-3000:]
    case.execute(
        f"INSERT INTO `{db}`.t (tid, b, n, dd, z, u) VALUES (500, 'after', 100000, 123456.789, NULL, 3000)"
    )
    case.execute(f"INSERT INTO `{db}`.k VALUES (500, 'k500')")
    case.execute(f"INSERT INTO `{db}`.y VALUES (500, 'y500')")
    result = case.run(manifest)  # resumes past every statement, catches up, exits
    assert result.returncode == 4, result.describe()
    assert f"table {db}.x stopped" in result.stderr, result.describe()

    # x stopped at its narrowing in every pipeline, with the way out; the others stream (checked
    # first: a table stopped by mistake shows its error here rather than as a stale definition).
    for pipeline in PIPELINES:
        checkpoint = case.checkpoint(pipeline)
        assert checkpoint is not None
        states = {str(t): s for t, s in checkpoint.tables.items()}
        x_state = states[f"{db}.x"]
        assert x_state.phase is Phase.FAILED, states
        assert NARROWING in x_state.error and "resnapshotTables" in x_state.error, x_state.error
        assert "shorter" in x_state.error, x_state.error
        for table in ("t", "k", "y"):
            assert states[f"{db}.{table}"].phase is Phase.BINLOG, (pipeline, table, states)

    # MariaDB: the source's columns (names, types, nullability) and rows.
    replica = case.sink_db("ddl_my")
    columns = _source_columns(case, "t")
    assert [c[0] for c in columns] == ["tid", "b", "n", "dd", "z", "u", "c"], columns
    stored = case.execute(
        "SELECT COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE FROM information_schema.COLUMNS "
        "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = 't' ORDER BY ORDINAL_POSITION",
        (replica,),
    )
    assert [(str(n), str(t), str(nullable)) for n, t, nullable in stored] == columns
    for table in ("t", "k", "y"):
        case.assert_replica("ddl_my", table)

    # PostgreSQL: the same names, the mapped types of the new definitions, the same rows.
    names = [c[0] for c in columns]
    pg_columns = postgres.execute(
        "SELECT column_name, data_type, is_nullable FROM information_schema.columns WHERE table_name = 't' "
        "ORDER BY ordinal_position",
        database=pg_db,
    )
    assert [tuple(r) for r in pg_columns] == [
        ("tid", "integer", "NO"),
        ("b", "text", "NO"),
        ("n", "integer", "YES"),
        ("dd", "numeric", "YES"),
        ("z", "integer", "YES"),
        ("u", "smallint", "YES"),
        ("c", "integer", "YES"),
    ]
    scale = postgres.execute(
        "SELECT numeric_precision, numeric_scale FROM information_schema.columns "
        "WHERE table_name = 't' AND column_name = 'dd'",
        database=pg_db,
    )
    assert [tuple(r) for r in scale] == [(9, 3)]
    source_t = case.execute(f"SELECT {', '.join(names)} FROM `{db}`.t")
    quoted = ", ".join(f'"{n}"' for n in names)
    assert_same_rows(
        source_t, [tuple(r) for r in postgres.execute(f"SELECT {quoted} FROM t", database=pg_db)], "t"
    )
    for table in ("k", "y"):
        rows = postgres.execute(f"SELECT id, v FROM {table}", database=pg_db)
        assert_same_rows(case.rows(db, table), [tuple(r) for r in rows], f"{table} in PostgreSQL")

    # The changelog: replayed with its schema and truncate records, the source's rows.
    assert_same_rows(source_t, _changelog_rows(case, "t", names), "t in the changelog")
    assert_same_rows(case.rows(db, "k"), _changelog_rows(case, "k", ["id", "v"]), "k in the changelog")
    records = [
        r for p in sorted((case.changelog_dir("ddl-log") / f"{db}.t").glob("binlog-*")) for r in _read(p)
    ]
    renames = [r["renamed"] for r in records if r["op"] == "schema" and "renamed" in r]
    assert renames == [{"a": "b"}, {"d": "dd"}, {"id": "tid"}], renames
    truncates = [r for p in (case.changelog_dir("ddl-log") / f"{db}.k").glob("binlog-*") for r in _read(p)]
    assert sum(r["op"] == "truncate" for r in truncates) == 2


def test_ddl_made_while_stopped_is_followed_from_behind(case: Case) -> None:
    """The whole script runs while the pipeline is stopped, so the resumed stream meets every
    statement with the source's definition of after the last one: the key column already renamed
    (``id`` to ``tid``) when the first statement is judged. Each is followed as of its time."""
    db = case.db
    create_ddl_tables(case.server, db)
    manifest = case.manifest("behind.yaml", case.pipeline("behind", TABLES))
    case.run_ok(manifest)
    writer = DdlWriter(case.server, db, seed=23)
    with writer:
        for done, (statement, changes) in enumerate(DDL_SCRIPT, start=1):
            time.sleep(0.2)
            writer.next_ddl(statement, dict(changes))
            wait_until(lambda done=done: writer.ddl_done >= done, timeout=30, message=statement)
        time.sleep(0.2)
    result = case.run(manifest)
    assert result.returncode == 4 and f"table {db}.x stopped" in result.stderr, result.describe()
    checkpoint = case.checkpoint("behind")
    assert checkpoint is not None
    states = {str(t): s for t, s in checkpoint.tables.items()}
    for table in ("t", "k", "y"):
        assert states[f"{db}.{table}"].phase is Phase.BINLOG, (table, states)
    stored = case.execute(
        "SELECT COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE FROM information_schema.COLUMNS "
        "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = 't' ORDER BY ORDINAL_POSITION",
        (case.sink_db("behind"),),
    )
    assert [(str(n), str(t), str(nullable)) for n, t, nullable in stored] == _source_columns(case, "t")
    for table in ("t", "k", "y"):
        case.assert_replica("behind", table)


def _read(path: Any) -> list[dict[str, Any]]:
    import json

    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
