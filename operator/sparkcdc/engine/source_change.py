"""At every start: is the source the server that wrote the checkpoint? If not, follow it by GTID.

A checkpoint's offsets are binlog files and positions of the server that wrote them. Resuming
at them on another server (a promoted replica, a backup restored behind the same address, a
repointed DNS name) would silently skip or repeat changes, so before anything is read:

1. The source's identity (``server_id``, ``server_uuid`` / GTID domain) and the GTID position
   at the checkpoint's latest offset are compared with the checkpoint's (mysql/failover.py).
   Same server, same history: go on.
2. Otherwise, when every checkpointed offset carries its GTID position and the new server has
   binlogged all the transactions of the latest one (a replica with ``log_slave_updates`` that
   was not behind), each offset is moved to the place right after the same GTID position on the
   new server (core/source_identity.py ``rebase``) and the pipeline resumes there — the snapshot
   handoff filter included, since its watermarks are moved in order.
3. Else (GTIDs not recorded, a MySQL source, a replica that lagged, an older backup) it is
   refused with both servers named — or, with ``spec.startup.onSourceChange: resnapshot``, the
   checkpoint's progress is forgotten and the pipeline starts over on the new server as its
   startup mode says (``initial``: a new snapshot).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sparkcdc.core.checkpoint import Checkpoint
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.source_identity import SourceIdentity, checkpoint_offsets, offsets_without_gtid, rebase
from sparkcdc.engine.listener import PipelineListener
from sparkcdc.mysql.connection import SourceConfig, connect
from sparkcdc.mysql.errors import SourceError
from sparkcdc.mysql.failover import (
    gtid_binlog_state,
    history_problem,
    map_gtid_positions,
    missing_transactions,
    read_identity,
)
from sparkcdc.mysql.flavor import ServerFlavor, detect_flavor
from sparkcdc.mysql.queries import current_offset

__all__ = ["SourceChangedError", "check_source", "follow_source", "start_over"]


class SourceChangedError(SourceError):
    """The source is not the server that wrote the checkpoint and the pipeline cannot follow."""


def start_over(checkpoint: Checkpoint, identity: SourceIdentity) -> Checkpoint:
    """The checkpoint with all progress forgotten (plans, finished splits, offsets), kept are the
    server-id range and the new source's identity."""
    return Checkpoint(server_ids=checkpoint.server_ids, source=identity)


def _why_not_movable(
    conn: Any, checkpoint: Checkpoint, latest: BinlogOffset, flavor: ServerFlavor
) -> str | None:
    if not flavor.is_mariadb:
        return "following a MySQL source to another server by GTID is not supported yet"
    lacking = offsets_without_gtid(checkpoint)
    if lacking:
        return (
            f"the checkpoint's offset {lacking[0]} carries no GTID position (written by an older "
            "sparkcdc, or read without GTIDs), so it cannot be found on another server"
        )
    missing = missing_transactions(latest.gtid_set, gtid_binlog_state(conn))
    if missing:
        return (
            f"the new server lacks transactions the pipeline has already applied: {'; '.join(missing)} "
            "(a replica that was behind, or a source restored from an older backup)"
        )
    return None


def _refusal(old: SourceIdentity, new: SourceIdentity, latest: BinlogOffset, reason: str) -> str:
    return (
        f"the source changed: the checkpoint was written by {old.describe()}, but the source is now "
        f"{new.describe()}: {reason}. Resuming at {latest} (GTID position {latest.gtid_set or 'unknown'}) "
        "there would lose or repeat changes. Point spec.source at a server that has the checkpoint's "
        "transactions, or set spec.startup.onSourceChange: resnapshot to start over on this server"
    )


def follow_source(
    conn: Any,
    checkpoint: Checkpoint,
    identity: SourceIdentity,
    flavor: ServerFlavor,
    on_change: str,
    listener: PipelineListener,
) -> Checkpoint:
    """The checkpoint to resume from on the server behind ``conn`` (see the module docstring);
    raises ``SourceChangedError`` when it cannot be followed and ``on_change`` is ``fail``."""
    offsets = checkpoint_offsets(checkpoint)
    if not offsets:
        return replace(checkpoint, source=identity)
    latest = max(offsets, key=BinlogOffset.sort_key)
    problem = history_problem(conn, latest, flavor)
    # A checkpoint of an older release names no server: take this one's, unless its binlog
    # plainly is not the one the offsets were read from.
    old = checkpoint.source or (
        identity if problem is None else SourceIdentity(0, flavor="an unrecorded server")
    )
    same = old.same_server(identity)
    if same and problem is None:
        return replace(checkpoint, source=identity)
    if same:
        # The same ids with another binlog: its GTIDs may name other transactions than ours
        # (a restored backup that wrote again), so they cannot be followed.
        reason: str | None = (
            f"{problem}, so it is not the binlog the checkpoint was read from (a source restored from "
            "an older backup, or a binlog that was reset)"
        )
    else:
        reason = _why_not_movable(conn, checkpoint, latest, flavor)
    if reason is None:
        try:
            now = current_offset(conn, flavor)
            moved = map_gtid_positions(conn, (o.gtid_set for o in offsets), now)
        except SourceError as err:
            reason = f"its binlog does not hold the checkpoint's GTID positions ({err})"
        else:
            rebased = rebase(checkpoint, {o: moved[o.gtid_set] for o in offsets}, identity)
            listener.message(
                f"the source changed from {old.describe()} to {identity.describe()}"
                + (f" ({problem})" if problem else "")
                + f"; resuming by GTID position {latest.gtid_set} at {moved[latest.gtid_set]}"
            )
            return rebased
    assert reason is not None
    message = _refusal(old, identity, latest, reason)
    if on_change != "resnapshot":
        raise SourceChangedError(message)
    listener.warning(
        message.split(". Point")[0] + "; starting over on this server (onSourceChange: resnapshot)"
    )
    return start_over(checkpoint, identity)


def check_source(
    source: SourceConfig, stored: Checkpoint | None, on_change: str, listener: PipelineListener
) -> tuple[SourceIdentity, Checkpoint | None]:
    """The identity of the server behind ``source`` and the checkpoint to resume from there
    (``follow_source``; None when there is no checkpoint yet)."""
    conn = connect(source)
    try:
        flavor = detect_flavor(conn)
        identity = read_identity(conn, flavor, source.address)
        if stored is None:
            return identity, None
        return identity, follow_source(conn, stored, identity, flavor, on_change, listener)
    finally:
        conn.close()
