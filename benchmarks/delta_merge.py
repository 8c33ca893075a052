"""Small Delta MERGEs (the sink's own ``merge_batch``) under JVM and Spark SQL settings, side by side.

    .venv/bin/python benchmarks/delta_merge.py [--rows N] [--merges N] [--batch N]

A live stream into Delta on a quiet source is a sequence of small MERGEs, and a MERGE costs seconds
whatever its size (docs/performance.md, "Delta sink"). This measures where that fixed cost goes:
one table of ``--rows`` rows (default 3,000; 5 columns) is read from a MariaDB kept in
``.bench/delta-merge``, then each variant runs in a JVM of its own (a subprocess of this script:
session, the table written as one snapshot split, ``--merges`` MERGEs of ``--batch`` upserts and one
delete each) and reports the median MERGE seconds, its wall seconds and the JVM's CPU seconds:

* ``spark defaults``       the JIT's and Spark SQL's defaults, as a ``sparkcdc run`` writing Delta;
* ``C1 JIT``               ``-XX:TieredStopAtLevel=1 -XX:+UseSerialGC`` (the test harness's JVM);
* ``C1 JIT, interpreted``  that, and Spark SQL without generated code (``wholeStage=false``,
                           ``factoryMode=NO_CODEGEN``: what the tests run, tests/harness/runner.py);
* ``… AQE off``            that, without adaptive query execution (it re-plans between stages);
* ``deletion vectors off`` the defaults with ``delta.enableDeletionVectors=false`` (copy-on-write).

Ratios are against ``spark defaults`` of the same run. Results go to
``benchmarks/results/delta_merge.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchsupport import bench_server, machine, sparkcdc_env, write_results
from rich.console import Console
from rich.table import Table

DATABASE, TABLE = "benchmerge", "t"
_C1 = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
_INTERPRETED = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}
VARIANTS: dict[str, dict[str, Any]] = {
    "spark defaults": {},
    "C1 JIT": {"java": _C1},
    "C1 JIT, interpreted": {"java": _C1, "conf": _INTERPRETED},
    "C1 JIT, interpreted, AQE off": {
        "java": _C1,
        "conf": {**_INTERPRETED, "spark.sql.adaptive.enabled": "false"},
    },
    "deletion vectors off": {"properties": {"delta.enableDeletionVectors": "false"}},
}
console = Console()


def build_table(server: Any, rows: int) -> None:
    server.execute(f"CREATE DATABASE IF NOT EXISTS {DATABASE}")
    server.execute(f"DROP TABLE IF EXISTS {DATABASE}.{TABLE}")
    server.execute(
        f"CREATE TABLE {DATABASE}.{TABLE} (id INT PRIMARY KEY, v VARCHAR(40), n INT, d DECIMAL(10,2),"
        " ts DATETIME(6))"
    )
    server.execute(
        f"INSERT INTO {DATABASE}.{TABLE} SELECT seq, CONCAT('r', seq), seq % 7, seq / 3,"
        f" '2024-01-01' + INTERVAL seq SECOND FROM {DATABASE}.seq_1_to_{rows}"
    )


def run_variant(name: str, variant: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
    env = sparkcdc_env()
    if "java" in variant:
        env["PYSPARK_SUBMIT_ARGS"] = f'--driver-java-options "{variant["java"]}" pyspark-shell'
    job = {**request, "conf": variant.get("conf", {}), "properties": variant.get("properties", {})}
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, __file__, "--variant", json.dumps(job)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{name} failed:\n{done.stderr[-4000:]}")
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return {"name": name, "wall_s": round(wall, 2), **figures}


def variant_main(job: dict[str, Any]) -> None:
    """In the subprocess: one JVM, the snapshot write, then the MERGEs."""
    here = Path(__file__).resolve().parent  # holds delta.py, which would hide Delta's own package
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]
    sys.path.insert(0, str(here.parent / "operator"))
    from pyspark import SparkContext

    from sparkcdc.core.microbatch import TableChanges
    from sparkcdc.core.offsets import BinlogOffset
    from sparkcdc.core.splits import SnapshotSplit
    from sparkcdc.core.tables import TableId
    from sparkcdc.mysql.chunk_reader import read_chunk
    from sparkcdc.mysql.connection import SourceConfig, connect
    from sparkcdc.mysql.schema import load_table_schema
    from sparkcdc.options import EngineOptions
    from sparkcdc.sinks.delta import DeltaSinkConfig
    from sparkcdc.sinks.spark_types import spark_struct, to_spark_arrow
    from sparkcdc.spark.session import create_session, delta_conf

    conn = connect(SourceConfig(**job["source"]))
    schema = load_table_schema(conn, TableId(DATABASE, TABLE))
    data = read_chunk(conn, schema, SnapshotSplit(schema.table, 0, None, None))
    conn.close()
    options = EngineOptions.from_environment()
    spark = create_session("bench-merge", "local[2,2]", options, {**delta_conf(options, 2), **job["conf"]})
    sink = DeltaSinkConfig(job["lake"], table_properties=tuple(job["properties"].items())).open()
    sink.prepare([schema])
    frame = sink.session.createDataFrame(to_spark_arrow(schema, data), schema=spark_struct(schema))
    sink.write_frame(schema, [SnapshotSplit(schema.table, 0, None, None)], frame)
    rows, batch, seconds = data.to_pylist(), job["batch"], []
    span = len(rows) - job["merges"] - batch
    for i in range(job["merges"]):
        first = job["merges"] + (i * batch) % span  # the deleted keys (1..merges) are never upserted
        upserts = {(r["id"],): {**r, "n": i} for r in rows[first : first + batch]}
        end = BinlogOffset("binlog.000001", 1000 + i)
        started = time.perf_counter()
        sink.apply_changes(schema, TableChanges(schema.table, upserts, [(i + 1,)], end=end))
        seconds.append(time.perf_counter() - started)
    jvm = SparkContext._gateway.proc.pid  # type: ignore[union-attr]
    print(json.dumps({"merge_median_s": round(statistics.median(seconds), 3), "jvm_cpu_s": _cpu(jvm)}))
    spark.stop()


def _cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return round((int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), 2)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=3000)
    parser.add_argument("--merges", type=int, default=12)
    parser.add_argument("--batch", type=int, default=300)
    parser.add_argument("--variant", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.variant:
        variant_main(json.loads(args.variant))
        return
    results: dict[str, Any] = {"benchmark": "delta_merge", "machine": machine(), "config": vars(args)}
    work = Path(tempfile.mkdtemp(prefix="sparkcdc-delta-merge-"))
    try:
        with bench_server("delta-merge") as server:
            build_table(server, args.rows)
            source = {
                "host": server.host,
                "port": server.port,
                "user": "cdc",
                "password": "bench-cdc-password",
            }
            rows = []
            for name, variant in VARIANTS.items():
                request = {"source": source, "lake": str(work / name.replace(" ", "-")), **vars(args)}
                rows.append(run_variant(name, variant, request))
                console.print(rows[-1])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    base = rows[0]
    for row in rows:
        row["merge_x_defaults"] = round(row["merge_median_s"] / base["merge_median_s"], 2)
        row["cpu_x_defaults"] = round(row["jvm_cpu_s"] / base["jvm_cpu_s"], 2)
    results["results"] = rows
    results["machine"]["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    write_results("delta_merge", results)
    table = Table(title=f"{args.merges} MERGEs of {args.batch} rows into {args.rows} rows")
    for column in ("variant", "MERGE median s", "× defaults", "JVM CPU s", "× defaults", "wall s"):
        table.add_column(column, justify="left" if column == "variant" else "right")
    for row in rows:
        table.add_row(
            row["name"],
            f"{row['merge_median_s']:.2f}",
            f"{row['merge_x_defaults']:.2f}",
            f"{row['jvm_cpu_s']:.1f}",
            f"{row['cpu_x_defaults']:.2f}",
            f"{row['wall_s']:.1f}",
        )
    console.print(table)


if __name__ == "__main__":
    main()
