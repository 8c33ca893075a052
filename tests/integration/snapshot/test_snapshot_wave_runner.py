"""Where snapshot waves run (engine/wave_runner.py), on real MariaDB and a real local Spark session.

With ``auto`` the driver reads the first wave on its own threads, starts Spark when the splits
left are worth it (here: always, ``SPARKCDC_SPARK_WORTH_SECONDS=0``), and hands the next wave to
Spark once it is up, and takes up a session started before the snapshot once it is warm;
``always`` never starts Spark; ``never`` runs every wave on Spark; a Delta sink's waves stay in
the driver under a local master, and all go to Spark for an object store. Whichever
runs a wave, its summaries hold each split's exact row count at its high watermark.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness.waiting import wait_until
from sparkcdc.api.spec import SnapshotSpec
from sparkcdc.core.splits import SnapshotSplit
from sparkcdc.core.tables import TableId
from sparkcdc.core.waves import SPARK_WORTH_SECONDS
from sparkcdc.engine import wave_runner
from sparkcdc.engine.listener import PipelineListener
from sparkcdc.engine.planning import plan_table
from sparkcdc.engine.wave_runner import WaveRunner
from sparkcdc.mysql.connection import SourceConfig, connect
from sparkcdc.mysql.schema import TableSchema, load_table_schema
from sparkcdc.options import SNAPSHOT_IN_DRIVER_ENV, EngineOptions, InDriver, OptionsError
from sparkcdc.sinks.changelog import ChangelogSinkConfig
from sparkcdc.sinks.delta import DeltaSinkConfig
from sparkcdc.spark.lazy_session import LazySession
from sparkcdc.spark.snapshot import SnapshotTask, SplitSummary, WaveContext, plan_tasks
from sparkcdc.testing.mariadb import MariaDBServer

pytestmark = pytest.mark.integration

SERVER_IDS = [5410, 5411]


class Messages(PipelineListener):
    def __init__(self) -> None:
        self.lines: list[str] = []

    def message(self, text: str) -> None:
        self.lines.append(text)


@pytest.fixture
def table(mariadb: MariaDBServer, fresh_db: str, source_config: SourceConfig) -> Iterator[TableSchema]:
    mariadb.execute(f"CREATE TABLE `{fresh_db}`.t (id INT PRIMARY KEY, v VARCHAR(20))")
    mariadb.execute(
        f"INSERT INTO `{fresh_db}`.t SELECT seq, CONCAT('v', seq) FROM `{fresh_db}`.seq_1_to_1000"
    )
    control = connect(source_config)
    try:
        yield load_table_schema(control, TableId(fresh_db, "t"))
    finally:
        control.close()


def _splits(source_config: SourceConfig, table: TableSchema) -> list[SnapshotSplit]:
    control = connect(source_config)
    try:
        return plan_table(control, table, SnapshotSpec(chunk_size=100))
    finally:
        control.close()


def _expected_rows(split: SnapshotSplit) -> int:
    low = 1 if split.start is None else int(split.start[0])
    high = 1001 if split.end is None else int(split.end[0])
    return len(range(max(low, 1), min(high, 1001)))


def _check(summaries: list[SplitSummary], wave: list[SnapshotSplit]) -> None:
    assert sorted(s.split.index for s in summaries) == sorted(s.index for s in wave)
    for summary in summaries:
        assert summary.rows == _expected_rows(summary.split), summary


@dataclass
class Waves:
    runner: WaveRunner
    context: WaveContext
    splits: list[SnapshotSplit]
    messages: Messages

    def run(self, first: int, last: int) -> None:
        """Run splits ``[first, last)`` as one wave and check their summaries."""
        wave = self.splits[first:last]
        _check(self.runner.run(self.context, plan_tasks(wave, SERVER_IDS, 1), len(self.splits) - last), wave)


MakeWaves = Callable[..., Waves]


@pytest.fixture
def make_waves(
    spark: Any,
    source_config: SourceConfig,
    table: TableSchema,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> MakeWaves:
    """``make_waves(mode, worth_seconds=None, lazy=True, threads=0)``: a runner under that mode, over the
    session as ``sparkcdc run`` gives it (started on first use), or with ``lazy=False`` as the
    operator's driver pod does (started before the snapshot)."""

    def make(
        mode: InDriver, worth_seconds: float | None = None, *, lazy: bool = True, threads: int = 0
    ) -> Waves:
        sink = ChangelogSinkConfig(str(tmp_path / "changelog"))
        opened = sink.open()
        opened.prepare([table])
        opened.close()
        messages = Messages()
        # The shared test session stands behind the LazySession; it is not stopped here.
        session = LazySession(lambda: spark) if lazy else spark
        worth = SPARK_WORTH_SECONDS if worth_seconds is None else worth_seconds
        runner = WaveRunner(
            session, sink, len(SERVER_IDS), messages, threads=threads, mode=mode, worth_seconds=worth
        )
        runner.begin()
        splits = _splits(source_config, table)
        assert len(splits) >= 6
        return Waves(runner, WaveContext(source_config, sink, {table.table: table}, 64), splits, messages)

    return make


