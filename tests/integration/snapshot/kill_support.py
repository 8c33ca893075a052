"""Kill moments and checks shared by the kill and crash tests.

A ``Moment`` is a trigger polled while a ``sparkcdc run`` subprocess goes; when it fires the
whole run is SIGKILLed (tests/harness/runner.py). ``kill_chain`` kills one run per moment on
the same --state-dir and then runs to the end. After every kill the checkpoint must not claim
more than the sink holds (architecture §3 rule 6): every split it lists as finished is in the sink
exactly.
"""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from snapshot_support import Row, Scenario, assert_same_rows

from harness.runner import SparkcdcProcess, checkpoint_path
from sparkcdc.core.checkpoint import Checkpoint
from sparkcdc.core.splits import SnapshotSplit
from sparkcdc.sinks.jdbc.sql import range_predicate

# table name -> its split-key columns
Keys = Mapping[str, Sequence[str]]


def _quote(name: str) -> str:
    return f"`{name}`"


def finished_splits(checkpoint: Checkpoint | None) -> list[SnapshotSplit]:
    if checkpoint is None:
        return []
    return [info.split for infos in checkpoint.finished.values() for info in infos]


def range_rows(scenario: Scenario, database: str, split: SnapshotSplit, keys: Keys) -> list[Row]:
    """The rows of ``split``'s key range, selected by the server (its collation decides)."""
    where, params = range_predicate(keys[split.table.table], split.start, split.end, _quote)
    return scenario.execute(f"SELECT * FROM `{database}`.`{split.table.table}` WHERE {where}", params)


def column_names(scenario: Scenario, table: str) -> list[str]:
    rows = scenario.execute(
        "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s"
        " ORDER BY ORDINAL_POSITION",
        (scenario.db, table),
    )
    return [str(r[0]) for r in rows]


def changelog_split_rows(scenario: Scenario, split: SnapshotSplit) -> list[Row] | None:
    """The rows of a split's changelog file, in table column order; None without a file."""
    path = scenario.changelog_dir / str(split.table) / f"snapshot-{split.index:06d}.jsonl"
    if not path.is_file():
        return None
    names = column_names(scenario, split.table.table)
    lines = path.read_text(encoding="utf-8").splitlines()
    return [tuple(json.loads(line)["data"][n] for n in names) for line in lines if line]


def assert_checkpoint_within_sink(scenario: Scenario, sink: str, pipeline: str, keys: Keys, when: str) -> int:
    """Every split the checkpoint calls finished is in the sink exactly (the source is not
    written meanwhile); returns how many splits that is."""
    splits = finished_splits(scenario.checkpoint(pipeline))
    for split in splits:
        source = range_rows(scenario, scenario.db, split, keys)
        what = f"{when}: finished split {split.split_id} [{split.start}, {split.end})"
        if sink == "jdbc":
            assert_same_rows(source, range_rows(scenario, scenario.sink_db, split, keys), what)
        else:
            rows = changelog_split_rows(scenario, split)
            assert rows is not None, f"{what}: no changelog file"
            assert_same_rows(source, rows, what)
    return len(splits)


# -- moments ------------------------------------------------------------------------------------


@dataclass
class Probe:
    """What a moment's trigger may look at while a run is going."""

    scenario: Scenario
    pipeline: str
    sink: str
    tables: Sequence[str]
    run: SparkcdcProcess
    wall_start: float
    baseline_finished: int = -1
    baseline_sink: int = 0
    plan_seen_at: float | None = None
    notes: dict[str, Any] = field(default_factory=dict)

    def checkpoint_written(self) -> bool:
        """The run has written the checkpoint itself (it does right after planning)."""
        path = checkpoint_path(self.scenario.state_dir, self.pipeline)
        try:
            written = path.stat().st_mtime >= self.wall_start
        except FileNotFoundError:
            return False
        if written and self.plan_seen_at is None:
            self.plan_seen_at = time.monotonic()
        return written

    def finished(self) -> int:
        return len(finished_splits(self.scenario.checkpoint(self.pipeline)))

    def sink_size(self) -> int:
        """Replica rows (JDBC) or split files (changelog) committed so far."""
        if self.sink == "jdbc":
            return sum(self.scenario.sink_count(t) for t in self.tables)
        return sum(len(self.scenario.changelog_files(t)) for t in self.tables)


Trigger = Callable[[Probe], bool]
_UNDO_ENTRIES = re.compile(r"undo log entries [1-9]")


@dataclass(frozen=True)
class Moment:
    name: str
    trigger: Trigger


def after_start(seconds: float) -> Trigger:
    def trigger(probe: Probe) -> bool:
        return time.monotonic() - probe.run.started >= seconds

    return trigger


def after_plan(seconds: float = 0.0) -> Trigger:
    """``seconds`` after the run first wrote the checkpoint (right after planning)."""

    def trigger(probe: Probe) -> bool:
        if not probe.checkpoint_written():
            return False
        assert probe.plan_seen_at is not None
        return time.monotonic() - probe.plan_seen_at >= seconds

    return trigger


