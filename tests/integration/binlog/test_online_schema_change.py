"""gh-ost and pt-online-schema-change run on a captured table under a writer, the pipeline
killed in the middle of the tool's copy and again right after its cut-over.

Each test captures its database by a pattern (``<db>\\..*``), so that the tools' tables
(``_x_gho``/``_x_ghc``/``_x_del``, ``_x_new``/``_x_old``) would be captured at a restart if
discovery did not leave them out. A ``RandomWriter`` inserts, updates and deletes rows of ``x``
throughout; the tool runs ``ALTER`` = an added column with a default, a widened integer and a
longer VARCHAR, copying slowly. The pipeline (JDBC into MariaDB) streams, is SIGKILLed once the
copy table holds some but not all rows, restarted, SIGKILLed again as soon as the tool has
swapped the tables and exited, restarted, and catches up after the writer stops. Then:

* the target ``x`` has the source's columns (names, types, nullability) and exactly its rows;
* the sink holds ``x`` and ``y`` only (besides its own ``sparkcdc_`` tables): no copy of the
  tools appeared there.

The writer pauses around gh-ost's cut-over (its postpone flag): on MariaDB gh-ost's atomic cut-over
can lose a write queued behind its lock at the source itself (docs/operations.md), which no replica
can follow; pt-osc's writer goes on throughout.
gh-ost is built by hack/gh-ost.sh (bootstrap runs it); pt-online-schema-change is the Debian
package percona-toolkit. pt-osc runs with ``--no-drop-old-table``: a pipeline that resumes from
before the swap after it happened reads ``x``'s previous definition from ``_x_old``
(engine/online_schema_change.py); gh-ost keeps ``_x_del`` by default.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from binlog_support import Case

from harness.waiting import wait_until
from harness.writer import RandomWriter

ROWS = 4000
ALTER = "ADD COLUMN c INT NOT NULL DEFAULT 7, MODIFY n INT, MODIFY v VARCHAR(40)"
ALTER_AGAIN = "ADD COLUMN d VARCHAR(10) NOT NULL DEFAULT 'z', MODIFY n BIGINT"
ROOT = Path(__file__).resolve().parents[3]


class _Writer(RandomWriter):
    """Inserts (upserts), updates and deletes ``x``'s rows by random ids, with only the columns
    ``x`` has before and after the change."""

    def op(self, cur: Any) -> None:
        rid = self.rng.randint(1, ROWS + 500)
        kind = self.rng.random()
        if kind < 0.4:
            n, v = self.rng.randint(-128, 127), f"w{self.rng.randint(0, 10**6)}"
            cur.execute(
                "INSERT INTO x (id, v, n) VALUES (%s, %s, %s) ON DUPLICATE KEY UPDATE v = VALUES(v)",
                (rid, v, n),
            )
        elif kind < 0.8:
            cur.execute("UPDATE x SET n = %s WHERE id = %s", (self.rng.randint(-128, 127), rid))
        else:
            cur.execute("DELETE FROM x WHERE id = %s", (rid,))


def _gh_ost() -> str:
    built = subprocess.run(
        ["bash", str(ROOT / "hack" / "gh-ost.sh")], capture_output=True, text=True, timeout=600, check=False
    )
    assert built.returncode == 0, f"hack/gh-ost.sh failed:\n{built.stderr[-3000:]}"
    return built.stdout.strip().splitlines()[-1]


def _tool_command(tool: str, case: Case, alter: str) -> tuple[list[str], str]:
    """The tool's command line and the name of the table it copies into."""
    server, db = case.server, case.db
    if tool == "gh-ost":
        command = [
            _gh_ost(), f"--host={server.host}", f"--port={server.port}", "--user=root", "--password=",
            f"--database={db}", "--table=x", f"--alter={alter}", "--allow-on-master", "--assume-rbr",
            "--initially-drop-old-table",
            "--chunk-size=20", "--nice-ratio=4", "--default-retries=30", "--cut-over-lock-timeout-seconds=5",
            f"--serve-socket-file={case.work / 'gh-ost.sock'}",
            f"--postpone-cut-over-flag-file={_flag(case)}", "--execute",
        ]  # fmt: skip
        _flag(case).touch()
        return command, "_x_gho"
    executable = shutil.which("pt-online-schema-change")
    assert executable, "install percona-toolkit (hack/bootstrap.sh)"
    command = [
        executable, f"--alter={alter}", f"h={server.host},P={server.port},u=root,D={db},t=x",
        "--chunk-size=20", "--chunk-time=0", "--sleep=0.03", "--recursion-method=none", "--no-version-check",
        "--no-drop-old-table", "--execute",
    ]  # fmt: skip
    return command, "_x_new"


def _flag(case: Case) -> Path:
    return case.work / "cut-over.flag"


