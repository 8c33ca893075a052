"""The live binlog stream decoded by ``sparkcdc-binlogdec`` in follow mode (binlogdec/follow.go).

python-mysql-replication decodes row events one by one in Python, which caps the live path far
below what a busy source writes. In follow mode the Go decoder reads the stream as a replica from
an offset, reduces whole transactions to the last image per key and answers one batch per line,
each ending at a transaction boundary. A thread of this process reads the lines and converts the
surviving rows to canonical values (the same converters as catch-up ranges: native.py) onto a
bounded queue, so the decoder decodes, this thread converts and the caller's sink commits at the
same time; a caller that commits slowly fills the queue (bounded by the events it holds) and the
pipe, which slows the decoder instead of growing memory.

A DDL statement comes as :class:`NativeDdl` for the caller to judge with the same rules as the
Python reader (the sink's own DDL on a shared server concerns no captured table). Where the stream
holds something the decoder does not reproduce exactly (a column count that is not the
definition's, a partial row image), it answers the batches up to the last boundary before it and
stops with the reason: :class:`NativeStopped`. The caller reads on from there with
python-mysql-replication.
"""

from __future__ import annotations

import collections
import contextlib
import json
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from sparkcdc.core.merge import BackfillChanges
from sparkcdc.core.microbatch import ChangelogRecord
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.binlog.native import (
    collector_paused,
    logged_changes,
    native_request,
    parse_answer,
    reduced_changes,
)
from sparkcdc.mysql.binlog.reader import DdlStatement
from sparkcdc.mysql.connection import SourceConfig
from sparkcdc.mysql.errors import SourceError
from sparkcdc.mysql.schema import TableSchema

__all__ = ["FollowSettings", "NativeBatch", "NativeDdl", "NativeFollower", "NativeStopped", "WaitingItems"]


@dataclass(frozen=True)
class FollowSettings:
    batch_events: int
    batch_millis: int
    heartbeat_seconds: int
    # Events of converted batches waiting for the caller (0: four full batches); one batch always
    # fits. Counted in events, not batches: a caller gathering what waits (engine/batch_sizing.py)
    # finds a backlog's worth even when the decoder cut each batch by its interval, not its size.
    capacity_events: int = 0
    changes: bool = False  # every change in order (a sink that keeps a log), not net effects
    lines: bool = False  # with changes: the changelog's lines, rendered by the decoder where it can
    load: bool = False  # without changes: the upserts' LOAD DATA text too, where the decoder can


@dataclass(frozen=True)
class NativeBatch:
    """Whole transactions up to ``end``, reduced per table (``changes``), or, for a follower of
    every change, each table's changes in order (``changelog``)."""

    end: BinlogOffset
    events: int
    newest_ms: int  # the newest event time of its rows; 0 without rows
    changes: dict[TableId, BackfillChanges]
    changelog: dict[TableId, Sequence[ChangelogRecord]] = field(default_factory=dict)


@dataclass(frozen=True)
class NativeDdl:
    """A DDL statement between ``at`` (the previous batch's end) and ``end``: the caller judges
    whether it concerns its tables (the Go decoder reads on past it either way)."""

    at: BinlogOffset
    statement: DdlStatement


@dataclass(frozen=True)
class NativeStopped:
    """The decoder stopped at ``end`` (the last batch's end, or the start) before something it does
    not handle exactly; the stream goes on from ``end`` with python-mysql-replication."""

    end: BinlogOffset
    why: str


Item = NativeBatch | NativeDdl | NativeStopped


