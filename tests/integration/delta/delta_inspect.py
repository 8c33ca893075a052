"""Reads Delta tables with a Delta-enabled Spark, for the tests. It runs as a subprocess: the
tests' own process may already have a Spark without Delta's jars, and a JVM's class path is
fixed when it starts.

``python delta_inspect.py REQUEST.json OUT_DIR``. REQUEST is ``{"tables": [{"name", "path",
"pick"}]}``; for every table it writes ``OUT_DIR/<name>.history.json`` (version, operation,
userMetadata, operationMetrics per commit), ``<name>.latest.arrow`` and, for the versions
``pick`` selects (sparkcdc binlog commits with offsets in ``[after, through]``, ``count`` of them
spread evenly), ``<name>.v<version>.arrow``: rows as Spark returns them, as Arrow IPC files.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pyarrow as pa


def _write(table: pa.Table, path: Path) -> None:
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)


def _picked(history: list[dict], pick: dict) -> list[int]:
    from sparkcdc.core.offsets import BinlogOffset
    from sparkcdc.sinks.delta import commit_metadata

    if not pick:
        return []
    after = BinlogOffset.parse(pick["after"]) if pick.get("after") else None
    through = BinlogOffset.parse(pick["through"]) if pick.get("through") else None
    found = []
    for entry in sorted(history, key=lambda e: e["version"]):
        meta = commit_metadata(entry["userMetadata"])
        if meta is None or meta.get("phase") != "binlog":
            continue
        offset = BinlogOffset.parse(meta["offset"])
        if (after is None or offset >= after) and (through is None or offset <= through):
            found.append(entry["version"])
    count = int(pick.get("count", 3))
    if len(found) <= count:
        return found
    step = (len(found) - 1) / max(1, count - 1)
    return sorted({found[round(i * step)] for i in range(count)})


def main() -> None:
    request = json.loads(Path(sys.argv[1]).read_text())
    out = Path(sys.argv[2])
    from sparkcdc.options import EngineOptions
    from sparkcdc.spark.session import create_session, delta_conf

    options = EngineOptions.from_environment()
    conf = delta_conf(options, snapshot_partitions=2)
    spark = create_session("sparkcdc-delta-inspect", "local[2]", options, conf)
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    from delta.tables import DeltaTable

    try:
        for entry in request["tables"]:
            name, path = entry["name"], entry["path"]
            frame = DeltaTable.forPath(spark, path).history()
            history = [
                {
                    "version": r["version"],
                    "operation": r["operation"],
                    "userMetadata": r["userMetadata"],
                    "operationMetrics": dict(r["operationMetrics"] or {}),
                }
                for r in frame.select("version", "operation", "userMetadata", "operationMetrics").collect()
            ]
            (out / f"{name}.history.json").write_text(json.dumps(history))
            _write(spark.read.format("delta").load(path).toArrow(), out / f"{name}.latest.arrow")
            for version in _picked(history, entry.get("pick") or {}):
                rows = spark.read.format("delta").option("versionAsOf", version).load(path)
                _write(rows.toArrow(), out / f"{name}.v{version}.arrow")
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
