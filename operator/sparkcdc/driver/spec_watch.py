"""The running driver follows edits of its own spec: tables added, removed or resnapshotted.

The operator no longer replaces a streaming driver when ``spec.source.tables``,
``excludeTables`` or ``resnapshotNonce`` change (``controller/builders.py`` ``spec_hash``,
``core/reconcile.py``), so the driver has to notice them itself and hand them to its streamer
(``engine/capture_changes.py``), which takes them between batches while the other tables stream
on. In the cluster the edits come from the driver's poll of its CdcPipeline (``pipeline_poll.py``,
shared with verification); in ``sparkcdc run`` from the manifest files (:class:`ManifestWatch`).

An edit is followed only when nothing else the driver depends on changed with it (an equal
``spec_hash``): otherwise the operator replaces the driver, or locally the next start applies it.
Following half of such an edit could snapshot a new table without the transform or chunk key the
same edit gave it. A snapshot-only driver follows nothing: it does not stream, it is replaced.

A new ``resnapshotNonce`` is applied once: the nonce goes into the store when the streamer takes
the change, so its next checkpoint write records it together with the reset; a crash before that
write applies it again at the next start (``support.apply_resnapshot``), which converges.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from sparkcdc.api.errors import translate_errors
from sparkcdc.api.manifest import Manifest, ManifestError, load_manifests
from sparkcdc.api.resource import CdcPipeline
from sparkcdc.api.spec import CdcPipelineSpec
from sparkcdc.controller.builders import spec_hash
from sparkcdc.core.tables import TableId
from sparkcdc.driver.support import RESNAPSHOT_KEY, with_assigned_server_ids
from sparkcdc.engine.capture_changes import CaptureChange
from sparkcdc.engine.discovery import captures_table

if TYPE_CHECKING:  # the cluster's pieces: sparkcdc run does without the kube client
    from sparkcdc.driver.pipeline_poll import PipelinePoll
    from sparkcdc.driver.verify_loop import StoredCheckpoints
    from sparkcdc.kube.status_store import StatusCheckpointStore

__all__ = ["ManifestWatch", "Running", "SpecWatch", "capture_change", "cluster_spec_watch", "unfollowed"]

log = logging.getLogger("sparkcdc.driver.spec")


@dataclass(frozen=True)
class Running:
    """What the driver runs: its pipeline and the ``resnapshotNonce`` it applied (None: none)."""

    pipeline: CdcPipeline
    nonce: str | None = None


def _selection(spec: CdcPipelineSpec) -> tuple[frozenset[str], frozenset[str]]:
    return frozenset(spec.source.tables), frozenset(spec.source.exclude_tables)


def unfollowed(running: Running, edited: CdcPipeline) -> str | None:
    """Why the driver does not follow ``edited`` while it runs; None: it does (or there is
    nothing to follow: a ``verifyNonce``, a ``restartPolicy``)."""
    old, new = running.pipeline.spec, edited.spec
    if spec_hash(old) != spec_hash(new):
        return "it changes more than source.tables, excludeTables and resnapshotNonce"
    touched = _selection(old) != _selection(new) or old.resnapshot_nonce != new.resnapshot_nonce
    if old.startup.mode == "snapshot-only" and touched:
        return "a snapshot-only pipeline does not stream: it takes the edit at its next start"
    return None


def capture_change(
    running: Running, edited: CdcPipeline, captured: Iterable[TableId], *, resnapshots: bool = True
) -> CaptureChange | None:
    """What running ``edited`` instead takes, or None when nothing the driver follows changed.

    ``captured``: the tables the driver has planned (a ``resnapshotNonce`` without
    ``resnapshotTables`` snapshots all of them again, as ``support.apply_resnapshot``);
    ``resnapshots``: whether ``resnapshotNonce`` is followed at all (not by ``sparkcdc run``)."""
    if unfollowed(running, edited) is not None or running.pipeline.spec.startup.mode == "snapshot-only":
        return None
    spec = edited.spec
    resnapshot = resnapshots and spec.resnapshot_nonce not in (None, running.nonce)
    if not resnapshot and _selection(spec) == _selection(running.pipeline.spec):
        return None
    if not resnapshot:
        return CaptureChange(edited)
    if spec.resnapshot_tables:
        tables = [TableId.parse(t) for t in spec.resnapshot_tables]
    else:
        tables = sorted(t for t in set(captured) if captures_table(spec, t))
    return CaptureChange(edited, tuple(tables))


class SpecWatch:
    """:class:`~sparkcdc.engine.capture_changes.CaptureChanges` fed with every newly read spec.

    :meth:`offer` keeps the newest edit; :meth:`take` turns it into the change from what the
    driver runs, once. Offers come from a poll's thread, takes from the streamer's."""

    def __init__(
        self,
        running: Running,
        *,
        captured: Callable[[], Iterable[TableId]] = tuple,
        carry: Callable[[str], None] | None = None,
        say: Callable[[str], None] = log.info,
    ) -> None:
        """``carry``: records an applied ``resnapshotNonce`` with the next checkpoint write; None:
        the nonce is not followed. ``say``: where a followed edit is announced."""
        self._lock = threading.Lock()
        self._running = running
        self._edited: CdcPipeline | None = None  # offered, not taken yet
        self._nonce = running.pipeline.spec.resnapshot_nonce  # of the last offer
        self._captured, self._carry, self._say = captured, carry, say

    @property
    def running(self) -> Running:
        with self._lock:
            return self._running

    def offer(self, edited: CdcPipeline) -> None:
        """A newly read spec: due at the next take unless it cannot be followed (said why)."""
        name, nonce = edited.metadata.name, edited.spec.resnapshot_nonce
        reason = unfollowed(self.running, edited)
        if reason is not None:
            log.warning("pipeline %s: the spec edit is not followed while it runs: %s", name, reason)
        elif self._carry is None and nonce != self._nonce:
            log.warning("pipeline %s: sparkcdc run does not follow spec.resnapshotNonce", name)
        with self._lock:
            self._edited, self._nonce = edited, nonce

    def take(self) -> CaptureChange | None:
        with self._lock:
            edited, self._edited = self._edited, None
            if edited is None:
                return None
            running = self._running
            change = capture_change(running, edited, self._captured(), resnapshots=self._carry is not None)
            if change is None:
                return None
            nonce = edited.spec.resnapshot_nonce if self._carry is not None else None
            self._running = Running(edited, nonce or running.nonce)
            if self._carry is not None and nonce not in (None, running.nonce):
                self._carry(nonce)
        self._say(describe(change))
        return change


def describe(change: CaptureChange) -> str:
    source = change.pipeline.spec.source
    text = f"following the spec edit: capturing {', '.join(source.tables)}"
    if source.exclude_tables:
        text += f" except {', '.join(source.exclude_tables)}"
    if change.resnapshot:
        text += f"; snapshotting {', '.join(map(str, change.resnapshot))} again"
    return text


# -- in the cluster --------------------------------------------------------------------------------


def cluster_spec_watch(
    poll: PipelinePoll, running: CdcPipeline, store: StatusCheckpointStore, checkpoints: StoredCheckpoints
) -> SpecWatch:
    """The driver pod's watch, fed by ``poll``; the applied nonce is carried in ``store``'s
    checkpoint document (call after the checkpoint was loaded: ``support.apply_resnapshot``)."""

    def captured() -> Iterable[TableId]:
        stored = checkpoints.stored_checkpoint()
        checkpoint = None if stored is None else stored.checkpoint
        return () if checkpoint is None else checkpoint.plans

    applied = running.spec.resnapshot_nonce or store.carried(RESNAPSHOT_KEY)
    watch = SpecWatch(
        Running(running, applied), captured=captured, carry=lambda nonce: store.carry(RESNAPSHOT_KEY, nonce)
    )

    def read(obj: dict[str, Any]) -> None:
        try:
            watch.offer(with_assigned_server_ids(CdcPipeline.from_k8s(obj)))
        except ValidationError as err:  # the operator reports an invalid spec in status
            problems = "; ".join(translate_errors(err, CdcPipeline))
            log.warning("the edited spec is not valid; it is not followed: %s", problems)

    poll.subscribe(read)
    return watch


# -- sparkcdc run ----------------------------------------------------------------------------------


def manifest_files(manifest: Manifest) -> list[str]:
    """The files ``manifest`` was loaded from that define a pipeline or a Secret, in order."""
    locations = [p.location for p in manifest.pipelines] + [s.location for s in manifest.secrets.values()]
    return list(dict.fromkeys(location.rpartition("#")[0] for location in locations))


class ManifestWatch:
    """The watch of one pipeline of ``sparkcdc run``: its manifest files, read again at a take
    every ``every`` seconds (local files: it never waits on anything) and loaded, when their text
    changed, with the loader and validation of the start. An invalid edit is warned about once and
    ignored: the pipeline runs on as it was. ``resnapshotNonce`` is not followed: ``sparkcdc run``
    has no resnapshot (its checkpoint file carries no nonce)."""

    def __init__(
        self,
        files: Sequence[str],
        running: CdcPipeline,
        *,
        every: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
        say: Callable[[str], None] = log.info,
    ) -> None:
        self._files, self._every, self._clock = list(files), every, clock
        self._watch = SpecWatch(Running(running), say=say)
        self._key = (running.metadata.namespace, running.metadata.name)
        self._text: bytes | None = None  # as last read: the first read loads it (an edit since the start)
        self._due = clock()

    def take(self) -> CaptureChange | None:
        if self._clock() >= self._due:
            self._due = self._clock() + self._every
            self._check()
        return self._watch.take()

    def _check(self) -> None:
        text = self._read()
        if text == self._text:
            return
        self._text = text
        edited = self._load()
        if edited is not None:
            self._watch.offer(edited)

    def _read(self) -> bytes:
        parts = []
        for path in self._files:
            try:
                with open(path, "rb") as file:
                    parts.append(file.read())
            except OSError as err:
                parts.append(f"unreadable: {err}".encode())
        return b"\0".join(parts)

    def _load(self) -> CdcPipeline | None:
        name = self._key[1]
        try:
            manifest = load_manifests(self._files)
        except ManifestError as err:
            log.warning("pipeline %s: the edited manifest is not applied: %s", name, "; ".join(err.messages))
            return None
        for loaded in manifest.pipelines:
            if (loaded.pipeline.metadata.namespace, loaded.name) == self._key:
                return loaded.pipeline
        log.warning("pipeline %s: the edited manifest no longer defines it; it runs on as it was", name)
        return None
