"""The driver's one poll of its own CdcPipeline, shared by every part that follows the spec.

Two parts of ``sparkcdc driver`` react to spec edits while the pipeline streams: verification
(``verify_loop.py``: a new ``verifyNonce``) and the table selection the streamer follows
(``spec_watch.py``: ``source.tables``, ``excludeTables``, ``resnapshotNonce``). Rather than each
polling the API server, one background thread reads ``metadata.generation`` (a metadata-only read,
so polling stays cheap with a big checkpoint in status), reads the whole object only when the spec
changed, and hands each newly read object to its readers. Verification reads the latest object
from here too, so a verification run that takes minutes does not hold up the spec watch.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from sparkcdc.kube.client import KubeClient

__all__ = ["PipelinePoll"]

log = logging.getLogger("sparkcdc.driver.poll")
Obj = dict[str, Any]
Reader = Callable[[Obj], None]


class PipelinePoll:
    """Polls the CdcPipeline ``first`` was read as; see the module docstring."""

    def __init__(self, kube: KubeClient, first: Obj, *, poll_seconds: float = 2.0) -> None:
        self._kube, self._poll = kube, poll_seconds
        md = first["metadata"]
        self._namespace, self._name = md["namespace"], md["name"]
        self._lock = threading.Lock()
        self._obj = first
        self._readers: list[Reader] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="sparkcdc-spec-poll", daemon=True)

    def subscribe(self, reader: Reader) -> None:
        """``reader`` gets every object read from now on (from the poll's thread; never blocking)."""
        self._readers.append(reader)

    def latest(self) -> Obj:
        """The object as last read (no API call)."""
        with self._lock:
            return self._obj

    def refresh(self) -> Obj:
        """Poll now: the object, read again and handed to the readers when its generation changed."""
        generation = self._kube.pipeline_generation(self._namespace, self._name)
        if generation == self.latest()["metadata"].get("generation"):
            return self.latest()
        obj = self._kube.get_pipeline(self._namespace, self._name)
        if obj is None:  # deleted: the operator stops this driver
            return self.latest()
        with self._lock:
            self._obj = obj
        for reader in self._readers:
            try:
                reader(obj)
            except Exception:  # one reader's bug must not starve the others
                log.exception("a reader of the CdcPipeline's spec failed")
        return obj

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _loop(self) -> None:
        while not self._stop.wait(self._poll):
            try:
                self.refresh()
            except Exception as err:  # an unreachable API server: try again at the next poll
                log.warning("reading CdcPipeline %s/%s failed: %s", self._namespace, self._name, err)
