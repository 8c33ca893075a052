"""The driver following its own spec (driver/spec_watch.py): which edits become a change of the
captured tables, that a change is taken once and the newest one wins, and the manifest watch of
``sparkcdc run`` on a real file."""

from __future__ import annotations

import copy
import logging
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.reconcile_fixtures import REFERENCE, merge, pipeline
from sparkcdc.api.manifest import load_manifests
from sparkcdc.core.tables import TableId
from sparkcdc.driver.spec_watch import (
    ManifestWatch,
    Running,
    SpecWatch,
    capture_change,
    manifest_files,
    unfollowed,
)
from sparkcdc.engine.capture_changes import CaptureChange

ORDERS, ITEMS = TableId("shop", "orders"), TableId("shop", "order_items")
CUSTOMERS = TableId("shop", "customers")
TWO = ["shop.orders", "shop.order_items"]
THREE = [*TWO, "shop.customers"]


def tables(*names: str) -> dict[str, Any]:
    return {"source": {"tables": list(names)}}


def test_an_edit_of_the_table_selection_is_a_change() -> None:
    running = Running(pipeline())
    added = pipeline(**tables(*THREE))
    assert capture_change(running, added, []) == CaptureChange(added)
    excluded = pipeline(source={"excludeTables": ["shop.order_items"]})
    assert capture_change(running, excluded, []) == CaptureChange(excluded)
    assert capture_change(running, pipeline(), []) is None
    assert capture_change(running, pipeline(**tables(*reversed(TWO))), []) is None  # the same tables


def test_an_edit_of_anything_else_the_driver_depends_on_is_not_followed() -> None:
    """The operator replaces the driver for it: following only its tables could snapshot a new
    table without the chunk key or transform the same edit gave it."""
    running = Running(pipeline())
    edited = pipeline(source={"tables": THREE}, snapshot={"chunkSize": 10})
    reason = "it changes more than source.tables, excludeTables and resnapshotNonce"
    assert unfollowed(running, edited) == reason
    assert capture_change(running, edited, []) is None
    # Fields the driver does not depend on change nothing either way.
    assert capture_change(running, pipeline(restartNonce="r", **tables(*THREE)), []) is not None


def test_a_snapshot_only_driver_follows_nothing() -> None:
    only = {"startup": {"mode": "snapshot-only"}}
    running = Running(pipeline(**only))
    assert unfollowed(running, pipeline(resnapshotNonce="n", **only)) is not None
    assert capture_change(running, pipeline(resnapshotNonce="n", **only), [ORDERS]) is None
    assert capture_change(running, pipeline(**tables(*THREE), **only), [ORDERS]) is None
    assert unfollowed(running, pipeline(verifyNonce="v", **only)) is None  # nothing to say about it


def test_a_new_resnapshot_nonce_snapshots_the_chosen_or_every_captured_table() -> None:
    running = Running(pipeline(resnapshotNonce="n0"), nonce="n0")
    chosen = pipeline(resnapshotNonce="n1", resnapshotTables=["shop.orders"])
    assert capture_change(running, chosen, [ORDERS, ITEMS]) == CaptureChange(chosen, (ORDERS,))
    every = pipeline(resnapshotNonce="n1")
    # Tables planned but no longer selected (excludeTables) are not snapshotted again.
    assert capture_change(running, every, [ORDERS, ITEMS, CUSTOMERS]) == CaptureChange(every, (ITEMS, ORDERS))
    assert capture_change(running, pipeline(resnapshotNonce="n0"), [ORDERS]) is None  # applied already
    assert capture_change(Running(pipeline()), pipeline(), [ORDERS]) is None  # no nonce at all
    assert capture_change(running, every, [ORDERS], resnapshots=False) is None


class Carried:
    """What the watch records with the next checkpoint write (the store's carry)."""

    def __init__(self) -> None:
        self.nonces: list[str] = []

    def __call__(self, nonce: str) -> None:
        self.nonces.append(nonce)


def test_take_returns_the_newest_change_once_and_carries_its_nonce() -> None:
    carried, said = Carried(), []
    watch = SpecWatch(Running(pipeline()), captured=lambda: [ORDERS, ITEMS], carry=carried, say=said.append)
    assert watch.take() is None
    watch.offer(pipeline(resnapshotNonce="n1", resnapshotTables=["shop.orders"]))
    newest = pipeline(resnapshotNonce="n1", resnapshotTables=["shop.orders"], **tables(*THREE))
    watch.offer(newest)  # before a take: the resnapshot is not lost to the newer edit
    assert carried.nonces == []  # nothing is recorded before the streamer takes it
    assert watch.take() == CaptureChange(newest, (ORDERS,))
    assert carried.nonces == ["n1"]
    assert said == [
        "following the spec edit: capturing shop.orders, shop.order_items, shop.customers; "
        "snapshotting shop.orders again"
    ]
    assert watch.take() is None
    watch.offer(newest)  # read again (another field changed): nothing new to follow
    assert watch.take() is None
    assert watch.running == Running(newest, "n1")


