"""Verifying one pipeline: plan chunks, checksum them on Spark, re-check, report, repair.

``verify_pipeline`` is the whole verification of one pipeline on a given Spark session; the
local CLI (``verify.local``) calls it, and the driver pod can call it for ``spec.verify`` with
an ``applied`` callback reading its own checkpoint.

1. The captured tables (``--tables`` narrows them) are split by the snapshot's chunk planner
   (``spark.planning.plan_table``) on the source as it is now.
2. Waves of chunks are checksummed on source and sink by Spark tasks (``tasks.run_checks``).
3. Chunks whose checksums differ are re-checked in the driver (``recheck.recheck_chunk``): only
   differences that persist once the pipeline has applied the binlog past the source read are
   reported.
4. With ``repair``, the confirmed differing chunks are re-snapshotted through the normal split
   path (``spark.snapshot.run_wave``: low watermark, chunk read, high watermark, backfill merge,
   atomic ``DELETE range + INSERT`` in the sink) and verified again, up to ``repair_attempts``
   times. The pipeline keeps streaming meanwhile: a repaired range holds the source's content as
   of its high watermark, and the pipeline's later events converge it as usual; should the
   pipeline commit a change of that range between the repair's read and its write, the
   re-verification sees it and the range is repaired again.
"""

from __future__ import annotations

import datetime as dt
import queue
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from sparkcdc.core.checkpoint import Checkpoint
from sparkcdc.core.events import ChangeEvent
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.splits import SnapshotSplit
from sparkcdc.core.tables import TableId, select_tables
from sparkcdc.engine.discovery import default_server_ids, discover_tables, server_id_range
from sparkcdc.engine.planning import plan_table
from sparkcdc.engine.runtime import PipelineRuntime
from sparkcdc.engine.streaming import live_reader_server_id
from sparkcdc.mysql.binlog.reader import read_changes
from sparkcdc.mysql.connection import SourceError, connect
from sparkcdc.mysql.flavor import detect_flavor
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks.targets import comparable
from sparkcdc.spark.snapshot import WaveContext, plan_tasks, run_wave
from sparkcdc.state.base import StateError
from sparkcdc.verify.checksum import open_sink_checker
from sparkcdc.verify.recheck import AppliedOffset, Outcome, RecheckSettings, recheck_chunk
from sparkcdc.verify.report import ChunkDiff, PipelineReport, TableReport
from sparkcdc.verify.tasks import ChunkCheck, VerifyContext, run_checks

__all__ = ["VerifyListener", "VerifyOptions", "repair_server_ids", "verify_pipeline"]


@dataclass(frozen=True)
class VerifyOptions:
    tables: tuple[str, ...] = ()  # "db.table" or regexes, among the captured tables
    repair: bool = False
    chunk_size: int | None = None  # default: spec.snapshot.chunkSize
    chunks_per_task: int = 8  # chunks one task checksums per wave
    repair_attempts: int = 3
    recheck: RecheckSettings = field(default_factory=RecheckSettings)


class VerifyListener:
    """Progress callbacks; does nothing (the terminal display overrides them)."""

    def message(self, text: str) -> None:
        return None

    def planned(self, chunks: Mapping[TableId, int]) -> None:
        return None

    def checked(self, checks: Sequence[ChunkCheck]) -> None:
        return None


def _chosen(schemas: Mapping[TableId, TableSchema], wanted: Sequence[str]) -> dict[TableId, TableSchema]:
    if not wanted:
        return dict(schemas)
    chosen = set(select_tables(wanted, schemas))
    missing = [w for w in wanted if not select_tables([w], schemas)]
    if missing:
        captured = ", ".join(str(t) for t in sorted(schemas)) or "none"
        raise SourceError(
            f"--tables {missing[0]!r} names no table this pipeline captures; its tables are {captured}"
        )
    return {t: s for t, s in schemas.items() if t in chosen}


