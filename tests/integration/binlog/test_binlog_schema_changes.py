"""DDL on captured tables during the binlog phase, into a JDBC replica and a changelog.

* ADD COLUMN (with a default, so rows that existed get it) and DROP COLUMN: the replica table
  is altered at that place in the stream and keeps equal to the source, row for row and column
  for column; the changelog's records carry the new column from then on.
* a narrowing column type change (MODIFY) and a RENAME TABLE stop only their table: it is FAILED in
  the checkpoint with an error naming the table and the statement, shown as a warning; its later
  changes are not applied; the other tables keep streaming; the run exits 4 naming them; a rerun
  resumes although the renamed table no longer exists.
* DDL on a table that is not captured is ignored.

Both ways a DDL reaches the pipeline are covered: written while the pipeline was down (the
resumed reader decodes the older events with the definitions the checkpoint recorded, moved
forward by each statement: engine/schema_history.py), and while it streams (the definition is
reloaded in the reader thread before the next event is decoded).
"""

from __future__ import annotations

from typing import Any

from binlog_support import Case, replay_changelog

from sparkcdc.core.checkpoint import Phase


def _setup(case: Case) -> None:
    db = case.db
    case.execute(f"CREATE TABLE `{db}`.a (id INT PRIMARY KEY, v VARCHAR(20), n INT)")
    case.execute(f"CREATE TABLE `{db}`.b (id INT PRIMARY KEY, v VARCHAR(20))")
    case.execute(f"CREATE TABLE `{db}`.r (id INT PRIMARY KEY, v VARCHAR(20))")
    case.execute(f"CREATE TABLE `{db}`.c (id INT PRIMARY KEY, v VARCHAR(20))")
    case.execute(f"CREATE TABLE `{db}`.s (id INT PRIMARY KEY, v VARCHAR(20))")
    case.execute(f"CREATE TABLE `{db}`.u (id INT PRIMARY KEY)")
    for table in ("a", "b", "r", "c", "s"):
        values = ", ".join(f"({i}, '{table}{i}'{', ' + str(i) if table == 'a' else ''})" for i in range(1, 6))
        case.execute(f"INSERT INTO `{db}`.`{table}` VALUES {values}")


# What a changelog consumer fills in for rows last written before a column was added: the
# column's default, as the source did (the changelog carries rows, not DDL).
_ADDED_DEFAULTS = {"c": 7, "d": "x"}


def _a_rows_from_changelog(case: Case) -> list[tuple[Any, ...]]:
    replayed = replay_changelog(case.changelog_dir("ddl-log") / f"{case.db}.a", key=lambda d: d["id"])
    columns = case.columns(case.db, "a")
    return [tuple(data.get(c, _ADDED_DEFAULTS.get(c)) for c in columns) for data in replayed.values()]


