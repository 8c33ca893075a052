"""Running ``sparkcdc operator`` against the test control plane, and small helpers for its tests.

The operator runs as a host process (it is not a pod here); the driver pods it creates run as
containers of the image their pipeline names: the fake driver's test image (``manifest``) or the
spark image (``operator_realdriver.real_pipeline``)."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from e2e_images import E2EImages
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from sparkcdc.testing.kube import ControlPlane, free_port
from sparkcdc.testing.noderunner import NodeRunner

GROUP, VERSION, PLURAL = "sparkcdc.io", "v1alpha1", "cdcpipelines"
SECRET_VALUE = "pw-e2e-7f3a9c"  # must never show up in a pod spec, status or event
DRIVER_RULES = [
    {"apiGroups": [GROUP], "resources": [PLURAL], "verbs": ["get"]},
    {"apiGroups": [GROUP], "resources": [f"{PLURAL}/status"], "verbs": ["get", "patch"]},
    {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "create", "delete"]},
    {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
]


class RunningOperator:
    def __init__(
        self, proc: subprocess.Popen[bytes], log: Path, metrics_port: int, driver_metrics_port: int,
        driver_image: str,
    ) -> None:  # fmt: skip
        self.proc, self.log, self.metrics_port = proc, log, metrics_port
        self.driver_metrics_port = driver_metrics_port  # every driver pod it starts serves here
        self.driver_image = driver_image  # what its tests' pipelines run (spec.spark.image)

    def log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-6000:]

    def assert_alive(self) -> None:
        assert self.proc.poll() is None, f"the operator exited:\n{self.log_tail()}"


def start_operator(
    cp: ControlPlane, runner: NodeRunner, workdir: Path, driver_image: str,
    *, args: Sequence[str] = (), variables: Mapping[str, str] | None = None, log_name: str = "operator.log",
) -> RunningOperator:  # fmt: skip
    """``sparkcdc operator`` as a host process; ``args`` and ``variables`` add to what every test
    uses (e.g. leader election, HOSTNAME naming a replica), ``log_name`` tells two apart."""
    port, driver_port = free_port(), free_port()
    env = cp.env()
    env.update({
        "SPARKCDC_SPARK_MASTER": "local[2]",
        "SPARKCDC_SCHEDULER_NAME": str(runner.scheduler_name),
        "SPARKCDC_METRICS_PORT": str(port),
        "SPARKCDC_DRIVER_METRICS_PORT": str(driver_port),
        "SPARKCDC_RESYNC_SECONDS": "5",
    })  # fmt: skip
    env.update(variables or {})
    log = workdir / log_name
    # argparse reads sys.argv[1:]: the arguments after -c's code.
    code = "from sparkcdc.controller.main import operator_main; raise SystemExit(operator_main())"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-c", code, *args], env=env, stdout=out, stderr=subprocess.STDOUT
        )
    return RunningOperator(proc, log, port, driver_port, driver_image)


@contextlib.contextmanager
def operator_running(
    cp: ControlPlane, runner: NodeRunner, workdir: Path, driver_image: str
) -> Iterator[RunningOperator]:
    running = start_operator(cp, runner, workdir, driver_image)
    try:
        yield running
    finally:
        running.proc.terminate()
        try:
            running.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            running.proc.kill()
            running.proc.wait()


@pytest.fixture(scope="module", name="operator")
def operator_fixture(
    control_plane: ControlPlane,
    node_runner: NodeRunner,
    images: E2EImages,
    sparkcdc_crd: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[RunningOperator]:
    """The operator for pipelines of the fake driver's image; one per module, so two never act on
    the same pipelines."""
    workdir = tmp_path_factory.mktemp("operator")
    with operator_running(control_plane, node_runner, workdir, images.fake_driver) as running:
        yield running


def create_driver_account(cp: ControlPlane, core: Any, namespace: str, password: str) -> None:
    """The driver's service account with the Role the chart gives it, and the database Secret."""
    rbac: Any = client.RbacAuthorizationV1Api(cp.api_client())
    core.create_namespaced_service_account(namespace, {"metadata": {"name": "sparkcdc-driver"}})
    rbac.create_namespaced_role(namespace, {"metadata": {"name": "sparkcdc-driver"}, "rules": DRIVER_RULES})
    rbac.create_namespaced_role_binding(namespace, {
        "metadata": {"name": "sparkcdc-driver"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "sparkcdc-driver"},
        "subjects": [{"kind": "ServiceAccount", "name": "sparkcdc-driver", "namespace": namespace}],
    })  # fmt: skip
    secret = {"metadata": {"name": "mysql-cdc"}, "stringData": {"password": password}}
    core.create_namespaced_secret(namespace, secret)


