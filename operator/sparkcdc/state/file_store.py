"""The local-mode checkpoint store: one JSON file per pipeline in ``--state-dir``.

Local runs have no Kubernetes epoch, so the directory keeps one: ``<pipeline>.fence.json`` holds
an owner id (random, made with the file) and the epoch of the last run, which every run raises
by one under a file lock. Two runs of a pipeline on one directory therefore get different
epochs, and the sink's fence (sinks/jdbc/fence.py) stops the older one; a new directory is a new owner.
"""

from __future__ import annotations

import fcntl
import json
import os
import uuid
from pathlib import Path
from typing import Any

from sparkcdc.core.checkpoint import Checkpoint, decode, encode
from sparkcdc.core.fence import Fence
from sparkcdc.state.base import CheckpointStore, StateError


class FileCheckpointStore(CheckpointStore):
    def __init__(self, state_dir: Path, pipeline: str) -> None:
        self.path = state_dir / f"{pipeline}.checkpoint.json"
        self.fence_path = state_dir / f"{pipeline}.fence.json"

    def next_fence(self, pipeline_key: str) -> Fence:
        """This run's fence: the directory's owner id and the epoch after the last run's."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with (self.path.parent / f"{self.fence_path.name}.lock").open("a") as lock:
                fcntl.flock(lock.fileno(), fcntl.LOCK_EX)  # released when the file closes
                stored = self._read_fence()
                fence = Fence(
                    pipeline_key, stored.get("owner") or uuid.uuid4().hex, int(stored.get("epoch", 0)) + 1
                )
                self._write_atomically(self.fence_path, {"owner": fence.owner, "epoch": fence.epoch})
        except OSError as err:
            raise StateError(f"cannot write the local epoch {self.fence_path}: {err.strerror}") from err
        return fence

    def _read_fence(self) -> dict[str, Any]:
        try:
            stored: dict[str, Any] = json.loads(self.fence_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise StateError(
                f"the local epoch {self.fence_path} is not valid JSON; remove it (the next run "
                "becomes a new owner of the pipeline's sink fence)"
            ) from err
        return stored

    def load(self) -> Checkpoint | None:
        document = self.load_document()
        return None if document is None else decode(document)

    def save(self, checkpoint: Checkpoint) -> None:
        self.save_document(encode(checkpoint))

    def load_document(self) -> dict[str, Any] | None:
        """The stored JSON document as it is (``load`` decodes it)."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except OSError as err:
            raise StateError(f"cannot read the checkpoint {self.path}: {err.strerror}") from err
        try:
            document: dict[str, Any] = json.loads(text)
        except json.JSONDecodeError as err:
            raise StateError(
                f"the checkpoint {self.path} is not valid JSON ({err.msg}); it was not written by sparkcdc "
                "or was edited by hand — restore it or remove it to start over"
            ) from err
        return document

    def save_document(self, document: dict[str, Any]) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._write_atomically(self.path, document)
        except OSError as err:
            raise StateError(f"cannot write the checkpoint {self.path}: {err.strerror}") from err

    @staticmethod
    def _write_atomically(path: Path, document: dict[str, Any]) -> None:
        tmp = path.with_name(path.name + ".tmp")
        with tmp.open("w", encoding="utf-8") as out:
            json.dump(document, out, separators=(",", ":"))
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
