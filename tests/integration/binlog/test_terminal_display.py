"""What a person sees: ``sparkcdc run`` in a pseudo-terminal, its output rendered by a terminal
emulator (pyte) the way a screen shows it.

The snapshot runs on Spark (its JVM started for the waves), two tables, then the stream. On the
screen: each table's "snapshot done" line once, no progress bar left over or repeated, no line of
the JVM (its log and Java's warnings are in ``<state dir>/spark-jvm.log``), no source location at
the end of log lines.
"""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pyte
from binlog_support import Case

from harness.runner import subprocess_env

COLUMNS, LINES = 160, 60
JVM_NOISE = (
    "WARN",
    "log4j",
    "SLF4J",
    "NativeCodeLoader",
    "WARNING:",
    "Using Spark's default",
    "Exception in",
)
BAR = "━"


def run_in_terminal(case: Case, manifest: Path, timeout: float = 300.0) -> tuple[int, bytes]:
    """``sparkcdc run --exit-when-caught-up`` with a pseudo-terminal as stdin, stdout and stderr."""
    env = subprocess_env({
        "SPARKCDC_SNAPSHOT_IN_DRIVER": "never",  # every wave on Spark: the JVM must start
        "COLUMNS": str(COLUMNS), "LINES": str(LINES), "TERM": "xterm-256color",
    })  # fmt: skip
    env.pop("SPARKCDC_JVM_LOG", None)
    controller, terminal = pty.openpty()
    command = [sys.executable, "-m", "sparkcdc", "run", str(manifest), "--state-dir", str(case.state_dir)]
    process = subprocess.Popen(
        [*command, "--exit-when-caught-up"], stdin=terminal, stdout=terminal, stderr=terminal, env=env
    )
    os.close(terminal)
    output = bytearray()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([controller], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(controller, 65536)
                except OSError:  # the terminal closed: the process is done
                    break
                if not chunk:
                    break
                output += chunk
            elif process.poll() is not None:
                break
        else:
            process.kill()
            raise AssertionError(
                f"sparkcdc run did not finish in {timeout:.0f}s:\n{output.decode(errors='replace')}"
            )
        return process.wait(timeout=30), bytes(output)
    finally:
        os.close(controller)


def screen_of(output: bytes) -> list[str]:
    """Every line the terminal showed, scrolled off or still on the screen, as rendered."""
    screen = pyte.HistoryScreen(COLUMNS, LINES, history=10_000)
    pyte.ByteStream(screen).feed(output)
    scrolled = ["".join(char.data for char in line.values()).rstrip() for line in screen.history.top]
    return scrolled + [line.rstrip() for line in screen.display]


def test_a_person_sees_tables_and_sparkcdc_lines_not_the_jvm(case: Case) -> None:
    for table in ("orders", "customers"):
        case.execute(f"CREATE TABLE `{case.db}`.{table} (id INT PRIMARY KEY, v VARCHAR(30))")
        case.execute(
            f"INSERT INTO `{case.db}`.{table} SELECT seq, CONCAT('v', seq) FROM `{case.db}`.seq_1_to_3000"
        )
    manifest = case.manifest("terminal.yaml", case.pipeline("term", ["orders", "customers"]))

    code, output = run_in_terminal(case, manifest)
    lines = [line for line in screen_of(output) if line.strip()]
    shown = "\n".join(lines)

    assert code == 0, shown
    for table in ("orders", "customers"):
        done = [line for line in lines if f"snapshot of {case.db}.{table} done" in line]
        assert len(done) == 1, f"{table}'s snapshot line {len(done)} times:\n{shown}"
    assert not [line for line in lines if BAR in line], f"progress bars left on the screen:\n{shown}"
    noise = [line for line in lines if any(word in line for word in JVM_NOISE)]
    assert not noise, "JVM output on the terminal:\n" + "\n".join(noise)
    assert not [line for line in lines if ".py:" in line], f"source locations on log lines:\n{shown}"
    assert "streaming the binlog" in shown or "caught up" in shown, shown

    jvm_log = case.state_dir / "spark-jvm.log"
    assert jvm_log.is_file() and jvm_log.stat().st_size > 0, "the JVM wrote nothing to its log file"