def _cut_over(tool: str, process: subprocess.Popen[bytes], case: Case, log: Path, writer: _Writer) -> _Writer:
    """Let the tool swap the tables and finish; returns the writer that goes on.

    gh-ost's atomic cut-over relies on MySQL's metadata-lock priority (gh-ost#82): on MariaDB a
    write queued behind its lock can run on the old table before the RENAME and so be lost from the
    new one (gh-ost#653): the source itself loses it, which no replica can follow. So the writer
    pauses around gh-ost's cut-over: gh-ost waits at its postpone flag (its copy done, the binlog
    still applied), the writer stops, the flag goes, gh-ost swaps, a new writer starts. pt-osc's
    triggers write both tables in the same transaction; its writer goes on throughout."""
    if tool != "gh-ost":
        _finished(process, log)
        return writer
    wait_until(
        lambda: "postponing cut-over" in log.read_text(errors="replace") or process.poll() is not None,
        timeout=240,
        message="gh-ost waiting at its cut-over",
    )
    writer.stop()
    _flag(case).unlink()
    _finished(process, log)
    fresh = _Writer(case.server, seed=writer.rng.randrange(2**32), db=case.db, pause=0.01)
    fresh.start()
    return fresh


def _count(case: Case, table: str) -> int:
    try:
        return int(case.execute(f"SELECT COUNT(*) FROM `{case.db}`.`{table}`")[0][0])
    except Exception:  # not created yet, or renamed away
        return -1


def _columns(case: Case, database: str) -> list[tuple[str, str, str]]:
    rows = case.execute(
        "SELECT COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE FROM information_schema.COLUMNS "
        "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = 'x' ORDER BY ORDINAL_POSITION",
        (database,),
    )
    return [(str(n), str(t), str(nullable)) for n, t, nullable in rows]


def _sink_tables(case: Case, replica: str) -> set[str]:
    return {str(r[0]) for r in case.execute(f"SHOW TABLES FROM `{replica}`")}


def _start_tool(tool: str, case: Case, alter: str, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    command, copy = _tool_command(tool, case, alter)
    with log.open("ab") as out:
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=case.work), copy


def _finished(process: subprocess.Popen[bytes], log: Path) -> None:
    try:
        code = process.wait(timeout=300)
    finally:
        if process.poll() is None:
            process.kill()
    assert code == 0, log.read_text(errors="replace")[-4000:]


@pytest.mark.timeout(600)
@pytest.mark.parametrize("tool", ["gh-ost", "pt-online-schema-change"])
def test_online_schema_change_under_a_writer_with_kills(case: Case, tool: str) -> None:
    db = case.db
    case.execute(f"CREATE TABLE `{db}`.x (id INT PRIMARY KEY, v VARCHAR(20), n TINYINT)")
    case.execute(f"CREATE TABLE `{db}`.y (id INT PRIMARY KEY, v VARCHAR(20))")
    values = ", ".join(f"({i}, 'v{i}', {i % 100})" for i in range(1, ROWS + 1))
    case.execute(f"INSERT INTO `{db}`.x VALUES {values}")
    case.execute(f"INSERT INTO `{db}`.y VALUES (1, 'a'), (2, 'b')")
    name = "osc"
    manifest = case.manifest("osc.yaml", case.pipeline(name, [f"re:{db}\\..*"]))
    replica = case.sink_db(name)
    log = case.work / f"{tool}-1.log"  # one log per run: _cut_over reads the run's own

    run = case.start(manifest)
    writer = _Writer(case.server, seed=20261127, db=db, pause=0.01)
    try:
        case.wait_offset(run, name, case.position(), timeout=240)
        writer.start()
        # First change: a kill in the middle of the tool's copy (some rows copied, not all); the
        # restarted pipeline meets the copy tables beside x, and follows the swap live.
        process, copy = _start_tool(tool, case, ALTER, log)
        wait_until(
            lambda: 0 < _count(case, copy) < ROWS // 2 or process.poll() is not None,
            timeout=120,
            message=f"{tool} copying",
        )
        assert process.poll() is None, f"{tool} finished before the kill:\n{log.read_text()[-3000:]}"
        run.kill()
        assert copy not in _sink_tables(case, replica)
        run = case.start(manifest)
        writer = _cut_over(tool, process, case, log, writer)
        case.wait_offset(run, name, case.position(), timeout=240)
        # Second change: a kill right after the cut-over, mostly before the pipeline passed the
        # swap (it then resumes with x's later definition).
        log = case.work / f"{tool}-2.log"
        process, copy = _start_tool(tool, case, ALTER_AGAIN, log)
        writer = _cut_over(tool, process, case, log, writer)
        run.kill()
        run = case.start(manifest)
        time.sleep(2)
        writer.stop()
        case.execute(f"INSERT INTO `{db}`.x (id, v, n, c) VALUES ({ROWS + 1000}, 'after', 10000000000, 8)")
        case.wait_offset(run, name, case.position(), timeout=240)
    finally:
        run.kill()
        if writer.running:
            writer.stop()
    logs = "\n".join(p.read_text(errors="replace") for p in sorted(case.log_dir.glob("*.err")))
    assert "stopped streaming" not in logs, logs[-6000:]
    assert logs.count(f"{db}.x: schema change at") == 2, logs[-6000:]

    assert _columns(case, replica) == _columns(case, db)
    assert [c[0] for c in _columns(case, db)] == ["id", "v", "n", "c", "d"]
    case.assert_replica(name, "x")
    case.assert_replica(name, "y")
    assert {t for t in _sink_tables(case, replica) if not t.startswith("sparkcdc_")} == {"x", "y"}