def test_an_edit_undone_before_it_was_taken_is_no_change() -> None:
    watch = SpecWatch(Running(pipeline()))
    watch.offer(pipeline(**tables(*THREE)))
    watch.offer(pipeline())
    assert watch.take() is None


def test_an_edit_that_is_not_followed_is_said_and_dropped(caplog: pytest.LogCaptureFixture) -> None:
    watch = SpecWatch(Running(pipeline()), carry=Carried())
    with caplog.at_level(logging.WARNING, "sparkcdc.driver.spec"):
        watch.offer(pipeline(source={"tables": THREE}, snapshot={"chunkSize": 10}))
    assert "not followed while it runs: it changes more than source.tables" in caplog.text
    assert watch.take() is None
    assert watch.running.pipeline.spec.source.tables == TWO


# -- sparkcdc run: the manifest file ---------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


SECRETS = [
    {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "stringData": {key: "pw"}}
    for name, key in (("mysql-cdc", "password"), ("sink-secret", "pw"))
]


def write_manifest(path: Path, **spec: Any) -> Path:
    document = copy.deepcopy(REFERENCE)
    document["spec"] = merge(document["spec"], spec)
    path.write_text(yaml.safe_dump_all([*SECRETS, document], sort_keys=False), encoding="utf-8")
    return path


def manifest_watch(path: Path, clock: Clock, said: list[str]) -> ManifestWatch:
    manifest = load_manifests([str(path)])
    files = manifest_files(manifest)
    assert files == [str(path)]
    return ManifestWatch(files, manifest.pipelines[0].pipeline, clock=clock, say=said.append)


def warned_after_an_edit(path: Path, caplog: pytest.LogCaptureFixture, edit: Any) -> str:
    """The warnings of a take after ``edit(path)``, which must change nothing."""
    clock = Clock()
    watch = manifest_watch(path, clock, [])
    edit(path)
    clock.now += 2.0
    with caplog.at_level(logging.WARNING, "sparkcdc.driver.spec"):
        assert watch.take() is None
    return caplog.text


def test_an_edited_manifest_is_followed_at_the_next_check(tmp_path: Path) -> None:
    path = write_manifest(tmp_path / "pipeline.yaml")
    clock, said = Clock(), []
    watch = manifest_watch(path, clock, said)
    assert watch.take() is None  # read at the first take: what it started with
    write_manifest(path, **tables(*THREE))
    clock.now += 1.0
    assert watch.take() is None  # not read again before `every` passed: a take stays cheap
    clock.now += 1.0
    change = watch.take()
    assert change is not None and change.pipeline.spec.source.tables == THREE and change.resnapshot == ()
    assert said == ["following the spec edit: capturing shop.orders, shop.order_items, shop.customers"]
    clock.now += 2.0
    assert watch.take() is None  # the same text: not loaded again
    write_manifest(path, **tables("shop.orders"))  # a table removed
    clock.now += 2.0
    removed = watch.take()
    assert removed is not None and removed.pipeline.spec.source.tables == ["shop.orders"]


def test_an_invalid_edit_is_warned_about_once_and_the_pipeline_runs_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = write_manifest(tmp_path / "pipeline.yaml")
    clock = Clock()
    watch = manifest_watch(path, clock, [])
    write_manifest(path, snapshot={"chunkSize": -5}, **tables(*THREE))
    with caplog.at_level(logging.WARNING, "sparkcdc.driver.spec"):
        for _ in range(3):
            clock.now += 2.0
            assert watch.take() is None
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, warnings
    assert "the edited manifest is not applied" in warnings[0] and "spec.snapshot.chunkSize" in warnings[0]
    write_manifest(path, **tables(*THREE))  # fixed
    clock.now += 2.0
    change = watch.take()
    assert change is not None and change.pipeline.spec.source.tables == THREE


def test_local_runs_do_not_follow_a_resnapshot_nonce(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """``sparkcdc run`` has no resnapshot: its checkpoint file carries no applied nonce."""
    path = write_manifest(tmp_path / "pipeline.yaml")
    warned = warned_after_an_edit(path, caplog, lambda p: write_manifest(p, resnapshotNonce="n1"))
    assert "sparkcdc run does not follow spec.resnapshotNonce" in warned


def test_a_manifest_that_no_longer_defines_the_pipeline_changes_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def rename(path: Path) -> None:
        path.write_text(path.read_text().replace("name: shop\n", "name: other\n"), encoding="utf-8")

    path = write_manifest(tmp_path / "pipeline.yaml")
    assert "the edited manifest no longer defines it" in warned_after_an_edit(path, caplog, rename)
