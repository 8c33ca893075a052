"""The pure parts of ``sparkcdc driver``: secrets from env, resnapshot, assigned server ids."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.reconcile_fixtures import pipeline, pipeline_obj
from sparkcdc.api import CdcPipeline, SecretRefError
from sparkcdc.controller.builders import secret_env_name
from sparkcdc.core.checkpoint import Checkpoint, TablePlan, decode, encode
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.splits import FinishedSplitInfo, SnapshotSplit
from sparkcdc.core.tables import TableId
from sparkcdc.driver import support as driver_support
from sparkcdc.driver.support import (
    apply_resnapshot,
    env_secrets,
    with_assigned_server_ids,
    write_termination_message,
)

ORDERS, ITEMS = TableId("shop", "orders"), TableId("shop", "order_items")


class MemoryStore:
    """Stands in for StatusCheckpointStore: the same typed load/save, carry/carried and flush."""

    def __init__(self, document: dict[str, Any] | None) -> None:
        self.document, self.saves = document, 0
        self.carry_values: dict[str, Any] = {}

    def load(self) -> Checkpoint | None:
        if self.document is None:
            return None
        # As the real store: keys it carries come back from the stored document.
        self.carry_values = {k: v for k, v in self.document.items() if k == "resnapshotNonce"}
        return decode(self.document)

    def carry(self, key: str, value: Any) -> None:
        self.carry_values[key] = value

    def carried(self, key: str) -> Any:
        return self.carry_values.get(key)

    def save(self, checkpoint: Checkpoint) -> None:
        self.document, self.saves = {**self.carry_values, **encode(checkpoint)}, self.saves + 1

    def flush(self) -> None:
        pass


def checkpoint() -> Checkpoint:
    def finished(table: TableId) -> tuple[FinishedSplitInfo, ...]:
        return (FinishedSplitInfo(SnapshotSplit(table, 0, None, None), BinlogOffset("b.000001", 10), 5),)

    return Checkpoint(
        plans={ORDERS: TablePlan(), ITEMS: TablePlan()},
        finished={ORDERS: finished(ORDERS), ITEMS: finished(ITEMS)},
        snapshot_done=True,
        binlog_offset=BinlogOffset("b.000001", 20),
    )


def test_secrets_come_from_the_mapped_env_vars() -> None:
    p = pipeline()
    ref = p.spec.source.password_secret_ref
    resolve = env_secrets({secret_env_name("spec.source.passwordSecretRef"): "pw"})
    assert resolve(ref, "spec.source.passwordSecretRef").get_secret_value() == "pw"
    with pytest.raises(SecretRefError, match="SPARKCDC_SECRET_SPEC_SINK_PASSWORDSECRETREF"):
        resolve(ref, "spec.sink.passwordSecretRef")


def test_resnapshot_resets_the_chosen_tables_once() -> None:
    store = MemoryStore(encode(checkpoint()))
    p = pipeline(resnapshotNonce="n1", resnapshotTables=["shop.orders"])
    apply_resnapshot(store, p)  # type: ignore[arg-type]
    assert store.document is not None and store.document["resnapshotNonce"] == "n1"
    after = decode(store.document)
    assert set(after.plans) == {ITEMS} and not after.snapshot_done
    assert after.binlog_offset == BinlogOffset("b.000001", 20)
    apply_resnapshot(store, p)  # type: ignore[arg-type]
    assert store.saves == 1  # the nonce is recorded: a restart does not reset again


def test_resnapshot_without_tables_resets_all_and_first_run_only_records() -> None:
    store = MemoryStore(encode(checkpoint()))
    apply_resnapshot(store, pipeline(resnapshotNonce="n2"))  # type: ignore[arg-type]
    assert store.document is not None and decode(store.document).plans == {}
    fresh = MemoryStore(None)
    apply_resnapshot(fresh, pipeline(resnapshotNonce="n3"))  # type: ignore[arg-type]
    assert fresh.saves == 0 and fresh.carry_values == {"resnapshotNonce": "n3"}


def test_assigned_server_ids_fill_an_unset_spec() -> None:
    obj = pipeline_obj(source={"serverId": None})
    obj["status"] = {"serverIdRange": "1000000-1000063"}
    assert with_assigned_server_ids(CdcPipeline.from_k8s(obj)).spec.source.server_id == "1000000-1000063"
    configured = pipeline_obj()
    configured["status"] = {"serverIdRange": "1000000-1000063"}
    assert with_assigned_server_ids(CdcPipeline.from_k8s(configured)).spec.source.server_id == "5400-5404"


def test_the_termination_message_goes_to_the_pods_fixed_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The pod's default terminationMessagePath (moved here to a temporary file), the last 4000
    characters; where it cannot be written (outside a pod) the driver logs that and goes on."""
    assert driver_support.TERMINATION_LOG == "/dev/termination-log"
    target = tmp_path / "termination-log"
    monkeypatch.setattr(driver_support, "TERMINATION_LOG", str(target))
    write_termination_message("x" * 5000 + "the end")
    assert target.read_text() == ("x" * 5000 + "the end")[-4000:]
    monkeypatch.setattr(driver_support, "TERMINATION_LOG", str(tmp_path / "no" / "such" / "dir"))
    write_termination_message("lost")
    assert "could not write the termination message" in caplog.text
