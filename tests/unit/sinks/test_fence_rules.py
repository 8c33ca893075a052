"""The fence rules (core.fence) and the local epoch that ``sparkcdc run`` takes from its state directory."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from sparkcdc.core.fence import Fence, FencedError, pipeline_key
from sparkcdc.state.file_store import FileCheckpointStore


def test_a_claim_only_raises_the_epoch_of_the_same_owner() -> None:
    fence = Fence("ns/p", "a", 3)
    assert fence.claim(None)
    assert fence.claim(("a", 2))
    assert not fence.claim(("a", 3))  # already ours
    with pytest.raises(FencedError, match="now driven by epoch 4; this driver \\(epoch 3\\)"):
        fence.claim(("a", 4))
    assert fence.claim(("b", 99))  # another object or run of the same name: the newest start wins


def test_a_write_needs_exactly_the_writers_own_fence() -> None:
    fence = Fence("ns/p", "a", 3)
    fence.check(("a", 3))
    for stored in (("a", 4), ("a", 2), ("b", 3), None):
        with pytest.raises(FencedError):
            fence.check(stored)


def test_pipeline_keys_default_the_namespace() -> None:
    assert pipeline_key(None, "p") == "default/p" and pipeline_key("ns", "p") == "ns/p"


def test_each_local_run_gets_the_next_epoch_of_its_directory(tmp_path: Path) -> None:
    store = FileCheckpointStore(tmp_path / "state", "orders")
    first, second = store.next_fence("default/orders"), store.next_fence("default/orders")
    assert (first.epoch, second.epoch) == (1, 2) and first.owner == second.owner
    assert FileCheckpointStore(tmp_path / "state", "orders").next_fence("default/orders").epoch == 3
    other_dir = FileCheckpointStore(tmp_path / "elsewhere", "orders").next_fence("default/orders")
    assert other_dir.epoch == 1 and other_dir.owner != first.owner


def test_concurrent_local_runs_never_share_an_epoch(tmp_path: Path) -> None:
    epochs: list[int] = []
    lock = threading.Lock()

    def run() -> None:
        fence = FileCheckpointStore(tmp_path, "orders").next_fence("default/orders")
        with lock:
            epochs.append(fence.epoch)

    threads = [threading.Thread(target=run) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(epochs) == list(range(1, 9))