def test_auto_reads_in_the_driver_until_spark_is_up(make_waves: MakeWaves) -> None:
    waves = make_waves("auto", 0)
    assert not waves.runner.spark_ready()  # auto starts nothing before a wave says it is worth it
    waves.run(0, 2)
    assert any("starting Spark" in line for line in waves.messages.lines), waves.messages.lines
    wait_until(waves.runner.spark_ready, timeout=120, interval=0.05, message="Spark to come up")
    waves.run(2, 4)
    assert any("Spark is up after 2 splits read in the driver" in line for line in waves.messages.lines)


def test_auto_uses_a_session_started_before_the_snapshot(make_waves: MakeWaves) -> None:
    waves = make_waves("auto", lazy=False)
    wait_until(waves.runner.spark_ready, timeout=120, interval=0.05, message="the started session taken up")
    waves.run(0, len(waves.splits))
    assert waves.messages.lines == []  # nothing read in the driver, nothing to start


def test_auto_does_not_start_spark_for_a_short_rest(make_waves: MakeWaves) -> None:
    waves = make_waves("auto")
    waves.run(0, 2)  # a few splits left: well under 20 s
    waves.run(2, len(waves.splits))
    assert not waves.runner.spark_ready() and waves.messages.lines == []


def test_always_never_starts_spark(make_waves: MakeWaves) -> None:
    waves = make_waves("always", 0, threads=1)  # the wave's two tasks one after the other
    waves.run(0, 2)
    waves.run(2, len(waves.splits))
    assert not waves.runner.spark_ready() and waves.messages.lines == []


def test_never_runs_every_wave_on_spark(make_waves: MakeWaves) -> None:
    waves = make_waves("never")
    assert waves.runner.spark_ready()  # a wave waits for Spark to finish starting rather than run here
    waves.run(0, len(waves.splits))


def test_auto_keeps_delta_waves_in_the_driver_under_a_local_master(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Delta sink's session is up from the start, yet its waves stay in the driver (appended by
    delta-rs) even when the splits left would be worth Spark for another sink."""
    messages = Messages()
    lake = DeltaSinkConfig(str(tmp_path / "lake"))
    runner = WaveRunner(spark, lake, 2, messages, mode="auto", worth_seconds=0)
    runner.begin()
    read: list[int] = []

    def in_threads(context: WaveContext, tasks: list[SnapshotTask], threads: int) -> list[Any]:
        read.append(len(tasks))
        return [object(), object()]  # two splits done (only their number counts)

    monkeypatch.setattr(wave_runner, "run_wave_in_threads", in_threads)
    context = WaveContext(SourceConfig("127.0.0.1", 1, "u", "p"), lake, {}, 64)
    for _ in range(3):
        assert not runner.spark_ready()
        runner.run(context, [SnapshotTask(1, ()), SnapshotTask(2, ())], remaining_splits=1000)
    assert read == [2, 2, 2] and messages.lines == []
    object_store = WaveRunner(spark, DeltaSinkConfig("s3a://lake/x"), 2, messages, mode="auto")
    assert object_store.spark_ready()  # only Spark writes an object store: every wave is a Spark job


def test_an_unknown_mode_names_the_variable() -> None:
    with pytest.raises(
        OptionsError, match=f"{SNAPSHOT_IN_DRIVER_ENV}='sometimes': use one of auto, never, always"
    ):
        EngineOptions.from_environment({SNAPSHOT_IN_DRIVER_ENV: "sometimes"})
