"""Direct checks of the Delta sink, then ``sparkcdc verify`` of Delta replicas, in one
Delta-enabled Spark: ``python sink_checks.py REQUEST.json`` (a subprocess started once by the
``delta_checks`` fixture in conftest.py, which created the source tables).

Each check prints ``ok <name>``. The groups (sink, verify, concurrent) are independent: the
first failing assertion of a group ends that group (its traceback on stderr, ``failed <group>``
on stdout) and the other groups still run.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/ (harness)
sys.path.insert(0, str(Path(__file__).resolve().parent))

from checks_base import rs_merge_rows
from delta_support import source_rows
from merge_checks import MergeChecks

from sparkcdc.core.keys import KeyOrder
from sparkcdc.core.microbatch import TableChanges
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.splits import SnapshotSplit
from sparkcdc.sinks.base import AddedColumn, ColumnChanges
from sparkcdc.sinks.delta import DeltaSinkConfig, rs_merge


class Checks(MergeChecks):
    def types_round_trip(self) -> None:
        """Every MySQL type survives snapshot and MERGE unchanged (in the documented Spark form),
        the MERGE run by delta-rs (rs_merge.py) and by Spark."""
        for engine, limit in (("delta-rs", rs_merge.RS_MERGE_ROWS), ("Apache-Spark", 0)):
            with rs_merge_rows(limit):
                self._types_round_trip(engine)
        print("ok types_round_trip", flush=True)

    def _types_round_trip(self, engine: str) -> None:
        schema = self.schema("types")
        if engine == "delta-rs":  # `odd name` needs column mapping, which delta-rs leaves to Spark
            schema = replace(schema, columns=tuple(c for c in schema.columns if c.name != "odd name"))
        data = source_rows(self.source, schema)
        sink = DeltaSinkConfig(str(self.lake / engine)).open()
        sink.prepare([schema])
        split = SnapshotSplit(schema.table, 0, None, None)
        sink.write_frame(schema, [split], self.frame(sink, schema, data))
        self.expect(sink, schema, data, "types after the snapshot")
        rows = data.to_pylist()
        changed = {(rows[0]["id"],): rows[0] | {"id": rows[0]["id"]}}
        changed[(rows[0]["id"],)]["s"] = "changed ☃"
        new = rows[1] | {"id": 999}
        upserts = {**changed, (999,): new}
        deletes = [(rows[2]["id"],)]
        sink.apply_changes(
            schema, TableChanges(schema.table, upserts, deletes, end=BinlogOffset("binlog.000001", 500))
        )
        model = {r["id"]: r for r in rows}
        model.update({k[0]: v for k, v in upserts.items()})
        del model[rows[2]["id"]]
        self.expect(
            sink, schema, pa.Table.from_pylist(list(model.values()), schema=schema.arrow_schema()), engine
        )
        assert self.engines(sink, schema)[-1] == engine, self.engines(sink, schema)

    def splits_from_arrow(self) -> None:
        """Splits the driver reads on its own threads (``write_split``): appended by delta-rs in
        every type as Spark writes them; a split read again over rows already there is replaced
        by Spark; Spark's MERGE then updates rows in delta-rs' files."""
        schema = self.schema("types")
        data = source_rows(self.source, schema)
        sink = DeltaSinkConfig(str(self.lake / "splits")).open()
        sink.prepare([schema])
        rows = sorted(data.to_pylist(), key=lambda r: r["id"])
        middle = rows[len(rows) // 2]["id"]
        low = [r for r in rows if r["id"] < middle]
        high = [r for r in rows if r["id"] >= middle]
        first = SnapshotSplit(schema.table, 0, None, (middle,))
        second = SnapshotSplit(schema.table, 1, (middle,), None)
        hw = BinlogOffset("binlog.000001", 4)
        sink.write_split(schema, second, pa.Table.from_pylist(high, schema=data.schema), hw)
        sink.write_split(schema, first, pa.Table.from_pylist(low, schema=data.schema), hw)
        self.expect(sink, schema, data, "types appended by delta-rs")
        engines = self.engines(sink, schema)
        assert engines == ["Apache-Spark", "delta-rs", "delta-rs"], engines
        # Read again after a crash, with a row the source changed since: Spark replaces the range.
        again = [r | {"s": "read again"} if r["id"] == low[0]["id"] else r for r in low]
        sink.write_split(schema, first, pa.Table.from_pylist(again, schema=data.schema), hw)
        assert self.engines(sink, schema)[-1] == "Apache-Spark", self.engines(sink, schema)
        model = {r["id"]: r for r in again + high}
        self.expect(sink, schema, pa.Table.from_pylist(list(model.values()), schema=data.schema), "re-read")
        changed = high[-1] | {"s": "merged"}
        end = BinlogOffset("binlog.000001", 900)
        changes = TableChanges(schema.table, {(changed["id"],): changed}, [(high[0]["id"],)], end=end)
        sink.apply_changes(schema, changes)
        model[changed["id"]] = changed
        del model[high[0]["id"]]
        self.expect(sink, schema, pa.Table.from_pylist(list(model.values()), schema=data.schema), "merged")
        print("ok splits_from_arrow", flush=True)

    def string_key_ranges(self) -> None:
        """Re-writing a split of a utf8mb4_general_ci key replaces exactly the keys MySQL puts in
        its range: 'B' lies in [ , 'c'), 'Zed' and '_x' do not (they would in binary order)."""
        schema = self.schema("tags")
        sink = self.sink()
        sink.prepare([schema])
        rows = source_rows(self.source, schema)
        keys = [r["tag"] for r in rows.to_pylist()]
        first = SnapshotSplit(schema.table, 0, None, ("c",))
        second = SnapshotSplit(schema.table, 1, ("c",), None)

        def part(names: Sequence[str]) -> pa.Table:
            return pa.Table.from_pylist(
                [r for r in rows.to_pylist() if r["tag"] in names], schema=rows.schema
            )

        order = KeyOrder.for_columns(schema.key_collations())
        low = [k for k in keys if order.in_range((k,), None, ("c",))]
        assert sorted(low) == ["B", "a", "b2"], low  # '_x' and 'Zed' sort after 'c' in general_ci
        sink.write_frame(schema, [first, second], self.frame(sink, schema, rows))
        # The source deleted 'B' and changed 'a' since: the split is read again and re-written.
        again = part([k for k in low if k != "B"]).to_pylist()
        again = [r | {"n": 100} if r["tag"] == "a" else r for r in again]
        sink.write_frame(
            schema, [first], self.frame(sink, schema, pa.Table.from_pylist(again, schema=rows.schema))
        )
        model = {r["tag"]: r for r in rows.to_pylist() if r["tag"] not in low}
        model.update({r["tag"]: r for r in again})
        self.expect(sink, schema, pa.Table.from_pylist(list(model.values()), schema=rows.schema), "tags")
        print("ok string_key_ranges", flush=True)

    def tail_resplit(self) -> None:
        schema = self.schema("tail")
        sink = self.sink()
        sink.prepare([schema])
        rows = source_rows(self.source, schema).to_pylist()
        whole = SnapshotSplit(schema.table, 0, None, None)
        sink.write_frame(
            schema, [whole], self.frame(sink, schema, pa.Table.from_pylist(rows, schema.arrow_schema()))
        )
        # Re-cut into [ , 5) and [5, ); row 3 was deleted and row 7 changed at the source since.
        rows = [r for r in rows if r["id"] != 3]
        rows = [r | {"v": "seven"} if r["id"] == 7 else r for r in rows]
        pieces = [SnapshotSplit(schema.table, 0, None, (5,)), SnapshotSplit(schema.table, 1, (5,), None)]
        sink.write_frame(
            schema, pieces, self.frame(sink, schema, pa.Table.from_pylist(rows, schema.arrow_schema()))
        )
        self.expect(sink, schema, pa.Table.from_pylist(rows, schema.arrow_schema()), "tail re-cut")
        print("ok tail_resplit", flush=True)

    def unfinished_log(self) -> None:
        """A driver killed while creating a table leaves a ``_delta_log`` without a commit (and
        maybe a temporary file); the next prepare creates the table there."""
        schema = self.schema("tail")
        sink = DeltaSinkConfig(str(self.lake / "unfinished")).open()
        log_dir = Path(sink._config.table_path(schema)) / "_delta_log"
        log_dir.mkdir(parents=True)
        (log_dir / ".00000000000000000000.json.0b1c.tmp").write_text("{")
        sink.prepare([schema])
        rows = source_rows(self.source, schema)
        sink.write_frame(schema, [SnapshotSplit(schema.table, 0, None, None)], self.frame(sink, schema, rows))
        self.expect(sink, schema, rows, "after an unfinished creation")
        print("ok unfinished_log", flush=True)

    def schema_evolution(self) -> None:
        """The table starts without two of the source's columns (as before an ADD COLUMN).
        evolve_table adds ``extra`` with the source's default for existing rows, once; a batch
        whose rows have ``more``, which the table lacks, adds it (mergeSchema)."""
        schema = self.schema("evolve")
        old = replace(schema, columns=tuple(c for c in schema.columns if c.name in ("id", "v")))
        sink = self.sink()
        sink.prepare([old])
        data = source_rows(self.source, old)
        sink.write_frame(old, [SnapshotSplit(old.table, 0, None, None)], self.frame(sink, old, data))
        mid = replace(schema, columns=tuple(c for c in schema.columns if c.name != "more"))
        extra = schema.column("extra")
        adding = ColumnChanges(added=(AddedColumn(extra, "7", "v"),))
        done = sink.evolve_table(mid, adding)
        assert done and "extra" in done[0], done
        assert sink.evolve_table(mid, adding) == [], "not idempotent"
        table = self.read(sink, schema)
        assert set(table.column("extra").to_pylist()) == {7}, table.column("extra").to_pylist()
        sink.apply_changes(
            schema,
            TableChanges(
                schema.table,
                {(1,): {"id": 1, "v": "one", "extra": 8, "more": "m"}},
                [],
                end=BinlogOffset("binlog.000003", 10),
            ),
        )
        by_id = {r["id"]: r for r in self.read(sink, schema).to_pylist()}
        assert by_id[1]["extra"] == 8 and by_id[1]["more"] == "m", by_id[1]
        assert by_id[2]["extra"] == 7 and by_id[2]["more"] is None, by_id[2]
        print("ok schema_evolution", flush=True)

    def options(self) -> None:
        """Partitioning, table properties, change data feed and OPTIMIZE every N commits."""
        schema = self.schema("opts")
        table = str(schema.table)
        sink = self.sink(
            partition_by=((table, ("bucket",)),),
            table_properties=(("delta.logRetentionDuration", "interval 7 days"),),
            change_data_feed=True,
            optimize_every_commits=2,
        )
        sink.prepare([schema])
        from delta.tables import DeltaTable

        path = sink._config.table_path(schema)
        detail = DeltaTable.forPath(sink.session, path).detail().collect()[0]
        assert list(detail["partitionColumns"]) == ["bucket"], detail["partitionColumns"]
        props = dict(detail["properties"])
        assert props.get("delta.enableChangeDataFeed") == "true", props
        assert props.get("delta.logRetentionDuration") == "interval 7 days", props
        data = source_rows(self.source, schema)
        sink.write_frame(schema, [SnapshotSplit(schema.table, 0, None, None)], self.frame(sink, schema, data))
        sink.apply_changes(
            schema,
            TableChanges(
                schema.table, {(1,): {"id": 1, "bucket": 9, "v": "moved"}}, [(2,)], end=BinlogOffset("b.1", 7)
            ),
        )
        changes = (
            sink.session.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 2)
        )
        kinds = sorted(r[0] for r in changes.load(path).select("_change_type").collect())
        assert kinds == ["delete", "update_postimage", "update_preimage"], kinds
        operations = [h[1] for h in self.history(sink, schema)]
        assert "OPTIMIZE" in operations, operations
        self.expect(
            sink,
            schema,
            pa.Table.from_pylist(
                [
                    r | {"bucket": 9, "v": "moved"} if r["id"] == 1 else r
                    for r in data.to_pylist()
                    if r["id"] != 2
                ],
                schema=data.schema,
            ),
            "opts",
        )
        print("ok options", flush=True)


def _sink_checks(request: dict[str, Any], spark: Any) -> None:
    checks = Checks(request, spark)
    checks.types_round_trip()
    checks.splits_from_arrow()
    checks.replay_is_idempotent()
    checks.merge_touches_its_files()
    checks.merges_with_delta_rs()
    checks.appends_new_keys()
    checks.string_key_ranges()
    checks.tail_resplit()
    checks.unfinished_log()
    checks.schema_evolution()
    checks.options()


def main() -> None:
    import functools
    import traceback

    from verify_checks import verify_checks
    from verify_concurrent import concurrent_checks, start_pipeline

    from sparkcdc.options import EngineOptions
    from sparkcdc.spark.session import create_session, delta_conf

    request = json.loads(Path(sys.argv[1]).read_text())
    busy = start_pipeline(request["concurrent"])
    options = EngineOptions.from_environment()
    conf = delta_conf(options, snapshot_partitions=2)
    spark = create_session("sparkcdc-delta-checks", "local[2,2]", options, conf)
    failed = []
    try:
        groups = (
            ("sink", _sink_checks),
            ("verify", verify_checks),
            ("concurrent", functools.partial(concurrent_checks, run=busy)),
        )
        for name, group in groups:
            try:
                group(request[name], spark)
            except Exception:
                traceback.print_exc()
                print(f"failed {name}", flush=True)
                failed.append(name)
    finally:
        busy.kill()
        spark.stop()
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
