"""``sparkcdc verify`` of a Delta replica (run by sink_checks.py in its Delta-enabled Spark;
the ``delta_checks`` fixture created the source table and the manifest).

The pipeline snapshots the table into Delta in process; then the replica verifies clean; a row
deleted, a row inserted and one column of a row altered directly in the Delta table are each
found in the chunk holding it; ``--repair`` re-snapshots those chunks and the replica verifies
clean again. Each check prints ``ok <name>``; the first failing assertion ends the group.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from rich.console import Console

from sparkcdc.api.manifest import load_manifests
from sparkcdc.driver.local import runtimes_of
from sparkcdc.driver.verify_local import verify_local
from sparkcdc.engine.enumerator import SplitEnumerator
from sparkcdc.engine.listener import PipelineListener
from sparkcdc.state.file_store import FileCheckpointStore
from sparkcdc.verify.recheck import RecheckSettings
from sparkcdc.verify.report import ChunkDiff, PipelineReport, TableReport
from sparkcdc.verify.runner import VerifyOptions


def run_verify(
    spark: Any, manifest: Path, state: Path, *, repair: bool = False, wait_seconds: float = 30
) -> tuple[int, TableReport]:
    options = VerifyOptions(repair=repair, recheck=RecheckSettings(wait_seconds=wait_seconds))
    console = Console(file=io.StringIO(), width=200)
    code, reports = verify_local(
        load_manifests([str(manifest)]), state, options, console=console, spark=spark
    )
    (report,) = reports
    assert isinstance(report, PipelineReport)
    (table,) = report.tables
    return code, table


def _holding(diffs: list[ChunkDiff], key: int) -> ChunkDiff:
    found = [
        d
        for d in diffs
        if (d.split.start is None or d.split.start[0] <= key)
        and (d.split.end is None or key < d.split.end[0])
    ]
    assert len(found) == 1, f"{len(found)} differing chunks hold key {key}: {diffs}"
    return found[0]


def _edit_delta(spark: Any, path: str) -> None:
    """One row deleted, one inserted (a copy of another row under a new key), one column altered."""
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F  # noqa: N812

    table = DeltaTable.forPath(spark, path)
    table.delete("id = 450")
    table.update("id = 2500", {"price": F.expr("price + 0.01")})
    copy = spark.read.format("delta").load(path).where("id = 1000").withColumn("id", F.lit(1455))
    copy.write.format("delta").mode("append").save(path)


def verify_checks(request: dict[str, Any], spark: Any) -> None:
    manifest, state, path = Path(request["manifest"]), Path(request["state"]), request["table_path"]
    (runtime,) = runtimes_of(load_manifests([str(manifest)]))
    store = FileCheckpointStore(state, runtime.name)
    SplitEnumerator(runtime, store, spark, PipelineListener()).run(exit_when_caught_up=True)

    code, table = run_verify(spark, manifest, state)
    assert code == 0 and table.ok, table
    assert table.chunks >= 6 and table.source_rows == table.sink_rows == request["rows"], table
    assert table.rechecked == 0, table
    print("ok clean", flush=True)

    _edit_delta(spark, path)
    code, table = run_verify(spark, manifest, state)
    assert code == 1 and len(table.differing) == 3, table
    deleted, inserted, altered = (_holding(table.differing, k) for k in (450, 1455, 2500))
    assert deleted.sink.rows == deleted.source.rows - 1 and deleted.sample_keys == ("450",), deleted
    assert inserted.sink.rows == inserted.source.rows + 1 and inserted.sample_keys == ("1455",), inserted
    assert altered.sink.rows == altered.source.rows and altered.sample_keys == ("2500",), altered
    assert all(d.status == "differ" and d.differing_rows == 1 for d in table.differing), table
    print("ok differences", flush=True)

    code, table = run_verify(spark, manifest, state, repair=True)
    assert code == 0 and table.ok, table
    repaired = sorted(d.split.index for d in table.repaired)
    assert repaired == sorted(d.split.index for d in (deleted, inserted, altered)), repaired
    print("ok repair", flush=True)

    code, table = run_verify(spark, manifest, state)
    assert code == 0 and table.ok and table.rechecked == 0, table
    print("ok clean_after_repair", flush=True)
