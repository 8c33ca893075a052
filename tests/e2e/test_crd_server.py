"""The generated CRD on the real API server: the reference pipeline is accepted, and every bad manifest of the
validation suite that the schema or its CEL rules can catch is rejected by the server itself."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from sparkcdc.testing.kube import ControlPlane

MANIFESTS = Path(__file__).resolve().parents[1] / "unit" / "api" / "manifests"
GROUP, VERSION, PLURAL = "sparkcdc.io", "v1alpha1", "cdcpipelines"

# Bad manifest -> what the server (schema, CEL, strict decoding, built-in types) says about it.
SERVER_REJECTS = {
    "bad_api_version": 'no matches for kind "CdcPipeline" in version "sparkcdc.io/v1"',
    "bad_base64": "illegal base64 data",
    "bad_memory": 'spec.spark.executor.memory: Invalid value: "2GB"',
    "bad_name": 'metadata.name: Invalid value: "Shop_Replica"',
    "field_of_other_sink_type": "optimizeEveryCommits and mergeSchema are only allowed when type is delta",
    "jdbc_url_scheme": 'spec.sink.url: Invalid value: "oracle://',
    "jdbc_url_without_database": 'spec.sink.url: Invalid value: "mysql://127.0.0.1:3306/"',
    "missing_required_field": "spec.source.host: Required value",
    "negative_chunk_size": "spec.snapshot.chunkSize in body should be greater than 0",
    "offset_with_wrong_mode": "file, position and gtidSet are only allowed when mode is specific-offset",
    "position_without_file": "file and position must be given together",
    "quoted_integer": "spec.source.port in body must be of type integer",
    "secret_value_not_a_string": "cannot unmarshal number into Go struct field Secret.stringData",
    "server_id_not_a_number": 'spec.source.serverId: Invalid value: "abc"',
    "server_id_reversed": "range start must not be greater than its end",
    "server_id_unquoted": "spec.source.serverId in body must be of type string",
    "sink_without_type": "spec.sink.type: Required value",
    "snake_case_field": 'unknown field "spec.snapshot.chunk_size"',
    "spark_conf_credential": 'spec.spark.conf: Invalid value: "object": must not hold credentials',
    "spark_conf_java_agent": "spark.executor.extraJavaOptions and their defaultJavaOptions may only hold JVM",
    "spark_conf_kubernetes_key": 'spec.spark.conf: Invalid value: "object": must not set spark.kubernetes.*',
    "specific_offset_without_offset": "mode specific-offset needs file and position, or gtidSet",
    "table_without_database": 'spec.source.tables[1]: Invalid value: "string": must be db.table or a regular '
    "expression matching db.table",
    "timestamp_mode_without_timestamp": 'spec.startup: Invalid value: "object": timestamp is required when',
    "timestamp_without_zone": "spec.startup.timestamp in body must be of type date-time",
    "unknown_field": 'unknown field "spec.snapshot.chunkSise"',
    "unknown_mode": 'spec.startup.mode: Unsupported value: "newest"',
    "unknown_sink_type": 'spec.sink.type: Unsupported value: "kafka"',
    "verify_ca_without_ca": "caSecretRef is required when mode is verify-ca",
    "wrong_type": "spec.source.port in body must be of type integer",
}
# Only `sparkcdc validate` and the operator catch these: they need a regex engine, time zone data, other
# fields' values, the referenced Secret, or the raw YAML text (duplicate keys).
CLIENT_ONLY = {
    "bad_table_regex", "bad_time_zone", "chunk_key_of_uncaptured_table", "missing_secret",
    "missing_secret_key", "two_sinks",
}  # fmt: skip
BAD = sorted(p.stem for p in (MANIFESTS / "bad").glob("*.yaml"))


def reference_pipeline() -> dict[str, Any]:
    docs = list(yaml.safe_load_all((MANIFESTS / "reference.yaml").read_text()))
    return dict(next(d for d in docs if d["kind"] == "CdcPipeline"))


@pytest.fixture
def crs(control_plane: ControlPlane, sparkcdc_crd: str) -> Any:
    return client.CustomObjectsApi(control_plane.api_client())


def test_every_bad_manifest_is_classified() -> None:
    assert BAD, f"no bad manifests under {MANIFESTS}"
    assert set(BAD) == set(SERVER_REJECTS) | CLIENT_ONLY
    assert not set(SERVER_REJECTS) & CLIENT_ONLY


def test_reference_pipeline_is_accepted(
    control_plane: ControlPlane, sparkcdc_crd: str, namespace: str
) -> None:
    out = control_plane.kubectl("apply", "-n", namespace, "-f", str(MANIFESTS / "reference.yaml")).stdout
    assert "cdcpipeline.sparkcdc.io/shop-replica created" in out
    got = json.loads(
        control_plane.kubectl("get", "cdcp", "shop-replica", "-n", namespace, "-o", "json").stdout
    )
    assert got["spec"]["source"]["tables"] == ["shop.orders", "shop.order_items"]
    assert got["spec"]["snapshot"] == {"chunkSize": 8096, "parallelism": 4}


@pytest.mark.parametrize("name", sorted(SERVER_REJECTS))
def test_server_rejects_bad_manifest(
    control_plane: ControlPlane, sparkcdc_crd: str, namespace: str, name: str
) -> None:
    path = MANIFESTS / "bad" / f"{name}.yaml"
    res = control_plane.kubectl("create", "--dry-run=server", "-n", namespace, "-f", str(path), check=False)
    assert res.returncode != 0, f"server accepted {path.name}: {res.stdout}"
    assert SERVER_REJECTS[name] in res.stderr


@pytest.mark.parametrize("name", sorted(CLIENT_ONLY))
def test_server_accepts_what_only_the_client_catches(
    control_plane: ControlPlane, sparkcdc_crd: str, namespace: str, name: str
) -> None:
    path = MANIFESTS / "bad" / f"{name}.yaml"
    res = control_plane.kubectl("create", "--dry-run=server", "-n", namespace, "-f", str(path), check=False)
    assert res.returncode == 0, f"the server now rejects {path.name}; move it to SERVER_REJECTS: {res.stderr}"


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("startup", "mode"), "newest", 'spec.startup.mode: Unsupported value: "newest"'),
        (("snapshot", "chunkSize"), -1, "spec.snapshot.chunkSize in body should be greater than 0"),
        (("startup", "mode"), "timestamp", "timestamp is required when mode is timestamp"),
    ],
)
def test_python_client_gets_422_with_the_message(
    crs: Any, namespace: str, path: tuple[str, str], value: Any, message: str
) -> None:
    body = copy.deepcopy(reference_pipeline())
    body["spec"][path[0]][path[1]] = value
    with pytest.raises(ApiException) as err:
        crs.create_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, body, field_validation="Strict"
        )
    assert err.value.status == 422
    assert message in json.loads(err.value.body)["message"]


def test_status_is_a_subresource(crs: Any, namespace: str) -> None:
    created = crs.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, reference_pipeline())
    name = created["metadata"]["name"]
    # Writing status through the main resource is ignored; through /status it sticks and spec is ignored.
    created["status"] = {"phase": "Streaming"}
    updated = crs.replace_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name, created)
    assert "status" not in updated
    updated["status"] = {"phase": "Streaming"}
    updated["spec"]["snapshot"]["chunkSize"] = 1
    after = crs.replace_namespaced_custom_object_status(GROUP, VERSION, namespace, PLURAL, name, updated)
    assert after["status"]["phase"] == "Streaming"
    assert after["spec"]["snapshot"]["chunkSize"] == 8096
    with pytest.raises(ApiException) as err:  # optimistic concurrency: `created` has an old resourceVersion
        crs.replace_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name, created)
    assert err.value.status == 409


def test_verified_column_in_wide_output_only(control_plane: ControlPlane, crs: Any, namespace: str) -> None:
    """The server renders the Verified column from the condition's reason, in ``-o wide`` only."""
    created = crs.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, reference_pipeline())
    name = created["metadata"]["name"]
    verified = {"type": "Verified", "status": "False", "reason": "Differs", "message": "1 chunk differs"}
    ready = {"type": "Ready", "status": "True", "reason": "Streaming", "message": ""}
    created["status"] = {"phase": "Streaming", "conditions": [ready, verified]}
    crs.replace_namespaced_custom_object_status(GROUP, VERSION, namespace, PLURAL, name, created)

    def table(*options: str) -> dict[str, str]:
        """Column -> value of the one row, cut at the header's column starts (empty cells are blank)."""
        header, row = control_plane.kubectl(
            "get", "cdcp", name, "-n", namespace, *options
        ).stdout.splitlines()
        starts = [m.start() for m in re.finditer(r"\S+", header)]
        ends = [*starts[1:], None]
        return {header[a:b].strip(): row[a:b].strip() for a, b in zip(starts, ends, strict=True)}

    plain = table()
    assert "VERIFIED" not in plain
    assert (plain["READY"], plain["REASON"]) == ("True", "Streaming")  # Ready's reason, next to it
    wide = table("-o", "wide")
    assert (wide["PHASE"], wide["VERIFIED"]) == ("Streaming", "Differs")