def repair_server_ids(runtime: PipelineRuntime, checkpoint: Checkpoint | None) -> list[int]:
    """Server ids for re-check and repair reads: the pipeline's range without the live binlog
    reader's id, from the top down. A running pipeline streams under that id, and the source
    drops a replica connection when another registers with the same id, so sharing it would
    stop the pipeline. Snapshot tasks take ids from the bottom up; the default range has one
    more id than the snapshot's parallelism, so only a verification during a wide snapshot
    shares ids with snapshot tasks, whose reads are retried."""
    low, high = server_id_range(runtime, checkpoint)
    reader = live_reader_server_id((low, high))
    parallelism = runtime.pipeline.spec.snapshot.parallelism
    ids = [i for i in range(high, low - 1, -1) if i != reader][:parallelism]
    if ids:
        return ids
    meta = runtime.pipeline.metadata
    low, high = default_server_ids(meta.namespace or "default", f"{meta.name}/verify", parallelism)
    return list(range(low, high + 1))


class _Verifier:
    def __init__(
        self,
        runtime: PipelineRuntime,
        spark: object,
        options: VerifyOptions,
        applied: AppliedOffset,
        listener: VerifyListener,
        checkpoint: Checkpoint | None,
    ) -> None:
        self.runtime = runtime
        self.checkpoint = checkpoint
        self.spark = spark
        self.options = options
        self.applied = applied
        self.listener = listener
        self.parallelism = runtime.pipeline.spec.snapshot.parallelism
        self.schemas: dict[TableId, TableSchema] = {}

    def context(self) -> VerifyContext:
        return VerifyContext(self.runtime.source, self.runtime.sink, self.compared)

    @property
    def compared(self) -> dict[TableId, TableSchema]:
        """The schemas narrowed to what the sink holds unchanged (sinks.targets.comparable); the
        full ones read the source for a repair and decode the binlog for a re-check."""
        return {t: comparable(s) for t, s in self.schemas.items()}

    def plan(self) -> list[SnapshotSplit]:
        spec = self.runtime.pipeline.spec.snapshot
        if self.options.chunk_size:
            spec = spec.model_copy(update={"chunk_size": self.options.chunk_size})
        conn = connect(self.runtime.source)
        try:
            self.schemas = _chosen(discover_tables(self.runtime, conn), self.options.tables)
            plans = {t: plan_table(conn, s, spec) for t, s in sorted(self.schemas.items())}
        finally:
            conn.close()
        self.listener.planned({t: len(p) for t, p in plans.items()})
        return [split for plan in plans.values() for split in plan]

    def check(self, splits: Sequence[SnapshotSplit], *, progress: bool) -> list[ChunkCheck]:
        """The first pass over ``splits``, in waves of Spark jobs (progress after each)."""
        per_wave = max(1, self.parallelism * self.options.chunks_per_task)
        checks: list[ChunkCheck] = []
        for offset in range(0, len(splits), per_wave):
            wave = run_checks(
                self.spark, self.context(), splits[offset : offset + per_wave], self.parallelism
            )
            checks.extend(wave)
            if progress:
                self.listener.checked(wave)
        return checks

    def recheck(self, checks: Sequence[ChunkCheck]) -> list[Outcome]:
        """Re-check differing chunks in parallel threads, all within one wait budget; each thread
        reads the binlog with a server id of its own."""
        if not checks:
            return []
        self.listener.message(f"re-checking {len(checks)} differing chunk(s) row by row")
        deadline = time.monotonic() + self.options.recheck.wait_seconds
        ids: queue.Queue[int] = queue.Queue()
        for server_id in repair_server_ids(self.runtime, self.checkpoint):
            ids.put(server_id)
        source = self.runtime.source

        def one(check: ChunkCheck) -> Outcome:
            server_id = ids.get()
            conn = connect(source)
            sink = open_sink_checker(self.runtime.sink)

            def changes(schema: TableSchema, start: BinlogOffset, stop: BinlogOffset) -> list[ChangeEvent]:
                full = self.schemas[schema.table]
                return list(read_changes(source, server_id, start, stop, {schema.table: full}))

            try:
                return recheck_chunk(
                    conn,
                    detect_flavor(conn),
                    sink,
                    comparable(self.schemas[check.split.table]),
                    check.split,
                    applied=self.applied,
                    changes=changes,
                    settings=self.options.recheck,
                    deadline=deadline,
                )
            finally:
                sink.close()
                conn.close()
                ids.put(server_id)

        workers = max(1, min(self.parallelism, ids.qsize(), len(checks)))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="sparkcdc-recheck") as pool:
            return list(pool.map(one, checks))

    def verify(self, splits: Sequence[SnapshotSplit], *, progress: bool = True) -> list[ChunkResult]:
        """First pass and re-checks: every chunk's final checksums and re-check outcome."""
        checks = self.check(splits, progress=progress)
        differing = [c for c in checks if not c.matches]
        outcomes = dict(zip((c.split for c in differing), self.recheck(differing), strict=True))
        results = []
        for check in checks:
            outcome = outcomes.get(check.split)
            if outcome is not None:
                check = ChunkCheck(check.split, outcome.source, outcome.sink, outcome.position)
            results.append(ChunkResult(check, outcome))
        return results

    def repair(self, diffs: Sequence[ChunkDiff]) -> None:
        splits = [d.split for d in diffs]
        spec = self.runtime.pipeline.spec.snapshot
        context = WaveContext(self.runtime.source, self.runtime.sink, self.schemas, spec.fetch_size)
        ids = repair_server_ids(self.runtime, self.checkpoint)
        self.listener.message(f"repairing {len(splits)} chunk(s) through the snapshot split path")
        run_wave(self.spark, context, plan_tasks(splits, ids, spec.splits_per_task))


