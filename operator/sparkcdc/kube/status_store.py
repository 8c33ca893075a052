"""The in-cluster checkpoint store: ``status.checkpoint`` of the CdcPipeline, fenced by the epoch.

Every write is a JSON merge patch of the status subresource carrying the ``resourceVersion`` it
was computed from, and it is computed only after checking that ``status.driver.epoch`` is this
driver's epoch. The apiserver refuses the patch if anything changed in between, so a driver
whose epoch was superseded can never write: it gets :class:`FencedError` (architecture §3 rule 6).

Writes are rate-limited to one per ``min_interval`` seconds: a save within the interval is kept
and written (the newest one only) at the next allowed moment by a background thread; ``flush``
writes at once. A checkpoint never claims more than the sink holds, so writing it later is safe.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

from kubernetes.client.exceptions import ApiException

from sparkcdc.api.resource import API_VERSION
from sparkcdc.core.checkpoint import Checkpoint, decode, encode
from sparkcdc.core.fence import FencedError as AnyFencedError
from sparkcdc.kube.client import ConflictError, KubeClient
from sparkcdc.kube.status_codec import (
    SPILL_TAG,
    chunk_data,
    decode_value,
    encode_value,
    is_spill_pointer,
    join_chunks,
    merge_diff,
    spill_chunks,
)
from sparkcdc.state.base import CheckpointStore, StateError

SPILL_BYTES = 200 * 1024  # status stays well under etcd's object limit with room for the rest
MAX_CONFLICTS = 20
CARRY_KEYS = ("resnapshotNonce",)  # kept across saves of documents that do not mention them

Obj = dict[str, Any]
StatusFields = Callable[[Obj], Obj]  # the status being patched -> fields to set


class FencedError(StateError, AnyFencedError):
    """``status.driver.epoch`` is not this writer's epoch: a newer driver took over. Also a
    ``core.fence.FencedError``, as is the sink's refusal (sinks/jdbc/fence.py)."""


def epoch_of(obj: Obj) -> int:
    return int(((obj.get("status") or {}).get("driver") or {}).get("epoch") or 0)


