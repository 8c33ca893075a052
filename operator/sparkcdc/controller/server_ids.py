"""The server-id ranges in use, per source host, kept in memory by the operator.

Assigning a range to a new pipeline must not overlap any other pipeline's on the same host. Listing
every pipeline for each assignment costs O(pipelines) API work per new pipeline (and serialised
them all); instead one list fills this index on first use, and from then on every reconciled object
(``observe``), every range the operator hands out (``reserve``, before its status patch lands) and
every deletion (``forget``) keeps it current. The operator runs as a single replica, so its own
assignments and what it observes are all there is.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from sparkcdc.api.source import parse_server_id_range

Obj = Mapping[str, Any]
Range = tuple[int, int]


def range_of(obj: Obj) -> tuple[str, Range] | None:
    """(source host, server-id range) of a CdcPipeline object: the spec's, else the assigned one."""
    source = (obj.get("spec") or {}).get("source") or {}
    text = source.get("serverId") or (obj.get("status") or {}).get("serverIdRange")
    if not text or not source.get("host"):
        return None
    try:
        return str(source["host"]), parse_server_id_range(str(text))
    except ValueError:
        return None


class ServerIdIndex:
    def __init__(self, list_all: Callable[[], Iterable[Obj]]) -> None:
        self._list_all = list_all
        self._ranges: dict[str, tuple[str, Range]] | None = None  # uid -> (host, range)
        self._lock = threading.Lock()

    def in_use(self, host: str, uid: str) -> tuple[Range, ...]:
        """Ranges of the other pipelines reading ``host``."""
        with self._lock:
            if self._ranges is None:
                loaded: dict[str, tuple[str, Range]] = {}
                for obj in self._list_all():
                    found = range_of(obj)
                    if found is not None:
                        loaded[str(obj["metadata"].get("uid", ""))] = found
                self._ranges = loaded
            return tuple(sorted(r for u, (h, r) in self._ranges.items() if h == host and u != uid))

    def observe(self, obj: Obj) -> None:
        """Record what an object read from the API says (its spec's or its assigned range)."""
        uid, found = str(obj["metadata"].get("uid", "")), range_of(obj)
        with self._lock:
            if self._ranges is None:
                return  # the first use lists everything anyway
            if found is not None:  # (none: keep a reservation whose patch is not seen yet)
                self._ranges[uid] = found

    def reserve(self, uid: str, host: str, text: str) -> None:
        """A range just assigned to ``uid``, before its status patch is seen."""
        with self._lock:
            if self._ranges is not None:
                self._ranges[uid] = (host, parse_server_id_range(text))

    def forget(self, uid: str) -> None:
        with self._lock:
            if self._ranges is not None:
                self._ranges.pop(uid, None)
