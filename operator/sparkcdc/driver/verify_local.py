"""``sparkcdc verify``: verify the replicas of manifest pipelines from this machine.

Chunk checksums run on threads of this process (verify/tasks.py), so verifying a JDBC replica
starts no JVM; Spark runs locally only where it must (a Delta sink, a repair). A pipeline's
progress (how far it has applied the binlog, its server ids) comes from its checkpoint in
``--state-dir``, the directory ``sparkcdc run`` writes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TaskID, TextColumn, TimeRemainingColumn

from sparkcdc.api.manifest import Manifest
from sparkcdc.core.checkpoint import Checkpoint
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.tables import TableId
from sparkcdc.driver.local import (
    local_driver_conf,
    manifest_credentials,
    runtimes_of,
    sink_spark_conf,
    with_jvm_log,
)
from sparkcdc.driver.progress import LiveDisplay, stderr_console
from sparkcdc.exit_codes import EXIT_DIFFERS, EXIT_OK, EXIT_USER_ERROR
from sparkcdc.options import EngineOptions
from sparkcdc.spark.lazy_session import LazySession
from sparkcdc.spark.session import create_session, local_master
from sparkcdc.state.file_store import FileCheckpointStore
from sparkcdc.verify.recheck import AppliedOffset
from sparkcdc.verify.report import PipelineReport, render, write_report
from sparkcdc.verify.runner import VerifyListener, VerifyOptions, verify_pipeline
from sparkcdc.verify.tasks import ChunkCheck

__all__ = ["applied_offset", "verify_local"]


def applied_offset(checkpoint: Checkpoint | None) -> BinlogOffset | None:
    """How far the sink holds the source: the committed binlog offset while streaming, the
    snapshot's end for a pipeline that has only snapshotted; None without a checkpoint."""
    if checkpoint is None:
        return None
    if checkpoint.binlog_offset is not None:
        return checkpoint.binlog_offset
    return checkpoint.snapshot_end_offset if checkpoint.snapshot_done else None


def _store_reader(store: FileCheckpointStore) -> AppliedOffset:
    def applied() -> BinlogOffset | None:
        return applied_offset(store.load())

    return applied


class VerifyProgress(LiveDisplay):
    """One bar per table: chunks checked of planned, rows, differing chunks so far."""

    def __init__(self, console: Console) -> None:
        super().__init__(
            console,
            TextColumn("[bold]{task.description:<28}"),
            BarColumn(bar_width=20),
            MofNCompleteColumn(),
            TextColumn("chunks {task.fields[rows]:>12,} rows  {task.fields[differing]} differing"),
            TimeRemainingColumn(),
        )

    def listener(self, pipeline: str) -> VerifyListener:
        return _ProgressListener(self, pipeline)


class _ProgressListener(VerifyListener):
    def __init__(self, display: VerifyProgress, pipeline: str) -> None:
        self._display = display
        self._pipeline = pipeline
        self._tasks: dict[TableId, TaskID] = {}
        self._rows: dict[TableId, int] = {}
        self._differing: dict[TableId, int] = {}

    def message(self, text: str) -> None:
        self._display.log(self._pipeline, text)

    def planned(self, chunks: Mapping[TableId, int]) -> None:
        with self._display.lock:
            for table, total in chunks.items():
                self._rows[table] = self._differing[table] = 0
                self._tasks[table] = self._display.progress.add_task(
                    f"{self._pipeline} {table}", total=total, rows=0, differing=0
                )

    def checked(self, checks: Sequence[ChunkCheck]) -> None:
        with self._display.lock:
            for check in checks:
                table = check.split.table
                task = self._tasks.get(table)
                if task is None:
                    continue
                self._rows[table] += check.source.rows
                self._differing[table] += not check.matches
                self._display.progress.update(
                    task, advance=1, rows=self._rows[table], differing=self._differing[table]
                )


def verify_local(
    manifest: Manifest,
    state_dir: Path,
    options: VerifyOptions,
    *,
    report_path: Path | None = None,
    console: Console | None = None,
    spark: object | None = None,
) -> tuple[int, list[PipelineReport]]:
    """Verify every pipeline of ``manifest``; the exit code is 0 only when every chunk matches."""
    console = console or stderr_console()
    engine = with_jvm_log(EngineOptions.from_environment(), state_dir)
    runtimes = runtimes_of(manifest, engine)
    if not runtimes:
        console.print("sparkcdc: no CdcPipeline in the given files")
        return EXIT_USER_ERROR, []
    own_session = spark is None
    if spark is None:
        parallelism = max(r.pipeline.spec.snapshot.parallelism for r in runtimes)
        conf = {**local_driver_conf(runtimes), **sink_spark_conf(runtimes, parallelism, engine)}
        master = local_master(parallelism)
        credentials = manifest_credentials(manifest)
        # Started only if something needs it (a Delta sink, a repair): JDBC chunk checksums are
        # queries the databases answer, which threads of this process wait for as well as Spark.
        spark = LazySession(lambda: create_session("sparkcdc-verify", master, engine, conf, credentials))
    reports: list[PipelineReport] = []
    try:
        with VerifyProgress(console) as display:
            for runtime in runtimes:
                store = FileCheckpointStore(state_dir, runtime.name)
                reports.append(
                    verify_pipeline(
                        runtime,
                        spark,
                        options,
                        applied=_store_reader(store),
                        checkpoint=store.load(),
                        listener=display.listener(runtime.name),
                    )
                )
    finally:
        if own_session:
            stop = getattr(spark, "stop", None)
            if callable(stop):
                stop()
    render(reports, console)
    if report_path is not None:
        write_report(report_path, reports)
        console.print(f"report written to {report_path}")
    return (EXIT_OK if all(r.ok for r in reports) else EXIT_DIFFERS), reports