@dataclass(frozen=True)
class ChunkResult:
    """A chunk's final checksums, and its re-check outcome when the first pass differed."""

    check: ChunkCheck
    outcome: Outcome | None = None

    @property
    def status(self) -> str:
        return "match" if self.outcome is None else self.outcome.status

    def diff(self) -> ChunkDiff:
        c, o = self.check, self.outcome
        if o is None:
            return ChunkDiff(c.split, self.status, c.source, c.sink, c.position)
        return ChunkDiff(
            c.split, o.status, c.source, c.sink, c.position, o.reason, o.differing_rows, o.sample_keys
        )


def verify_pipeline(
    runtime: PipelineRuntime,
    spark: object,
    options: VerifyOptions,
    *,
    applied: AppliedOffset,
    checkpoint: Checkpoint | None = None,
    listener: VerifyListener | None = None,
) -> PipelineReport:
    """Verify (and with ``options.repair`` repair) one pipeline's replica; see the module docstring.

    ``applied`` returns the binlog offset the pipeline has committed to the sink (None: unknown);
    ``checkpoint`` gives the pipeline's server-id range for repair reads.
    """
    if checkpoint is not None and not checkpoint.snapshot_done:
        raise StateError(
            f"pipeline {runtime.name} has not finished its snapshot yet (its checkpoint says so); verify "
            "its replica once the snapshot is complete"
        )
    started = dt.datetime.now(dt.timezone.utc)
    clock = time.monotonic()
    verifier = _Verifier(runtime, spark, options, applied, listener or VerifyListener(), checkpoint)
    report = PipelineReport(runtime.name, runtime.sink.describe(), started)
    if applied() is None:
        report.notes.append(
            "no checkpoint of the pipeline was found: differing chunks were re-checked without waiting "
            "for it to apply the binlog"
        )
    results = verifier.verify(verifier.plan())
    tables = {t: TableReport(t) for t in sorted(verifier.schemas)}
    for result in results:
        entry = tables[result.check.split.table]
        entry.chunks += 1
        entry.source_rows += result.check.source.rows
        entry.sink_rows += result.check.sink.rows
        entry.rechecked += result.outcome is not None
        if result.status != "match":
            entry.differing.append(result.diff())
    if options.repair:
        _repair(verifier, tables)
    report.tables = list(tables.values())
    report.seconds = time.monotonic() - clock
    return report


def _repair(verifier: _Verifier, tables: Mapping[TableId, TableReport]) -> None:
    """Repair confirmed differences, re-verify, and repeat for those still differing."""
    for _ in range(max(1, verifier.options.repair_attempts)):
        todo = [d for t in tables.values() for d in t.differing if d.status == "differ"]
        if not todo:
            return
        verifier.repair(todo)
        after = {r.check.split: r for r in verifier.verify([d.split for d in todo], progress=False)}
        for diff in todo:
            entry = tables[diff.split.table]
            entry.differing.remove(diff)
            result = after[diff.split]
            entry.source_rows += result.check.source.rows - diff.source.rows
            entry.sink_rows += result.check.sink.rows - diff.sink.rows
            if result.status == "match":
                entry.repaired.append(diff)
            else:
                entry.differing.append(result.diff())
