"""The models: defaults, helpers, round trips through Kubernetes JSON, and the status contract."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from sparkcdc.api import (
    CdcPipeline,
    CdcPipelineStatus,
    ChangelogSink,
    ConsoleSink,
    DeltaSink,
    JdbcSink,
    Progress,
    SecretKeyRef,
    SourceSpec,
    SpecError,
    StartupSpec,
    memory_mib,
    parse_server_id_range,
)
from sparkcdc.api.errors import translate_errors

pytestmark = pytest.mark.unit

REFERENCE = Path(__file__).parent / "manifests" / "reference.yaml"


def _reference() -> dict[str, Any]:
    docs = list(yaml.safe_load_all(REFERENCE.read_text()))
    pipeline: dict[str, Any] = docs[1]
    return pipeline


def _source(**extra: Any) -> SourceSpec:
    return SourceSpec(
        host="h", user="u", password_secret_ref=SecretKeyRef(name="s", key="k"), tables=["a.b"], **extra
    )


def test_defaults() -> None:
    spec = CdcPipeline.from_k8s(_reference()).spec
    assert spec.startup.mode == "initial"
    assert spec.startup.on_binlog_lost == "fail"
    assert spec.snapshot.fetch_size == 10000
    assert spec.snapshot.splits_per_task == 4
    assert (spec.snapshot.even_distribution_factor.lower, spec.snapshot.even_distribution_factor.upper) == (
        0.05,
        1000.0,
    )
    assert spec.binlog.batch_rows == 10000
    assert spec.binlog.batch_interval_ms == 500
    assert spec.binlog.heartbeat_interval_seconds == 30
    assert spec.binlog.parallel_catchup_threshold_bytes == 256 * 1024 * 1024
    assert spec.spark.image == "ghcr.io/sparkcdc/sparkcdc-spark:0.1.0"
    assert spec.spark.master is None
    assert (spec.spark.driver.cores, spec.spark.driver.memory) == (1, "1g")
    assert (spec.spark.executor.cores, spec.spark.executor.memory, spec.spark.executor.instances) == (
        1,
        "1g",
        2,
    )
    assert spec.suspend is False
    assert spec.restart_policy.max_restarts is None
    assert spec.restart_policy.initial_backoff_seconds == 10
    assert spec.restart_policy.max_backoff_seconds == 300
    assert spec.restart_policy.stable_seconds == 600
    assert spec.restart_policy.pending_timeout_seconds == 300
    assert spec.state_policy == "Delete"
    assert spec.resnapshot_tables == []
    assert spec.source.port == 3306
    assert spec.source.tls.mode == "verify-identity"  # against the system's CAs without a caSecretRef
    assert spec.source.connect_timeout_seconds == 10
    assert spec.source.server_id_range() is None


def test_round_trip_through_kubernetes_json() -> None:
    pipeline = CdcPipeline.from_k8s(_reference())
    data = pipeline.to_k8s()
    assert data["apiVersion"] == "sparkcdc.io/v1alpha1"
    assert data["spec"]["source"]["passwordSecretRef"] == {"name": "mysql-cdc", "key": "password"}
    assert "serverId" not in data["spec"]["source"]  # unset optional fields are left out
    assert CdcPipeline.from_k8s(data) == pipeline


def test_apiserver_metadata_is_accepted() -> None:
    doc = _reference()
    doc["metadata"].update(
        namespace="prod",
        uid="u-1",
        generation=3,
        resourceVersion="42",
        creationTimestamp="2024-05-01T12:00:00Z",
        managedFields=[{"manager": "kubectl"}],
        finalizers=["sparkcdc.io/state"],
        ownerReferences=[],
    )
    meta = CdcPipeline.from_k8s(doc).metadata
    assert (meta.namespace, meta.uid, meta.generation, meta.resource_version) == ("prod", "u-1", 3, "42")


def test_python_names_construct_models() -> None:
    source = _source(server_id="5400-5404", connect_timeout_seconds=5)
    assert source.server_id_range() == (5400, 5404)
    assert source.model_dump(by_alias=True)["connectTimeoutSeconds"] == 5


@pytest.mark.parametrize(
    ("text", "expected"),
    [("5400", (5400, 5400)), ("5400-5404", (5400, 5404)), ("1-4294967295", (1, 4294967295)), ("7-7", (7, 7))],
)
def test_server_id_ranges(text: str, expected: tuple[int, int]) -> None:
    assert parse_server_id_range(text) == expected


@pytest.mark.parametrize("text", ["0", "4294967296", "5-4", "a", "1-", " 1", "1 - 2", "12345678901"])
def test_bad_server_id_ranges(text: str) -> None:
    with pytest.raises(SpecError):
        parse_server_id_range(text)


@pytest.mark.parametrize(
    ("quantity", "mib"),
    [("512m", 512), ("1g", 1024), ("2Gi", 2048), ("1536Mi", 1536), ("1t", 1048576), ("100k", 1)],
)
def test_memory_mib(quantity: str, mib: int) -> None:
    assert memory_mib(quantity) == mib


@pytest.mark.parametrize("tz", ["UTC", "Europe/Berlin", "+02:00", "-05:30", "+00:00"])
def test_server_time_zones(tz: str) -> None:
    assert _source(server_time_zone=tz).server_time_zone == tz


@pytest.mark.parametrize("tz", ["+2:00", "+15:00", "CEST", "Europe/Nowhere", "../etc/passwd"])
def test_bad_server_time_zones(tz: str) -> None:
    with pytest.raises(ValidationError):
        _source(server_time_zone=tz)


@pytest.mark.parametrize(
    "tables", [["shop.orders"], ["shop\\.order_.*"], ["shop.orders", "(shop|crm)\\.[a-z]+"], [".*\\..*"]]
)
def test_table_entries(tables: list[str]) -> None:
    assert _source().model_copy(update={"tables": tables}).tables == tables
    assert SourceSpec.model_validate({**_source().to_k8s(), "tables": tables}).tables == tables


def test_jdbc_url_parts() -> None:
    ref = SecretKeyRef(name="s", key="k")
    sink = JdbcSink(
        type="jdbc",
        url="postgresql://db.example:6543/replica?sslmode=require",
        user="u",
        password_secret_ref=ref,
    )
    assert (sink.scheme, sink.host, sink.port, sink.database) == ("postgresql", "db.example", 6543, "replica")
    assert sink.parsed_url.params == {"sslmode": "require"}
    assert sink.parsed_url.jdbc_url == "jdbc:postgresql://db.example:6543/replica"
    maria = JdbcSink(type="jdbc", url="mariadb://[::1]/shop", user="u", password_secret_ref=ref)
    assert (maria.host, maria.port) == ("::1", 3306)
    assert maria.parsed_url.jdbc_url == "jdbc:mysql://[::1]:3306/shop"


def test_sink_union_picks_the_model_by_type() -> None:
    doc = _reference()
    for sink, cls in (
        ({"type": "delta", "path": "/d", "partitionBy": {"shop.orders": ["day"]}}, DeltaSink),
        ({"type": "changelog", "path": "/c"}, ChangelogSink),
        ({"type": "console"}, ConsoleSink),
    ):
        doc["spec"]["sink"] = sink
        assert isinstance(CdcPipeline.from_k8s(doc).spec.sink, cls)


def test_startup_modes() -> None:
    when = dt.datetime(2024, 5, 1, 12, tzinfo=dt.timezone.utc)
    assert (
        StartupSpec.model_validate({"mode": "timestamp", "timestamp": "2024-05-01T12:00:00Z"}).timestamp
        == when
    )
    assert StartupSpec.model_validate({"mode": "timestamp", "timestamp": when}).timestamp == when
    offset = StartupSpec.model_validate(
        {"mode": "specific-offset", "file": "mysql-bin.000003", "position": 4}
    )
    assert (offset.file, offset.position) == ("mysql-bin.000003", 4)
    gtid = StartupSpec.model_validate({"mode": "specific-offset", "gtidSet": "0-1-100"})
    assert gtid.gtid_set == "0-1-100"
    assert StartupSpec().to_k8s() == {"mode": "initial", "onBinlogLost": "fail", "onSourceChange": "fail"}


def test_models_are_frozen() -> None:
    source = _source()
    with pytest.raises(ValidationError):
        source.port = 1  # type: ignore[misc]


def test_secret_refs_lists_every_reference() -> None:
    doc = _reference()
    doc["spec"]["source"]["tls"] = {"mode": "verify-identity", "caSecretRef": {"name": "ca", "key": "ca.crt"}}
    refs = CdcPipeline.from_k8s(doc).secret_refs()
    assert [(path, ref.name, ref.key) for path, ref in refs] == [
        ("spec.source.passwordSecretRef", "mysql-cdc", "password"),
        ("spec.source.tls.caSecretRef", "ca", "ca.crt"),
        ("spec.sink.passwordSecretRef", "mysql-cdc", "password"),
    ]


def test_status_reads_unknown_fields_and_json_numbers() -> None:
    status = CdcPipelineStatus.model_validate(
        {
            "phase": "Snapshotting",
            "observedGeneration": 2,
            "fieldOfANewerDriver": {"x": 1},
            "conditions": [{"type": "Ready", "status": "False", "reason": "Starting", "extra": 1}],
            "driver": {"pod": "p-driver", "epoch": 3, "restarts": 1},
            "checkpoint": {"version": 1, "splits": [{"table": "a.b", "hw": "f.1:4"}]},
            "progress": {"splitsTotal": 40, "splitsFinished": 12, "lagSeconds": 3, "tables": 2, "other": 1},
            "serverIdRange": "5400-5404",
        }
    )
    assert status.phase == "Snapshotting"
    assert status.driver is not None and status.driver.epoch == 3
    assert status.checkpoint == {"version": 1, "splits": [{"table": "a.b", "hw": "f.1:4"}]}
    assert status.progress is not None and status.progress.lag_seconds == 3.0
    ready = status.condition("Ready")
    assert ready is not None and ready.reason == "Starting"


def test_splits_display_is_derived_when_written() -> None:
    progress = Progress(splits_total=40, splits_finished=12)
    assert progress.to_k8s()["splitsDisplay"] == "12/40"
    later = progress.model_copy(update={"splits_finished": 13})
    assert later.to_k8s()["splitsDisplay"] == "13/40"
    assert "splitsDisplay" not in Progress().to_k8s()


def test_translate_errors_for_python_callers() -> None:
    with pytest.raises(ValidationError) as info:
        StartupSpec.model_validate({"mode": "specific-offset", "file": "mysql-bin.000001"})
    assert translate_errors(info.value, StartupSpec) == [
        "file: needs position (e.g. 4, the start of the file)"
    ]
