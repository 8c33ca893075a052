"""The Delta sink's binlog batches: MERGEs by delta-rs and by Spark, appends of new keys, replays
(run by sink_checks.py)."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
from checks_base import ChecksBase, rs_merge_rows
from delta_support import normalized, source_rows
from deltalake import DeltaTable as RsTable

from sparkcdc.core.microbatch import TableChanges
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.splits import SnapshotSplit
from sparkcdc.sinks.delta import DeltaSinkConfig, commit_metadata
from sparkcdc.sinks.delta.rs_create import DELETION_VECTORS


class MergeChecks(ChecksBase):
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

        with rs_merge_rows(0):  # every batch is Spark's
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
        with rs_merge_rows(50):  # the span of 300 holds 100 rows
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