@pytest.fixture(name="driver_account")
def driver_account_fixture(control_plane: ControlPlane, core: Any, namespace: str) -> str:
    create_driver_account(control_plane, core, namespace, SECRET_VALUE)
    return "sparkcdc-driver"


def manifest(name: str, image: str | None = None, **spec: Any) -> dict[str, Any]:
    """A console-sink pipeline; its driver pods run ``image`` (the fake driver's: see
    ``RunningOperator.driver_image``), or the CRD's default image, which the test node lacks."""
    body: dict[str, Any] = {
        "source": {
            "host": "127.0.0.1", "user": "cdc", "tables": ["shop.orders"],
            "passwordSecretRef": {"name": "mysql-cdc", "key": "password"},
        },
        "sink": {"type": "console"},
        "restartPolicy": {"initialBackoffSeconds": 1, "maxBackoffSeconds": 2},
    }  # fmt: skip
    if image is not None:
        body["spark"] = {"image": image, "imagePullPolicy": "Never"}
    body.update(spec)
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "CdcPipeline",
        "metadata": {"name": name},
        "spec": body,
    }


class Pipelines:
    """CdcPipeline calls of one namespace, returning plain dicts."""

    def __init__(self, cp: ControlPlane, namespace: str) -> None:
        self.api = client.CustomObjectsApi(cp.api_client())
        self.namespace = namespace

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        return self._json(self.api.create_namespaced_custom_object(
            GROUP, VERSION, self.namespace, PLURAL, body, _preload_content=False
        ))  # fmt: skip

    def get(self, name: str) -> dict[str, Any] | None:
        try:
            return self._json(self.api.get_namespaced_custom_object(
                GROUP, VERSION, self.namespace, PLURAL, name, _preload_content=False
            ))  # fmt: skip
        except ApiException as err:
            if err.status == 404:
                return None
            raise

    def status(self, name: str) -> dict[str, Any]:
        obj = self.get(name) or {}
        result: dict[str, Any] = obj.get("status") or {}
        return result

    def patch(self, name: str, body: dict[str, Any]) -> dict[str, Any]:
        return self._json(self.api.patch_namespaced_custom_object(
            GROUP, VERSION, self.namespace, PLURAL, name, body,
            _content_type="application/merge-patch+json", _preload_content=False,
        ))  # fmt: skip

    def patch_status(self, name: str, status: dict[str, Any]) -> dict[str, Any]:
        return self._json(self.api.patch_namespaced_custom_object_status(
            GROUP, VERSION, self.namespace, PLURAL, name, {"status": status},
            _content_type="application/merge-patch+json", _preload_content=False,
        ))  # fmt: skip

    def delete(self, name: str) -> None:
        self.api.delete_namespaced_custom_object(GROUP, VERSION, self.namespace, PLURAL, name)

    @staticmethod
    def _json(response: Any) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(response.data)
        return data


def pods_of(core: Any, namespace: str, pipeline: str) -> list[dict[str, Any]]:
    selector = f"sparkcdc.io/pipeline={pipeline},app.kubernetes.io/component=driver"
    response = core.list_namespaced_pod(namespace, label_selector=selector, _preload_content=False)
    items: list[dict[str, Any]] = json.loads(response.data)["items"]
    return items


def condition(status: dict[str, Any], type_: str) -> dict[str, Any]:
    found = [c for c in status.get("conditions") or [] if c["type"] == type_]
    return found[0] if found else {}
