"""The fenced checkpoint store against the real apiserver (no operator running drivers here:
the pipelines are suspended, and the tests play operator by patching status.driver.epoch)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from operator_harness import Pipelines, manifest

from harness.waiting import wait_until
from sparkcdc.kube.client import KubeClient
from sparkcdc.kube.status_codec import decode_value
from sparkcdc.kube.status_store import FencedError, StatusCheckpointStore
from sparkcdc.testing.kube import ControlPlane

TRICKY: dict[str, Any] = {
    "version": 1,
    "offset": None,
    "$ref": "dollar key",
    "big": 2**64 - 1,
    "nested": {"a": None, "b": [None, 1.5, "x", {"$null": "not a tag"}], "empty": {}},
    "unicode": "ünïcødé ✓",
}


@pytest.fixture
def pipelines(control_plane: ControlPlane, sparkcdc_crd: str, namespace: str) -> Pipelines:
    api = Pipelines(control_plane, namespace)
    api.create(manifest("store", suspend=True))
    api.patch_status("store", {"driver": {"epoch": 5}})
    return api


def store(cp: ControlPlane, namespace: str, epoch: int, min_interval: float = 0.0) -> StatusCheckpointStore:
    """A store; without rate limiting unless asked, so each save writes (or raises) at once."""
    return StatusCheckpointStore(
        KubeClient(cp.api_client()), namespace, "store", epoch, min_interval=min_interval
    )


def test_document_round_trips_through_status(control_plane: ControlPlane, pipelines: Pipelines) -> None:
    writer = store(control_plane, pipelines.namespace, 5)
    writer.save_document(TRICKY, {"splitsTotal": 3, "splitsFinished": 1})
    writer.flush()
    assert store(control_plane, pipelines.namespace, 5).load_document() == TRICKY
    # A smaller document replaces it exactly: keys that disappeared are gone, not merged.
    writer.save_document({"version": 1, "nested": {"a": 1}})
    writer.flush()
    assert store(control_plane, pipelines.namespace, 5).load_document() == {"version": 1, "nested": {"a": 1}}
    assert pipelines.status("store")["progress"]["splitsFinished"] == 1


def test_a_load_sees_a_save_the_rate_limit_held_back(
    control_plane: ControlPlane, pipelines: Pipelines
) -> None:
    writer = store(control_plane, pipelines.namespace, 5, min_interval=3600)
    writer.save_document({"version": 1, "n": 1})  # written at once: the first write
    writer.save_document({"version": 1, "n": 2})  # held back for an hour
    assert decode_value(pipelines.status("store")["checkpoint"]) == {"version": 1, "n": 1}
    assert writer.load_document() == {"version": 1, "n": 2}
    assert store(control_plane, pipelines.namespace, 5).load_document() == {"version": 1, "n": 2}
    writer.close()


def test_stale_epoch_cannot_write(control_plane: ControlPlane, pipelines: Pipelines) -> None:
    old = store(control_plane, pipelines.namespace, 5)
    old.save_document({"version": 1, "by": "old"})
    old.flush()
    pipelines.patch_status("store", {"driver": {"epoch": 6}})  # the operator started a new driver
    with pytest.raises(FencedError, match="epoch 6"):
        old.save_document({"version": 1, "by": "zombie"})
    new = store(control_plane, pipelines.namespace, 6)
    assert new.load_document() == {"version": 1, "by": "old"}
    new.save_document({"version": 1, "by": "new"})
    new.flush()
    with pytest.raises(FencedError):
        store(control_plane, pipelines.namespace, 5).save_document({"version": 1, "by": "zombie"})
    assert decode_value(pipelines.status("store")["checkpoint"]) == {"version": 1, "by": "new"}


def test_conflict_is_retried_while_the_epoch_matches(
    control_plane: ControlPlane, pipelines: Pipelines
) -> None:
    writer = store(control_plane, pipelines.namespace, 5)
    writer.load_document()  # caches the object's resourceVersion
    pipelines.patch_status("store", {"phase": "Suspended"})  # someone else writes status meanwhile
    writer.save_document({"version": 1, "n": 1})
    writer.flush()
    assert writer.conflicts == 1 and writer.writes == 1
    assert decode_value(pipelines.status("store")["checkpoint"]) == {"version": 1, "n": 1}


def test_epoch_change_between_read_and_write_fences(
    control_plane: ControlPlane, pipelines: Pipelines
) -> None:
    writer = store(control_plane, pipelines.namespace, 5)
    writer.load_document()
    pipelines.patch_status("store", {"driver": {"epoch": 6}})
    with pytest.raises(FencedError):
        writer.save_document({"version": 1})
    assert writer.conflicts == 1 and writer.writes == 0


def test_writes_are_rate_limited_and_coalesced(control_plane: ControlPlane, pipelines: Pipelines) -> None:
    # The store's own clock, moved by hand: whatever the machine's load, every save below falls
    # within the interval after the first write.
    now = [100.0]
    kube = KubeClient(control_plane.api_client())
    writer = StatusCheckpointStore(
        kube, pipelines.namespace, "store", 5, min_interval=1.0, clock=lambda: now[0]
    )
    for n in range(20):
        writer.save_document({"version": 1, "n": n})
    assert writer.writes == 1  # the first; the rest wait for the next allowed moment
    now[0] += 1.0  # the interval has passed: the background thread writes at its next look
    wait_until(lambda: writer.writes >= 2, timeout=5, message="the held-back write never happened")
    assert writer.writes == 2  # only the latest document, once
    assert decode_value(pipelines.status("store")["checkpoint"]) == {"version": 1, "n": 19}
    writer.close()


def test_background_fencing_surfaces_on_the_next_save(
    control_plane: ControlPlane, pipelines: Pipelines
) -> None:
    writer = store(control_plane, pipelines.namespace, 5, min_interval=0.5)
    writer.save_document({"version": 1, "n": 0})
    writer.save_document({"version": 1, "n": 1})  # pending
    pipelines.patch_status("store", {"driver": {"epoch": 6}})

    def fenced() -> bool:
        try:
            writer.save_document({"version": 1, "n": 2})
        except FencedError:
            return True
        return False

    wait_until(fenced, timeout=5, message="the background write's FencedError never surfaced")
    assert decode_value(pipelines.status("store")["checkpoint"]) == {"version": 1, "n": 0}


def test_large_checkpoint_spills_into_owned_config_maps(
    control_plane: ControlPlane, core: Any, pipelines: Pipelines
) -> None:
    namespace = pipelines.namespace
    big = {"version": 1, "rows": [{"k": i, "v": f"value-{i}", "n": None} for i in range(20000)]}
    writer = store(control_plane, namespace, 5)
    writer.save_document(big)
    writer.flush()
    pointer = pipelines.status("store")["checkpoint"]
    assert set(pointer) == {"$spill"}
    names = pointer["$spill"]["configMaps"]
    uid = (pipelines.get("store") or {})["metadata"]["uid"]
    for name in names:
        owners = core.read_namespaced_config_map(name, namespace).metadata.owner_references
        assert [(o.kind, o.uid) for o in owners] == [("CdcPipeline", uid)]
    assert store(control_plane, namespace, 5).load_document() == big
    writer.save_document({"version": 1, "rows": []})
    writer.flush()
    left = [c.metadata.name for c in core.list_namespaced_config_map(namespace).items]
    assert not set(names) & set(left), "the replaced spill ConfigMaps were not removed"
    assert store(control_plane, namespace, 5).load_document() == {"version": 1, "rows": []}


def test_two_writers_of_one_epoch_never_lose_a_write(
    control_plane: ControlPlane, pipelines: Pipelines
) -> None:
    """Conflicts between concurrent writers resolve by retrying; every write lands whole."""
    writers = [store(control_plane, pipelines.namespace, 5) for _ in range(3)]
    errors: list[BaseException] = []

    def write(index: int) -> None:
        try:
            for n in range(10):
                writers[index].save_document({"version": 1, "writer": index, "n": n})
        except BaseException as err:
            errors.append(err)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert sum(w.writes for w in writers) == 30
    final = decode_value(pipelines.status("store")["checkpoint"])
    assert final["n"] == 9 and set(final) == {"version", "writer", "n"}
