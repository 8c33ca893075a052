"""BinlogExpiry on the real control plane: a suspended pipeline — no driver, no source credentials
in the operator — is warned as the binlog file its checkpoint needs nears the source's purge,
from the retention its last driver reported."""

from __future__ import annotations

import json
import urllib.request
from datetime import datetime, timedelta, timezone
from typing import Any

from operator_harness import (
    Pipelines,
    RunningOperator,
    condition,
    driver_account_fixture,  # noqa: F401 - the driver_account fixture
    manifest,
    operator_fixture,  # noqa: F401 - the operator fixture
    pods_of,
)

from sparkcdc.core.reconcile_types import format_time
from sparkcdc.testing.kube import ControlPlane, wait_until


def retention(purge_in: timedelta) -> dict[str, Any]:
    """What a driver reported before the pipeline was suspended (driver/retention.py)."""
    now = datetime.now(timezone.utc)
    return {
        "neededFile": "mysql-bin.000042",
        "currentFile": "mysql-bin.000042",
        "filesBefore": 5,
        "expireSeconds": 86400.0,
        "purgeNotBefore": format_time(now + purge_in),
        "observedAt": format_time(now - timedelta(hours=23)),
    }


def test_a_suspended_pipeline_is_warned_before_its_binlog_is_purged(
    operator: RunningOperator, control_plane: ControlPlane, core: Any, namespace: str, driver_account: str
) -> None:
    pipelines = Pipelines(control_plane, namespace)
    pipelines.create(manifest("expiry-a", operator.driver_image, suspend=True))
    wait_until(lambda: pipelines.status("expiry-a").get("phase") == "Suspended", timeout=60, what="Suspended")
    assert condition(pipelines.status("expiry-a"), "BinlogExpiry")["status"] == "Unknown"

    pipelines.patch_status("expiry-a", {"progress": {"binlogRetention": retention(timedelta(days=2))}})
    wait_until(
        lambda: condition(pipelines.status("expiry-a"), "BinlogExpiry").get("reason") == "WithinRetention",
        timeout=30,
        what="BinlogExpiry False while the file has two days left",
    )

    pipelines.patch_status("expiry-a", {"progress": {"binlogRetention": retention(timedelta(hours=1))}})

    def warned() -> dict[str, Any] | None:
        found = condition(pipelines.status("expiry-a"), "BinlogExpiry")
        return found if found.get("status") == "True" else None

    found = wait_until(warned, timeout=30, what="BinlogExpiry True with an hour left")
    assert found["reason"] == "ExpiresSoon" and "mysql-bin.000042" in found["message"]
    assert not pods_of(core, namespace, "expiry-a")  # warned while suspended: nothing was started

    def warning_events() -> list[dict[str, Any]]:
        events = json.loads(core.list_namespaced_event(namespace, _preload_content=False).data)["items"]
        return [
            e for e in events if e["involvedObject"]["name"] == "expiry-a" and e["reason"] == "BinlogExpiry"
        ]

    events = wait_until(warning_events, timeout=10, what="a BinlogExpiry Warning event")
    assert events[0]["type"] == "Warning" and "binlog_expire_logs_seconds" in events[0]["message"]

    series = f'sparkcdc_operator_binlog_expiry_margin_seconds{{namespace="{namespace}",pipeline="expiry-a"}}'
    url = f"http://127.0.0.1:{operator.metrics_port}/metrics"

    def margin_within_the_hour() -> str | None:
        with urllib.request.urlopen(url, timeout=5) as response:
            lines = [line for line in response.read().decode().splitlines() if line.startswith(series)]
        value = lines[0].split()[-1] if lines else None
        return value if value is not None and float(value) <= 3600 else None

    # The reconcile sets the gauge after the status patch that carries the condition: read it
    # until that reconcile has ended.
    left = wait_until(margin_within_the_hour, timeout=10, what=f"{series} at most an hour")
    assert 0 < float(left) <= 3600  # the hour left, as the alert reads it