def test_schema_changes(case: Case) -> None:
    db = case.db
    _setup(case)
    tables = ["a", "b", "r", "c", "s"]
    manifest = case.manifest(
        "ddl.yaml",
        case.pipeline("ddl-jdbc", tables),
        case.pipeline("ddl-log", tables, sink="changelog"),
    )
    case.run_ok(manifest)

    # While the pipeline is down.
    case.execute(f"INSERT INTO `{db}`.a VALUES (6, 'a6', 6)")
    case.execute(f"ALTER TABLE `{db}`.a ADD COLUMN c INT NOT NULL DEFAULT 7")
    case.execute(f"INSERT INTO `{db}`.a VALUES (7, 'a7', 7, 70)")
    case.execute(f"UPDATE `{db}`.a SET v = 'a1x' WHERE id = 1")
    case.execute(f"INSERT INTO `{db}`.b VALUES (6, 'b6')")
    case.execute(f"USE `{db}`")  # the statements below use the default schema
    case.execute("ALTER TABLE b MODIFY v VARCHAR(18)")
    case.execute(f"INSERT INTO `{db}`.b VALUES (7, 'b7 not replicated')")
    case.execute(f"ALTER TABLE `{db}`.`a` DROP COLUMN `n`, ALGORITHM=COPY")
    case.execute(f"UPDATE `{db}`.a SET c = 8 WHERE id = 2")
    case.execute("RENAME TABLE r TO r2")
    case.execute(f"INSERT INTO `{db}`.r2 VALUES (6, 'r6')")
    case.execute(f"ALTER TABLE `{db}`.u ADD COLUMN z INT")
    case.execute(f"INSERT INTO `{db}`.c VALUES (6, 'c6')")
    case.execute("USE mysql")
    b_before = [r for r in case.rows(db, "b") if r[0] != 7]
    result = case.run(manifest)
    assert result.returncode == 4, result.describe()  # the run ends with tables failed, named on stderr
    assert f"pipeline ddl-jdbc: table {db}.b stopped" in result.stderr, result.describe()

    assert case.columns(case.sink_db("ddl_jdbc"), "a") == ["id", "v", "c"]
    case.assert_replica("ddl_jdbc", "a")
    case.assert_replica("ddl_jdbc", "c")
    assert sorted(case.rows(case.sink_db("ddl_jdbc"), "b")) == sorted(b_before)
    assert sorted(case.rows(case.sink_db("ddl_jdbc"), "r")) == [(i, f"r{i}") for i in range(1, 6)]
    for pipeline in ("ddl-jdbc", "ddl-log"):
        checkpoint = case.checkpoint(pipeline)
        assert checkpoint is not None
        states = {str(t): s for t, s in checkpoint.tables.items()}
        b_state, r_state = states[f"{db}.b"], states[f"{db}.r"]
        assert b_state.phase is Phase.FAILED and r_state.phase is Phase.FAILED, states
        assert f"table {db}.b" in b_state.error and "ALTER TABLE b MODIFY v VARCHAR(18)" in b_state.error
        # Renamed while the pipeline was down: gone at start, stopped before reading.
        assert f"table {db}.r stopped streaming: it no longer exists on the source" in r_state.error
        assert states[f"{db}.a"].phase is Phase.BINLOG and states[f"{db}.c"].phase is Phase.BINLOG
    assert "WARNING" in result.stderr and "MODIFY v VARCHAR(18)" in result.stderr

    log_a = case.changelog_dir("ddl-log") / f"{db}.a"
    every = [r for path in sorted(log_a.glob("binlog-*.jsonl")) for r in _lines(path)]
    records = [r for r in every if r["data"]]
    schema_records = [r for r in every if not r["data"]]
    assert [(r["op"], r.get("added"), r.get("dropped")) for r in schema_records] == [
        ("schema", ["c"], None),
        ("schema", None, ["n"]),
    ]
    by_id = {(r["op"], r["data"]["id"]): r["data"] for r in records}
    # Each image decoded with the definition of its time (the checkpoint's schema history): n is
    # in the images written before the DROP, gone from those after it.
    assert by_id[("+I", 6)] == {"id": 6, "v": "a6", "n": 6}
    assert by_id[("+I", 7)] == {"id": 7, "v": "a7", "n": 7, "c": 70}
    assert set(by_id[("+U", 2)]) == {"id", "v", "c"}
    assert sorted(_a_rows_from_changelog(case)) == sorted(case.rows(db, "a"))

    # While streaming (a run that resumes although r is gone from the source): the definition is
    # reloaded before the next rows are decoded.
    case.execute(f"INSERT INTO `{db}`.c VALUES (7, 'c7')")
    run = case.start(manifest)
    with run:
        case.wait_offset(run, "ddl-jdbc", case.position(), timeout=120)
        case.execute(f"ALTER TABLE `{db}`.a ADD COLUMN d VARCHAR(18) DEFAULT 'x' AFTER id")
        case.execute(f"INSERT INTO `{db}`.a (id, v, d, c) VALUES (8, 'a8', 'y', 1)")
        case.execute(f"UPDATE `{db}`.a SET d = 'z' WHERE id = 3")
        case.execute(f"INSERT INTO `{db}`.s VALUES (6, 's6')")
        case.execute(f"RENAME TABLE `{db}`.s TO `{db}`.s2")
        case.execute(f"INSERT INTO `{db}`.s2 VALUES (7, 's7')")
        case.execute(f"INSERT INTO `{db}`.c VALUES (8, 'c8')")
        target = case.position()
        case.wait_offset(run, "ddl-jdbc", target, timeout=60)
        case.wait_offset(run, "ddl-log", target, timeout=60)
        run.kill()
    assert case.columns(case.sink_db("ddl_jdbc"), "a") == ["id", "d", "v", "c"]
    assert sorted(case.rows(case.sink_db("ddl_jdbc"), "s")) == [(i, f"s{i}") for i in range(1, 7)]
    for pipeline in ("ddl-jdbc", "ddl-log"):
        checkpoint = case.checkpoint(pipeline)
        assert checkpoint is not None
        s_state = {str(t): s for t, s in checkpoint.tables.items()}[f"{db}.s"]
        assert s_state.phase is Phase.FAILED
        assert f"table {db}.s" in s_state.error and f"RENAME TABLE `{db}`.s TO `{db}`.s2" in s_state.error
    case.assert_replica("ddl_jdbc", "a")
    case.assert_replica("ddl_jdbc", "c")
    assert sorted(_a_rows_from_changelog(case)) == sorted(case.rows(db, "a"))


def _lines(path: Any) -> list[dict[str, Any]]:
    import json

    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
