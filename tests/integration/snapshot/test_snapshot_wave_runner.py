"""Where snapshot waves run (spark/wave_runner.py), on real MariaDB and a real local Spark session.

With ``auto`` the driver reads the first wave on its own threads, starts Spark when the splits
left are worth it (here: always, ``SPARKCDC_SPARK_WORTH_SECONDS=0``), and hands the next wave to
Spark once it is up, and takes up a session started before the snapshot once it is warm;
``always`` never starts Spark; ``never`` runs every wave on Spark. Whichever
runs a wave, its summaries hold each split's exact row count at its high watermark.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.api.spec import SnapshotSpec
from sparkcdc.core.splits import SnapshotSplit
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.connection import SourceConfig, connect
from sparkcdc.mysql.schema import TableSchema, load_table_schema
from sparkcdc.sinks.changelog import ChangelogSinkConfig
from sparkcdc.spark.lazy_session import LazySession
from sparkcdc.spark.listener import PipelineListener
from sparkcdc.spark.planning import plan_table
from sparkcdc.spark.snapshot import SplitSummary, WaveContext, plan_tasks
from sparkcdc.spark.wave_runner import IN_DRIVER_ENV, WORTH_SECONDS_ENV, WaveRunner
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


def _wave(runner: WaveRunner, context: WaveContext, wave: list[SnapshotSplit], left: int) -> None:
    _check(runner.run(context, plan_tasks(wave, SERVER_IDS, 1), left), wave)


def _until(condition: Any, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def _setup(
    spark: Any, source_config: SourceConfig, table: TableSchema, tmp_path: Path, *, lazy: bool = True
) -> tuple[WaveRunner, WaveContext, list[SnapshotSplit], Messages]:
    """A runner over the session as ``sparkcdc run`` gives it (started on first use), or with
    ``lazy=False`` as the operator's driver pod does (started before the snapshot)."""
    sink = ChangelogSinkConfig(str(tmp_path / "changelog"))
    opened = sink.open()
    opened.prepare([table])
    opened.close()
    messages = Messages()
    # The shared test session stands behind the LazySession; it is not stopped here.
    runner = WaveRunner(LazySession(lambda: spark) if lazy else spark, sink, len(SERVER_IDS), messages)
    runner.begin()
    context = WaveContext(source_config, sink, {table.table: table}, 64)
    splits = _splits(source_config, table)
    assert len(splits) >= 6
    return runner, context, splits, messages


def test_auto_reads_in_the_driver_until_spark_is_up(
    spark: Any,
    source_config: SourceConfig,
    table: TableSchema,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(IN_DRIVER_ENV, "auto")
    monkeypatch.setenv(WORTH_SECONDS_ENV, "0")
    runner, context, splits, messages = _setup(spark, source_config, table, tmp_path)
    assert not runner.spark_ready()  # auto starts nothing before a wave says it is worth it
    _wave(runner, context, splits[:2], len(splits) - 2)
    assert any("starting Spark" in line for line in messages.lines), messages.lines
    assert _until(runner.spark_ready, 120), "Spark did not come up"
    _wave(runner, context, splits[2:4], len(splits) - 4)
    assert any("Spark is up after 2 splits read in the driver" in line for line in messages.lines)


def test_auto_uses_a_session_started_before_the_snapshot(
    spark: Any,
    source_config: SourceConfig,
    table: TableSchema,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(IN_DRIVER_ENV, "auto")
    monkeypatch.delenv(WORTH_SECONDS_ENV, raising=False)
    runner, context, splits, messages = _setup(spark, source_config, table, tmp_path, lazy=False)
    assert _until(runner.spark_ready, 120), "the started session was not taken up"
    _wave(runner, context, splits, 0)
    assert messages.lines == []  # nothing read in the driver, nothing to start


def test_auto_does_not_start_spark_for_a_short_rest(
    spark: Any,
    source_config: SourceConfig,
    table: TableSchema,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(IN_DRIVER_ENV, "auto")
    monkeypatch.delenv(WORTH_SECONDS_ENV, raising=False)
    runner, context, splits, messages = _setup(spark, source_config, table, tmp_path)
    _wave(runner, context, splits[:2], len(splits) - 2)  # a few splits left: well under 20 s
    _wave(runner, context, splits[2:], 0)
    assert not runner.spark_ready() and messages.lines == []


def test_always_never_starts_spark(
    spark: Any,
    source_config: SourceConfig,
    table: TableSchema,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(IN_DRIVER_ENV, "always")
    monkeypatch.setenv(WORTH_SECONDS_ENV, "0")
    runner, context, splits, messages = _setup(spark, source_config, table, tmp_path)
    _wave(runner, context, splits[:2], len(splits) - 2)
    _wave(runner, context, splits[2:], 0)
    assert not runner.spark_ready() and messages.lines == []


def test_never_runs_every_wave_on_spark(
    spark: Any,
    source_config: SourceConfig,
    table: TableSchema,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(IN_DRIVER_ENV, "never")
    runner, context, splits, _ = _setup(spark, source_config, table, tmp_path)
    assert runner.spark_ready()  # a wave waits for Spark to finish starting rather than run here
    _wave(runner, context, splits, 0)


def test_an_unknown_mode_names_the_variable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(IN_DRIVER_ENV, "sometimes")
    with pytest.raises(ValueError, match=f"{IN_DRIVER_ENV}='sometimes': use one of auto, never, always"):
        WaveRunner(None, ChangelogSinkConfig(str(tmp_path)), 2, Messages())
