"""The source identity in the checkpoint, and moving a checkpoint's offsets to another server."""

from __future__ import annotations

import pytest

from sparkcdc.core.checkpoint import Checkpoint, TablePlan, TableState, decode, encode
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.source_identity import SourceIdentity, checkpoint_offsets, offsets_without_gtid, rebase
from sparkcdc.core.splits import FinishedSplitInfo, SnapshotSplit
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.binlog.stream import _GtidPosition
from sparkcdc.mysql.failover import missing_transactions, same_gtid_position

T = TableId("shop", "orders")
OLD = SourceIdentity(1, gtid_domain_id=0, flavor="MariaDB 10.11.6", address="db-a:3306")
NEW = SourceIdentity(2, gtid_domain_id=0, flavor="MariaDB 10.11.6", address="db-b:3306")


def _checkpoint(**kwargs: object) -> Checkpoint:
    splits = [SnapshotSplit(T, 0, None, (100,)), SnapshotSplit(T, 1, (100,), None)]
    infos = [
        FinishedSplitInfo(splits[0], BinlogOffset("binlog.000003", 400, "0-1-40"), 100),
        FinishedSplitInfo(splits[1], BinlogOffset("binlog.000003", 900, "0-1-45"), 7),
    ]
    return Checkpoint(
        tables={T: TableState()},
        plans={T: TablePlan.from_splits(splits, key_columns=["id"])},
        finished={T: infos},
        snapshot_done=True,
        snapshot_end_offset=BinlogOffset("binlog.000003", 950, "0-1-46"),
        binlog_offset=BinlogOffset("binlog.000003", 500, "0-1-41"),
        **kwargs,  # type: ignore[arg-type]
    )


def test_identity_round_trips_and_old_checkpoints_still_load() -> None:
    checkpoint = _checkpoint(source=OLD)
    assert decode(encode(checkpoint)) == checkpoint
    document = encode(_checkpoint())
    assert "source" not in document
    assert decode(document).source is None


def test_same_server_is_server_id_and_uuid() -> None:
    assert OLD.same_server(SourceIdentity(1, address="elsewhere:3306"))
    assert not OLD.same_server(NEW)
    assert not SourceIdentity(5, server_uuid="a").same_server(SourceIdentity(5, server_uuid="b"))
    assert "server_id 2" in NEW.describe() and "db-b:3306" in NEW.describe()


def test_rebase_moves_every_offset_in_order() -> None:
    checkpoint = _checkpoint(source=OLD)
    moved = {o: BinlogOffset("binlog.000001", o.pos * 10, o.gtid_set) for o in checkpoint_offsets(checkpoint)}
    rebased = rebase(checkpoint, moved, NEW)
    assert rebased.source == NEW
    assert rebased.binlog_offset == BinlogOffset("binlog.000001", 5000, "0-1-41")
    assert rebased.snapshot_end_offset == BinlogOffset("binlog.000001", 9500, "0-1-46")
    assert [i.high_watermark.pos for i in rebased.finished[T]] == [4000, 9000]
    assert offsets_without_gtid(rebased) == []


def test_offsets_without_gtid_cannot_move() -> None:
    checkpoint = Checkpoint(binlog_offset=BinlogOffset("binlog.000002", 4))
    assert offsets_without_gtid(checkpoint) == [BinlogOffset("binlog.000002", 4)]


def test_bad_identity_is_a_checkpoint_error() -> None:
    document = encode(_checkpoint(source=OLD))
    document["source"] = {"serverId": "one"}
    with pytest.raises(ValueError, match="bad source identity"):
        decode(document)


def test_missing_transactions_per_domain_and_server() -> None:
    state = {(0, 1): 120, (0, 2): 130, (1, 1): 5}
    assert missing_transactions("0-1-100,1-1-5", state) == []
    assert missing_transactions("0-1-150", state) == ["0-1-150 (it has 0-1-120 in domain 0)"]
    assert missing_transactions("0-3-1", state) == ["0-3-1 (it has nothing from server 3 in domain 0)"]
    assert same_gtid_position("0-1-5,1-2-3", "1-2-3, 0-1-5")


def test_stream_gtid_position_follows_gtid_events() -> None:
    known = _GtidPosition("1-1-3,0-1-5")
    known.add(0, "0-2-6")
    assert known.at(BinlogOffset("b.000001", 10)).gtid_set == "0-2-6,1-1-3"
    unknown = _GtidPosition("")
    unknown.add(0, "0-2-6")
    assert unknown.at(BinlogOffset("b.000001", 10)).gtid_set == ""  # never a partial position