class NativeFollower:
    """The decoder in follow mode, its answer read and converted by a thread of its own."""

    def __init__(
        self,
        binary: Path,
        cfg: SourceConfig,
        server_id: int,
        schemas: Mapping[TableId, TableSchema],
        start: BinlogOffset,
        flavor: str,
        settings: FollowSettings,
        expect_server_id: int | None = None,
    ) -> None:
        """``expect_server_id``: the source's @@server_id checked on the replication connection
        itself (a failover behind the address ends the decoder instead of being read)."""
        lines, load = settings.changes and settings.lines, not settings.changes and settings.load
        request = native_request(cfg, server_id, schemas, start, flavor, lines, load)
        request["expectServerId"] = expect_server_id or 0
        # MariaDB's GTID position at the start, where known: every batch's end then has its own.
        request["startGtid"] = start.gtid_set
        request["follow"] = {
            "batchEvents": settings.batch_events,
            "batchMillis": settings.batch_millis,
            "heartbeatSeconds": settings.heartbeat_seconds,
            "changes": settings.changes,
        }
        self._request = json.dumps(request).encode()
        self._binary, self._schemas, self._start = binary, dict(schemas), start
        self._logs = settings.changes
        capacity = settings.capacity_events or 4 * max(1, settings.batch_events)
        self._queue = WaitingItems(capacity)
        self._proc: subprocess.Popen[bytes] | None = None
        self._thread = threading.Thread(target=self._read, name="sparkcdc-binlogdec-follow", daemon=True)
        self._closing = threading.Event()

    def start(self) -> None:
        self._proc = subprocess.Popen(
            [str(self._binary)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        assert self._proc.stdin is not None
        self._proc.stdin.write(self._request)  # the password travels here, never in argv
        # Kept open: its end (close(), or this process dying) ends the decoder (follow.go).
        self._proc.stdin.flush()
        self._thread.start()

    def get(self, timeout: float) -> NativeBatch | NativeDdl | NativeStopped | None:
        """The next batch, the stop, or None when nothing came within ``timeout`` seconds; a
        failure of the decoder is raised here."""
        item = self._queue.get(timeout)
        if item is None:
            return None
        if isinstance(item, BaseException):
            raise item
        return item

    def close(self) -> None:
        self._closing.set()
        proc = self._proc
        if proc is not None and proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()  # the decoder exits when its stdin ends
        if proc is not None and proc.poll() is None:
            try:
                proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        while self._thread.is_alive():  # unblock a thread waiting for room in the queue
            if self._queue.get(0.0) is None:
                self._thread.join(timeout=0.1)

    # -- the reading thread ----------------------------------------------------------------------
    def _read(self) -> None:
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        try:
            for line in proc.stdout:
                item = self._parse(line, proc.stdout.read)
                if not self._put(item) or isinstance(item, NativeStopped):
                    return
            self._put(self._ended(proc))
        except BaseException as err:  # handed to the caller
            self._put(err)

    def _parse(self, line: bytes, read: Callable[[int], bytes]) -> Item:
        # The answer's rows are millions of lists: made, converted and dropped with the collector
        # paused, so it never scans them (once back on, its first pass would take them all).
        # ``read``: the rendered lines that follow the line (rendered.py).
        with collector_paused():
            answer = parse_answer(line)
            item = self._item(answer, read)
            del answer
        return item

    def _item(self, answer: dict[str, Any], read: Callable[[int], bytes]) -> Item:
        if "end" not in answer:  # every answer of binlogdec/follow.go has one
            raise SourceError(
                f"the binlog decoder {self._binary} answered without an end offset (keys "
                f"{sorted(answer)[:6]}): it is not the build this sparkcdc expects; rebuild it with "
                "binlogdec/build.sh or unset SPARKCDC_BINLOG_DECODER"
            )
        end = _offset(answer["end"])
        if "ddl" in answer:
            return NativeDdl(
                _offset(answer["at"]), DdlStatement(end, str(answer["schema"]), str(answer["ddl"]))
            )
        if "unsupported" in answer:
            return NativeStopped(end, str(answer["unsupported"]))
        events, newest = int(answer["events"]), int(answer["newest"]) * 1000
        if self._logs:
            return NativeBatch(end, events, newest, {}, logged_changes(self._schemas, answer["tables"], read))
        return NativeBatch(end, events, newest, reduced_changes(self._schemas, answer["tables"], read))

    def _ended(self, proc: subprocess.Popen[bytes]) -> BaseException:
        code = proc.wait()
        detail = _tail(proc.stderr)
        if self._closing.is_set():
            return SourceError("the binlog decoder was stopped")
        return SourceError(f"the binlog decoder following from {self._start} ended (exit {code}): {detail}")

    def _put(self, item: Item | BaseException) -> bool:
        while not self._closing.is_set():
            if self._queue.put(item, timeout=0.2):
                return True
        return False


class WaitingItems:
    """The follower's items for the caller, bounded by the events of the batches among them (at
    least one item always fits, so a batch larger than the bound is not stuck)."""

    def __init__(self, capacity_events: int) -> None:
        self._capacity = capacity_events
        self._items: collections.deque[tuple[Item | BaseException, int]] = collections.deque()
        self._held = 0
        self._changed = threading.Condition()

    def put(self, item: Item | BaseException, timeout: float) -> bool:
        """Queue ``item`` when there is room within ``timeout`` seconds; whether it was queued."""
        weight = max(1, item.events) if isinstance(item, NativeBatch) else 1

        def room() -> bool:
            return not self._items or self._held + weight <= self._capacity

        with self._changed:
            if not self._changed.wait_for(room, timeout):
                return False
            self._items.append((item, weight))
            self._held += weight
            self._changed.notify_all()
            return True

    def get(self, timeout: float) -> Item | BaseException | None:
        """The oldest item, or None when none came within ``timeout`` seconds."""
        with self._changed:
            if not self._changed.wait_for(lambda: bool(self._items), timeout):
                return None
            item, weight = self._items.popleft()
            self._held -= weight
            self._changed.notify_all()
            return item


def _offset(position: Mapping[str, Any]) -> BinlogOffset:
    return BinlogOffset(str(position["file"]), int(position["pos"]), str(position.get("gtid") or ""))


def _tail(stream: IO[bytes] | None) -> str:
    if stream is None:
        return ""
    return stream.read().decode("utf-8", "replace").strip()[-2000:]
