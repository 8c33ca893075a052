"""The local-mode checkpoint store: one JSON file per pipeline in ``--state-dir``."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from sparkcdc.state.base import CheckpointStore, StateError


class FileCheckpointStore(CheckpointStore):
    def __init__(self, state_dir: Path, pipeline: str) -> None:
        self.path = state_dir / f"{pipeline}.checkpoint.json"

    def load(self) -> dict[str, Any] | None:
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

    def save(self, document: dict[str, Any]) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with tmp.open("w", encoding="utf-8") as out:
                json.dump(document, out, separators=(",", ":"))
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, self.path)
            dir_fd = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
        except OSError as err:
            raise StateError(f"cannot write the checkpoint {self.path}: {err.strerror}") from err
