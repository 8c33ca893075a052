"""Direct checks of the Delta sink, then ``sparkcdc verify`` of Delta replicas, in one
Delta-enabled Spark: ``python sink_checks.py REQUEST.json`` (a subprocess started once by the
``delta_checks`` fixture in conftest.py, which created the source tables).

Each check prints ``ok <name>``. The groups (sink, verify, concurrent) are independent: the
first failing assertion of a group ends that group (its traceback on stderr, ``failed <group>``
on stdout) and the other groups still run.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
from deltalake import DeltaTable as RsTable

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/ (harness)
sys.path.insert(0, str(Path(__file__).resolve().parent))

from delta_support import assert_rows_equal, normalized, source_rows, source_schema

from sparkcdc.core.keys import KeyOrder
from sparkcdc.core.microbatch import TableChanges
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.splits import SnapshotSplit
from sparkcdc.mysql.connection import SourceConfig
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks.base import AddedColumn, ColumnChanges
from sparkcdc.sinks.delta import DeltaSink, DeltaSinkConfig, commit_metadata, rs_merge
from sparkcdc.sinks.delta.rs_create import DELETION_VECTORS
from sparkcdc.sinks.spark_types import spark_struct, to_spark_arrow


class Checks:
    def __init__(self, request: dict[str, Any], spark: Any) -> None:
        self.source = SourceConfig(**request["source"])
        self.db = request["db"]
        self.lake = Path(request["lake"])
        self.spark = spark

    def schema(self, table: str) -> TableSchema:
        return source_schema(self.source, self.db, table)

    def sink(self, **options: Any) -> DeltaSink:
        return DeltaSinkConfig(str(self.lake), **options).open()

    def frame(self, sink: DeltaSink, schema: TableSchema, data: pa.Table) -> Any:
        return sink.session.createDataFrame(to_spark_arrow(schema, data), schema=spark_struct(schema))

    def read(self, sink: DeltaSink, schema: TableSchema, version: int | None = None) -> pa.Table:
        reader = sink.session.read.format("delta")
        if version is not None:
            reader = reader.option("versionAsOf", version)
        return reader.load(sink._config.table_path(schema)).toArrow()

    def history(self, sink: DeltaSink, schema: TableSchema) -> list[Any]:
        from delta.tables import DeltaTable

        table = DeltaTable.forPath(sink.session, sink._config.table_path(schema))
        return sorted(table.history().select("version", "operation", "userMetadata").collect())

    def properties(self, sink: DeltaSink, schema: TableSchema) -> dict[str, str]:
        from delta.tables import DeltaTable

        table = DeltaTable.forPath(sink.session, sink._config.table_path(schema))
        return dict(table.detail().select("properties").collect()[0][0] or {})

    def expect(self, sink: DeltaSink, schema: TableSchema, canonical: pa.Table, what: str) -> None:
        want = normalized(schema, to_spark_arrow(schema, canonical))
        got = normalized(schema, self.read(sink, schema))
        assert_rows_equal(schema, want, got, what)

    # -- the checks -----------------------------------------------------------------------------

    def types_round_trip(self) -> None:
        """Every MySQL type survives snapshot and MERGE unchanged (in the documented Spark form),
        the MERGE run by delta-rs (rs_merge.py) and by Spark."""
        for engine, limit in (("delta-rs", rs_merge.RS_MERGE_ROWS), ("Apache-Spark", 0)):
            with _rs_merge_rows(limit):
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

    def engines(self, sink: DeltaSink, schema: TableSchema) -> list[str]:
        """The engine of each commit of the table (its log's ``commitInfo.engineInfo``)."""
        log_dir = Path(sink._config.table_path(schema)) / "_delta_log"
        out = []
        for commit in sorted(log_dir.glob("*.json")):
            for line in commit.read_text().splitlines():
                info = json.loads(line).get("commitInfo")
                if info is not None:
                    out.append(str(info.get("engineInfo", "")).split("/")[0].split(":")[0])
        return out

    def replay_is_idempotent(self) -> None:
        """A batch applied again — right away or after later batches — changes nothing."""
        schema = self.schema("replay")
        sink = self.sink()
        sink.prepare([schema])
        data = source_rows(self.source, schema)
        sink.write_frame(schema, [SnapshotSplit(schema.table, 0, None, None)], self.frame(sink, schema, data))
        base = {r["id"]: r for r in data.to_pylist()}

        def batch(end: int, upserts: dict[int, str], deletes: Sequence[int]) -> TableChanges:
            return TableChanges(
                schema.table,
                {(k,): {"id": k, "v": v} for k, v in upserts.items()},
                [(k,) for k in deletes],
                end=BinlogOffset("binlog.000002", end),
            )

        a = batch(1000, {1: "a1", 100: "a100"}, [2])
        b = batch(2000, {1: "b1", 2: "b2"}, [100])
        sink.apply_changes(schema, a)
        sink.apply_changes(schema, b)
        after_b = self.read(sink, schema)
        versions = len(self.history(sink, schema))
        sink.apply_changes(schema, a)  # a replay from before a: must not move the table back
        sink.apply_changes(schema, b)  # the last batch again
        assert len(self.history(sink, schema)) == versions, "a replayed batch made a commit"
        assert normalized(schema, self.read(sink, schema)) == normalized(schema, after_b)
        sink.apply_changes(schema, batch(3000, {3: "c3"}, []))
        model = dict(base)
        model.update({1: {"id": 1, "v": "b1"}, 2: {"id": 2, "v": "b2"}, 3: {"id": 3, "v": "c3"}})
        model.pop(100, None)
        self.expect(
            sink, schema, pa.Table.from_pylist(list(model.values()), schema=schema.arrow_schema()), "c"
        )
        offsets = [commit_metadata(h[2]) for h in self.history(sink, schema)]
        binlog = [m["offset"] for m in offsets if m and m["phase"] == "binlog"]
        assert binlog == ["binlog.000002:1000", "binlog.000002:2000", "binlog.000002:3000"], binlog
        print("ok replay_is_idempotent", flush=True)

    def merge_touches_its_files(self) -> None:
        """Spark's MERGE marks rows only in the files holding its keys (deletion vectors, which
        it sets first on a table delta-rs created: no unchanged row is copied), and its key span
        keeps the other waves' files out of its scan."""
        from delta.tables import DeltaTable

        with _rs_merge_rows(0):  # every batch is Spark's
            path = self._merge_touches_its_files()
        history = DeltaTable.forPath(self.spark, path).history()
        operations = [r["operation"] for r in history.orderBy("version").collect()]
        assert operations[-2:] == ["SET TBLPROPERTIES", "MERGE"], operations
        print("ok merge_touches_its_files", flush=True)

    def _merge_touches_its_files(self) -> str:
        from delta.tables import DeltaTable

        schema = self.schema("replay")
        sink = DeltaSinkConfig(str(self.lake / "files")).open()
        sink.prepare([schema])
        bounds: list[tuple[int | None, int | None]] = [(None, 1000), (1000, 2000), (2000, None)]
        for index, (start, end) in enumerate(bounds):
            low = start or 0
            rows = pa.Table.from_pylist(
                [{"id": i, "v": f"s{i}"} for i in range(low, end or low + 1000)], schema=schema.arrow_schema()
            )
            split = SnapshotSplit(
                schema.table, index, None if start is None else (start,), None if end is None else (end,)
            )
            sink.write_frame(schema, [split], self.frame(sink, schema, rows))
        path = sink._config.table_path(schema)
        changes = TableChanges(
            schema.table,
            {(1500,): {"id": 1500, "v": "m"}, (1600,): {"id": 1600, "v": "m"}},
            [(1700,)],
            end=BinlogOffset("binlog.000002", 500),
        )
        sink.apply_changes(schema, changes)
        history = DeltaTable.forPath(sink.session, path).history().orderBy("version").collect()
        waves = [dict(r["operationMetrics"]) for r in history if r["operation"] == "WRITE"]
        merge = dict(history[-1]["operationMetrics"])
        assert history[-1]["operation"] == "MERGE", history[-1]
        middle = int(waves[1]["numFiles"])
        touched = int(merge["numTargetDeletionVectorsAdded"]) + int(merge["numTargetFilesRemoved"])
        assert 1 <= touched <= middle, (merge, middle)
        assert int(merge["numTargetRowsUpdated"]) == 2 and int(merge["numTargetRowsDeleted"]) == 1, merge
        assert int(merge["numTargetRowsCopied"]) == 0, merge
        got = {r["id"]: r["v"] for r in self.read(sink, schema).to_pylist()}
        assert len(got) == 2999 and got[1500] == got[1600] == "m" and 1700 not in got and got[2500] == "s2500"
        assert self.properties(sink, schema)[DELETION_VECTORS] == "true"
        return path

    def merges_with_delta_rs(self) -> None:
        """A batch into keys the table holds is MERGEd by delta-rs while the files in its key span
        hold at most ``RS_MERGE_ROWS`` rows: updates, deletes and inserts exactly, its version
        recorded (a replay, also by a restarted driver's sink, makes no commit), no deletion
        vectors. A batch whose span holds more is Spark's, which sets deletion vectors first;
        the table then stays with Spark."""
        schema = self.schema("replay")
        sink = DeltaSinkConfig(str(self.lake / "rsmerge")).open()
        sink.prepare([schema])
        model = {i: {"id": i, "v": f"s{i}"} for i in range(0, 600, 2)}
        hw = BinlogOffset("b.000001", 4)
        for index, (start, end) in enumerate([(None, 200), (200, 400), (400, None)]):
            rows = [r for k, r in model.items() if (start is None or k >= start) and (end is None or k < end)]
            split = SnapshotSplit(
                schema.table, index, None if start is None else (start,), None if end is None else (end,)
            )
            sink.write_split(schema, split, pa.Table.from_pylist(rows, schema=schema.arrow_schema()), hw)

        def batch(end: int, upserts: dict[int, str], deletes: Sequence[int]) -> TableChanges:
            images = {(k,): {"id": k, "v": v} for k, v in upserts.items()}
            return TableChanges(
                schema.table, images, [(k,) for k in deletes], end=BinlogOffset("b.000001", end)
            )

        def applied(changes: TableChanges, engine: str, operations: list[str]) -> None:
            sink.apply_changes(schema, changes)
            model.update({k[0]: v for k, v in changes.upserts.items()})
            for key in changes.deletes:
                model.pop(key[0], None)
            history = [h[1] for h in self.history(sink, schema)]
            assert history[-len(operations) :] == operations, history
            assert self.engines(sink, schema)[-1] == engine, self.engines(sink, schema)
            got = self.read(sink, schema)
            self.expect(sink, schema, pa.Table.from_pylist(list(model.values()), schema=got.schema), engine)

        first = batch(100, {250: "m", 260: "m", 251: "new"}, [270])
        applied(first, "delta-rs", ["MERGE"])
        versions = len(self.history(sink, schema))
        sink.apply_changes(schema, first)
        DeltaSinkConfig(str(self.lake / "rsmerge")).open().apply_changes(schema, first)
        assert len(self.history(sink, schema)) == versions, "a replayed MERGE made a commit"
        path = sink._config.table_path(schema)
        assert "deletionVectors" not in (RsTable(path).protocol().reader_features or [])
        with _rs_merge_rows(50):  # the span of 300 holds 100 rows
            applied(batch(200, {300: "spark"}, []), "Apache-Spark", ["SET TBLPROPERTIES", "MERGE"])
        assert self.properties(sink, schema)[DELETION_VECTORS] == "true"
        applied(batch(300, {302: "spark again"}, [304]), "Apache-Spark", ["MERGE"])
        print("ok merges_with_delta_rs", flush=True)

    def appends_new_keys(self) -> None:
        """A batch whose keys lie past every row of the table is one append commit (by delta-rs,
        on a local path), replayed exactly once; a batch reaching into the table's keys is a
        MERGE again."""
        schema = self.schema("replay")
        sink = DeltaSinkConfig(str(self.lake / "appends")).open()
        sink.prepare([schema])
        rows = pa.Table.from_pylist(
            [{"id": i, "v": f"s{i}"} for i in range(100)], schema=schema.arrow_schema()
        )
        sink.write_frame(schema, [SnapshotSplit(schema.table, 0, None, None)], self.frame(sink, schema, rows))

        def batch(end: int, upserts: Sequence[int], deletes: Sequence[int]) -> TableChanges:
            images = {(k,): {"id": k, "v": f"b{end}-{k}"} for k in upserts}
            return TableChanges(
                schema.table, images, [(k,) for k in deletes], end=BinlogOffset("b.000001", end)
            )

        sink.apply_changes(schema, batch(100, range(500, 600), [650]))  # the delete finds nothing
        sink.apply_changes(schema, batch(100, range(500, 600), [650]))  # replayed
        sink.apply_changes(schema, batch(200, [50, 700], [10]))
        operations = [(h[1], (commit_metadata(h[2]) or {}).get("offset")) for h in self.history(sink, schema)]
        assert operations[1:] == [("WRITE", None), ("WRITE", "b.000001:100"), ("MERGE", "b.000001:200")]
        # Created, appended and merged by delta-rs (rs_create.py, arrow_append.py, rs_merge.py);
        # the snapshot frame by Spark.
        engines = self.engines(sink, schema)
        assert engines == ["delta-rs", "Apache-Spark", "delta-rs", "delta-rs"], engines
        got = {r["id"]: r["v"] for r in self.read(sink, schema).to_pylist()}
        want = {i: f"s{i}" for i in range(100) if i != 10} | {i: f"b100-{i}" for i in range(500, 600)}
        assert got == want | {50: "b200-50", 700: "b200-700"}, sorted(set(got.items()) ^ set(want.items()))
        # Its rows deleted later, a replay of the append finds the span empty: still skipped.
        sink.apply_changes(schema, batch(300, [], range(500, 600)))
        versions = len(self.history(sink, schema))
        fresh = DeltaSinkConfig(str(self.lake / "appends")).open()  # a restarted driver's sink
        fresh.apply_changes(schema, batch(100, range(500, 600), [650]))
        assert len(self.history(fresh, schema)) == versions, "a replayed append made a commit"
        assert not [k for k in (r["id"] for r in self.read(fresh, schema).to_pylist()) if 500 <= k < 600]
        print("ok appends_new_keys", flush=True)

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


@contextlib.contextmanager
def _rs_merge_rows(limit: int) -> Iterator[None]:
    """The most rows delta-rs rewrites for a MERGE (rs_merge.py) within the block: 0, Spark's."""
    saved, rs_merge.RS_MERGE_ROWS = rs_merge.RS_MERGE_ROWS, limit
    try:
        yield
    finally:
        rs_merge.RS_MERGE_ROWS = saved


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