def mid_sink_transaction(probe: Probe) -> bool:
    """JDBC: a split transaction is open with rows modified. Changelog: a split file is being
    written (its temporary file exists)."""
    if probe.sink == "jdbc":
        # A transaction of the cdc user with undo log entries has modified rows and not
        # committed: only sink writes do that (the source is only read). The InnoDB status is
        # live; information_schema.INNODB_TRX lags up to 0.1 s behind.
        status = str(probe.scenario.execute("SHOW ENGINE INNODB STATUS")[0][2])
        user = f" {probe.scenario.server.cdc_user} "
        return any(
            _UNDO_ENTRIES.search(block) is not None and user in block
            for block in status.split("---TRANSACTION")
        )
    directories = [probe.scenario.changelog_dir / f"{probe.scenario.db}.{t}" for t in probe.tables]
    return any(next(d.glob(".*.tmp"), None) is not None for d in directories if d.is_dir())


def committed_not_checkpointed(probe: Probe) -> bool:
    """The sink grew since the checkpoint last changed, and the checkpoint has not changed."""
    if not probe.checkpoint_written():
        return False
    finished = probe.finished()
    if finished != probe.baseline_finished:
        probe.baseline_finished = finished
        probe.baseline_sink = probe.sink_size()
        return False
    if probe.sink_size() > probe.baseline_sink and probe.finished() == finished:
        probe.notes["finished_at_trigger"] = finished
        return True
    return False


def at_progress(min_finished: int, trigger: Trigger) -> Trigger:
    """``trigger``, once the probed pipeline's checkpoint lists at least ``min_finished`` splits."""

    def gated(probe: Probe) -> bool:
        return probe.checkpoint_written() and probe.finished() >= min_finished and trigger(probe)

    return gated


def random_moments(seed: int, count: int, longest: float = 2.5) -> list[Moment]:
    rng = random.Random(seed)
    delays = [rng.uniform(0.0, longest) for _ in range(count)]
    return [
        Moment(f"random #{seed}.{i}: {d:.2f}s after planning", after_plan(d)) for i, d in enumerate(delays)
    ]


@dataclass(frozen=True)
class Target:
    """A pipeline of the manifest, and its sink kind (``jdbc`` or ``changelog``)."""

    pipeline: str
    sink: str


# A kill aimed between a sink commit and the checkpoint after it lands there only if the process
# is frozen before it writes that checkpoint; on a loaded machine the writer sometimes wins the
# race. Such a run is checked like any other, and the moment is tried again in a new run.
_AIMED_ATTEMPTS = 4


def kill_at(scenario: Scenario, manifest: Path, targets: Sequence[Target], keys: Keys, moment: Moment) -> str:
    """Start a run, SIGKILL it when ``moment`` comes for the first target, check every target's
    checkpoint against its sink; returns a report line."""
    missed = 0
    while True:
        line, landed = _kill_once(scenario, manifest, targets, keys, moment)
        if landed:
            return line + (f" (after {missed} kills that came after the checkpoint)" if missed else "")
        missed += 1
        assert missed < _AIMED_ATTEMPTS, f"{moment.name}: the checkpoint moved before each of {missed} kills"


def _kill_once(
    scenario: Scenario, manifest: Path, targets: Sequence[Target], keys: Keys, moment: Moment
) -> tuple[str, bool]:
    """One run killed at ``moment``, checked; its report line, and whether an aimed kill landed."""
    wall_start = time.time() - 0.01
    first = targets[0]
    with scenario.start(manifest) as run:
        probe = Probe(scenario, first.pipeline, first.sink, list(keys), run, wall_start)
        if not run.wait_for(lambda: moment.trigger(probe), timeout=120, interval=0.002):
            result = run.wait(60)
            raise AssertionError(f"moment {moment.name!r} never came:\n{result.describe()}")
        run.kill()
    seconds = time.monotonic() - run.started
    landed = True
    if "finished_at_trigger" in probe.notes:
        # The kill was to land between a sink commit and the checkpoint write after it.
        landed = probe.finished() == probe.notes["finished_at_trigger"]
        assert not landed or probe.sink_size() > probe.baseline_sink
    counts = []
    for target in targets:
        when = f"after kill at {moment.name}"
        checked = assert_checkpoint_within_sink(scenario, target.sink, target.pipeline, keys, when)
        counts.append(f"{target.pipeline} {checked}")
    line = f"{moment.name} [{first.pipeline}]: killed after {seconds:.1f}s; splits checkpointed: "
    return line + ", ".join(counts), landed


def kill_chain(
    scenario: Scenario,
    manifest: Path,
    keys: Keys,
    moments: Sequence[tuple[Moment, Target]],
    all_targets: Sequence[Target],
) -> list[str]:
    """Kill one run at each moment (of its target pipeline) in turn, then run to the end (exit 0);
    a report line per run."""
    report = []
    for moment, target in moments:
        rest = [t for t in all_targets if t != target]
        report.append(kill_at(scenario, manifest, [target, *rest], keys, moment))
    result = scenario.run_ok(manifest)
    for target in all_targets:
        final = scenario.checkpoint(target.pipeline)
        assert final is not None and final.snapshot_done, result.describe()
    report.append(f"final run: {result.seconds:.1f}s")
    return report