class StatusCheckpointStore(CheckpointStore):
    def __init__(
        self,
        kube: KubeClient,
        namespace: str,
        name: str,
        epoch: int,
        *,
        min_interval: float = 1.0,
        spill_bytes: int = SPILL_BYTES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._kube = kube  # every API call goes through it: one status patch for both programs
        self.namespace, self.name, self.epoch = namespace, name, epoch
        self._min_interval, self._spill_bytes, self._clock = min_interval, spill_bytes, clock
        self._cond = threading.Condition(threading.RLock())
        self._obj: Obj | None = None  # the object as of our last read or write
        self._pending: tuple[Obj | None, Obj | None] | None = None  # (document, progress)
        self._others: list[StatusFields] = []  # further status fields, with the next write
        self._carry: Obj = {}
        self._last_write = float("-inf")
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._closed = False
        self.writes = 0  # successful patches, for tests and metrics
        self.conflicts = 0

    # -- CheckpointStore -----------------------------------------------------------------------------
    def load(self) -> Checkpoint | None:
        document = self.load_document()
        return None if document is None else decode(document)

    def save(self, checkpoint: Checkpoint, progress: Obj | None = None) -> None:
        """Store ``checkpoint`` (and ``status.progress``) now, or at the next allowed moment."""
        self.save_document(encode(checkpoint), progress)

    # -- the stored document ---------------------------------------------------------------------
    def load_document(self) -> Obj | None:
        """The checkpoint's JSON document as stored (the retained-state copy moves it verbatim)."""
        with self._cond:
            self._raise_error()
            if self._pending is not None and self._pending[0] is not None:
                # A load sees the last save: a document the rate limit still holds back is written
                # first (a driver that starts over saves and loads again at once).
                self._write_pending()
            self._obj = self._read()
            document = read_checkpoint(self._kube, self._obj)
            if document is not None:
                self._carry = {k: document[k] for k in CARRY_KEYS if k in document}
            return document

    def save_document(self, document: Obj, progress: Obj | None = None) -> None:
        """Store ``document`` (and ``status.progress``) now, or at the next allowed moment."""
        self._enqueue(document, progress)

    def carried(self, key: str) -> Any:
        """The value of a carried key (``carry``) in the document last loaded or carried."""
        with self._cond:
            return self._carry.get(key)

    # -- extras ----------------------------------------------------------------------------------
    def update_progress(self, progress: Obj) -> None:
        """``status.progress`` (camelCase), written with the next checkpoint or on its own."""
        self._enqueue(None, progress)

    def update_status(self, fields: StatusFields) -> None:
        """Further status fields of the driver's (``verification``, its condition), with the next
        write: ``fields`` maps the status being patched to the fields to set, so that a list such as
        ``conditions`` is computed again from the operator's latest one after a conflict."""
        with self._cond:
            self._others.append(fields)
        self._enqueue(None, None)

    def last_status(self) -> Obj:
        """``status`` of the object as of the last read or write (empty before any)."""
        with self._cond:
            status: Obj = dict((self._obj or {}).get("status") or {})
            return status

    def carry(self, key: str, value: Any) -> None:
        """Keep ``key`` in every saved document (e.g. the resnapshot nonce already applied)."""
        with self._cond:
            self._carry[key] = value

    def flush(self) -> None:
        """Write what is pending now; raises the error of a background write, if any."""
        with self._cond:
            self._raise_error()
            if self._pending is not None:
                self._write_pending()

    def close(self) -> None:
        try:
            self.flush()
        finally:
            with self._cond:
                self._closed = True
                self._cond.notify_all()
            if self._thread is not None:
                self._thread.join(timeout=10)

    # -- rate limiting ---------------------------------------------------------------------------
    def _enqueue(self, document: Obj | None, progress: Obj | None) -> None:
        with self._cond:
            self._raise_error()
            old_doc, old_progress = self._pending or (None, None)
            self._pending = (document if document is not None else old_doc, progress or old_progress)
            if self._pending == (None, None) and not self._others:
                self._pending = None
                return
            if self._clock() >= self._last_write + self._min_interval:
                self._write_pending()
                return
            self._start_thread()
            self._cond.notify_all()

    def _start_thread(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"checkpoint-{self.name}", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        with self._cond:
            while not self._closed:
                if self._pending is None or self._error is not None:
                    self._cond.wait()
                    continue
                delay = self._last_write + self._min_interval - self._clock()
                if delay > 0:
                    self._cond.wait(delay)
                    continue
                try:
                    self._write_pending()
                except BaseException as err:  # surfaced by the next save or flush
                    self._error = err

    def _raise_error(self) -> None:
        if self._error is not None:
            raise self._error

    def _write_pending(self) -> None:
        assert self._pending is not None
        document, progress = self._pending
        others, self._pending, self._others = self._others, None, []
        try:
            self._write(document, progress, others)
        except FencedError:
            raise
        except BaseException:
            self._pending, self._others = (document, progress), others + self._others  # a flush retries
            raise
        finally:
            self._last_write = self._clock()

    # -- the fenced write ------------------------------------------------------------------------
    def _write(self, document: Obj | None, progress: Obj | None, others: list[StatusFields]) -> None:
        if document is not None:
            document = {**self._carry, **document}
        created: list[str] = []
        for _ in range(MAX_CONFLICTS):
            obj = self._obj if self._obj is not None else self._read()
            if epoch_of(obj) != self.epoch:
                self._delete_maps(created)
                raise FencedError(
                    f"CdcPipeline {self.namespace}/{self.name} is now driven by epoch {epoch_of(obj)}; "
                    f"this driver (epoch {self.epoch}) stops without writing"
                )
            status = obj.get("status") or {}
            patch: Obj = {}
            if document is not None:
                stored = self._stored_form(document, obj, created)
                patch["checkpoint"] = merge_diff(status.get("checkpoint"), stored)
            if progress is not None:
                patch["progress"] = merge_diff(status.get("progress"), progress)
            current, touched = dict(status), set[str]()
            for fields in others:
                update = fields(current)
                current.update(update)
                touched.update(update)
            for key in touched:
                patch[key] = merge_diff(status.get(key), current[key])
            patch = {k: v for k, v in patch.items() if v != {}}
            if not patch:
                return
            try:
                self._obj = self._patch(obj, patch)
            except ConflictError:
                self.conflicts += 1
                self._obj = None
                continue
            self.writes += 1
            self._drop_replaced_maps(status.get("checkpoint"), self._obj)
            return
        raise StateError(f"CdcPipeline {self.namespace}/{self.name}: gave up after {MAX_CONFLICTS} conflicts")

    def _read(self) -> Obj:
        try:
            obj = self._kube.get_pipeline(self.namespace, self.name)
        except ApiException as err:
            raise StateError(f"cannot read CdcPipeline {self.namespace}/{self.name}: {err.reason}") from err
        if obj is None:
            raise StateError(f"cannot read CdcPipeline {self.namespace}/{self.name}: Not Found")
        return obj

    def _patch(self, obj: Obj, status_patch: Obj) -> Obj:
        version = obj["metadata"]["resourceVersion"]
        try:
            return self._kube.patch_pipeline_status(self.namespace, self.name, status_patch, version)
        except ApiException as err:
            raise StateError(
                f"cannot write the checkpoint of {self.namespace}/{self.name}: {err.reason}"
            ) from err

    # -- spilling into ConfigMaps ----------------------------------------------------------------
    def _stored_form(self, document: Obj, obj: Obj, created: list[str]) -> Any:
        encoded = encode_value(document)
        if len(json.dumps(encoded, separators=(",", ":"))) <= self._spill_bytes:
            return encoded
        sha, chunks = spill_chunks(document)
        names = [f"{self.name}-ckpt-{self.epoch}-{sha[:10]}-{i}" for i in range(len(chunks))]
        for name, chunk in zip(names, chunks, strict=True):
            if name not in created:
                self._create_map(name, chunk, obj)
                created.append(name)
        return {SPILL_TAG: {"configMaps": names, "sha256": sha}}

    def _create_map(self, name: str, chunk: bytes, obj: Obj) -> None:
        owner = {
            "apiVersion": API_VERSION, "kind": "CdcPipeline", "name": self.name,
            "uid": obj["metadata"]["uid"], "controller": False, "blockOwnerDeletion": False,
        }  # fmt: skip
        labels = {
            "app.kubernetes.io/name": "sparkcdc", "app.kubernetes.io/component": "checkpoint",
            "sparkcdc.io/pipeline": self.name,
        }  # fmt: skip
        body = {
            "metadata": {
                "name": name,
                "namespace": self.namespace,
                "labels": labels,
                "ownerReferences": [owner],
            },
            "binaryData": chunk_data(chunk),
        }
        try:  # same name = same epoch and content: one already there is this one
            self._kube.create_config_map(body)
        except ApiException as err:
            raise StateError(f"cannot spill the checkpoint into ConfigMap {name}: {err.reason}") from err

    def _drop_replaced_maps(self, before: Any, after: Obj) -> None:
        now = ((after.get("status") or {}).get("checkpoint")) or {}
        keep = set(now.get(SPILL_TAG, {}).get("configMaps", [])) if is_spill_pointer(now) else set()
        old = before.get(SPILL_TAG, {}).get("configMaps", []) if is_spill_pointer(before) else []
        self._delete_maps([n for n in old if n not in keep])

    def _delete_maps(self, names: list[str]) -> None:
        for name in names:
            self._kube.delete_config_map(self.namespace, name)


def read_checkpoint(kube: KubeClient, obj: Obj) -> Obj | None:
    """The checkpoint document of a CdcPipeline object, following a spill pointer if there is one."""
    stored = (obj.get("status") or {}).get("checkpoint")
    if stored is None:
        return None
    if not is_spill_pointer(stored):
        document: Obj = decode_value(stored)
        return document
    pointer = stored[SPILL_TAG]
    namespace = obj["metadata"]["namespace"]
    data = []
    for name in pointer.get("configMaps", []):
        try:
            found = kube.get_config_map(namespace, name)
        except ApiException as err:
            raise StateError(
                f"the spilled checkpoint ConfigMap {namespace}/{name} is unreadable: {err.reason}"
            ) from err
        if found is None:
            raise StateError(f"the spilled checkpoint ConfigMap {namespace}/{name} is missing")
        data.append(found.get("binaryData") or {})
    return join_chunks(data, str(pointer.get("sha256", "")))
