"""Which server wrote the checkpoint's binlog positions, and moving them to another server.

A binlog file and position only mean something on the server that wrote them: after a failover,
a restored backup or a repointed DNS name, the same ``binlog.000012:4711`` names a different
place, or none. So the checkpoint records the source's identity (``server_id``, MySQL's
``server_uuid``, MariaDB's GTID domain), and every offset it holds carries the GTID position
at that point. When the server behind the address is not the one that wrote the checkpoint,
the offsets are moved to the new server by their GTIDs (``rebase``): the transactions before
an offset are the same on every server of a GTID replication topology, only their places
differ. Looking the GTIDs up is the server's business (mysql/failover.py); this module is pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from sparkcdc.core.jsoncodec import CheckpointError
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.splits import FinishedSplitInfo

if TYPE_CHECKING:
    from sparkcdc.core.checkpoint import Checkpoint

__all__ = ["SourceIdentity", "checkpoint_offsets", "offsets_without_gtid", "rebase"]


@dataclass(frozen=True)
class SourceIdentity:
    """What tells one source server from another (no credentials: it goes into the status)."""

    server_id: int
    server_uuid: str = ""  # MySQL only; MariaDB has none
    gtid_domain_id: int | None = None  # MariaDB only
    flavor: str = ""  # "MariaDB 10.11.6", for messages
    address: str = ""  # host:port it was reached at, for messages

    def same_server(self, other: SourceIdentity) -> bool:
        """The same server_id (and server_uuid where both have one). Not proof of the same
        history: a backup restored behind the same address has the same ids (see
        mysql/failover.py for the position check that tells them apart)."""
        if self.server_id != other.server_id:
            return False
        return not (self.server_uuid and other.server_uuid and self.server_uuid != other.server_uuid)

    def describe(self) -> str:
        parts = [f"server_id {self.server_id}"]
        if self.server_uuid:
            parts.append(f"server_uuid {self.server_uuid}")
        if self.gtid_domain_id is not None:
            parts.append(f"gtid_domain_id {self.gtid_domain_id}")
        where = f" at {self.address}" if self.address else ""
        kind = f"{self.flavor} " if self.flavor else ""
        return f"{kind}{where.strip()} ({', '.join(parts)})".strip()

    def encode(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"serverId": self.server_id}
        if self.server_uuid:
            doc["serverUuid"] = self.server_uuid
        if self.gtid_domain_id is not None:
            doc["gtidDomainId"] = self.gtid_domain_id
        if self.flavor:
            doc["flavor"] = self.flavor
        if self.address:
            doc["address"] = self.address
        return doc

    @classmethod
    def decode(cls, doc: Any) -> SourceIdentity | None:
        if doc is None:
            return None
        if not isinstance(doc, dict) or not isinstance(doc.get("serverId"), int):
            raise CheckpointError(f"bad source identity {doc!r}")
        domain = doc.get("gtidDomainId")
        return cls(
            int(doc["serverId"]),
            str(doc.get("serverUuid", "")),
            None if domain is None else int(domain),
            str(doc.get("flavor", "")),
            str(doc.get("address", "")),
        )


def checkpoint_offsets(checkpoint: Checkpoint) -> set[BinlogOffset]:
    """Every binlog offset the checkpoint holds: the committed one, the snapshot's end and each
    finished split's high watermark."""
    found = {i.high_watermark for i in checkpoint.all_finished_infos()}
    found.update(o for o in (checkpoint.binlog_offset, checkpoint.snapshot_end_offset) if o is not None)
    return found


def offsets_without_gtid(checkpoint: Checkpoint) -> list[BinlogOffset]:
    """The checkpoint's offsets that cannot be moved to another server: they carry no GTID."""
    return sorted((o for o in checkpoint_offsets(checkpoint) if not o.gtid_set), key=BinlogOffset.sort_key)


def rebase(
    checkpoint: Checkpoint, moved: Mapping[BinlogOffset, BinlogOffset], identity: SourceIdentity
) -> Checkpoint:
    """The checkpoint with every offset replaced by its place on the server ``identity``.

    ``moved`` maps each of ``checkpoint_offsets`` to the position right after the same GTID
    position on the new server. Order is kept (GTIDs of one topology are binlogged in the same
    order everywhere), so the handoff filter of a running snapshot still holds: an event is
    applied to a split's rows exactly when it was after the split's high watermark.
    """

    def move(offset: BinlogOffset | None) -> BinlogOffset | None:
        return None if offset is None else moved[offset]

    def move_info(info: FinishedSplitInfo) -> FinishedSplitInfo:
        return replace(info, high_watermark=moved[info.high_watermark])

    return replace(
        checkpoint,
        finished={t: tuple(move_info(i) for i in infos) for t, infos in checkpoint.finished.items()},
        binlog_offset=move(checkpoint.binlog_offset),
        snapshot_end_offset=move(checkpoint.snapshot_end_offset),
        source=identity,
    )
