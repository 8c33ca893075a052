"""Fixtures for end-to-end tests against the real control plane (see docs/testing.md).

* ``control_plane`` (session): etcd + kube-apiserver + kube-controller-manager on loopback.
* ``node_runner`` (session): a Node whose pods run as local processes.
* ``core`` (session): a ``CoreV1Api`` with admin credentials.
* ``namespace`` (function): a fresh namespace, deleted afterwards.
* ``sparkcdc_crd`` (session): ``crds/cdcpipelines.sparkcdc.io.yaml`` applied and Established.

The binaries are built (or reused) before the first test runs, outside any test's timeout: a cold build
takes minutes. A failed build is an error of every e2e test, never a skip.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.testing.kube import ControlPlane, ensure_binaries, wait_until
from sparkcdc.testing.noderunner import NodeRunner

_E2E_DIR = Path(__file__).parent
CRD_FILE = _E2E_DIR.parents[1] / "crds" / "cdcpipelines.sparkcdc.io.yaml"
_binaries: dict[str, Any] = {}


def _wants_e2e(items: list[pytest.Item]) -> bool:
    return any(_E2E_DIR in Path(str(item.path)).parents for item in items)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Build the binaries once, before the test clock starts, if any e2e test was selected."""
    if session.config.option.collectonly or not _wants_e2e(session.items):
        return
    try:
        _binaries["dir"] = ensure_binaries()
    except Exception as e:  # reported as the error of every e2e test
        _binaries["error"] = e


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    if "error" in _binaries:
        raise RuntimeError(f"building the Kubernetes binaries failed: {_binaries['error']}")
    bin_dir = _binaries.get("dir") or ensure_binaries()
    with ControlPlane(tmp_path_factory.mktemp("controlplane"), bin_dir=bin_dir) as cp:
        yield cp


@pytest.fixture(scope="session")
def node_runner(
    control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[NodeRunner]:
    with NodeRunner(control_plane.kubeconfig_path, workdir=tmp_path_factory.mktemp("node")) as runner:
        yield runner


@pytest.fixture(scope="session")
def core(control_plane: ControlPlane) -> Any:
    from kubernetes import client

    return client.CoreV1Api(control_plane.api_client())


@pytest.fixture
def namespace(control_plane: ControlPlane, core: Any) -> Iterator[str]:
    name = f"t-{uuid.uuid4().hex[:10]}"
    core.create_namespace({"metadata": {"name": name}})
    # Pods are refused until the serviceaccount controller has made `default`.
    from sparkcdc.testing.kube import wait_until

    wait_until(lambda: core.read_namespaced_service_account("default", name), what="default SA")
    yield name
    core.delete_namespace(name)


@pytest.fixture(scope="session")
def sparkcdc_crd(control_plane: ControlPlane) -> str:
    """Applies the generated CdcPipeline CRD; returns its name."""
    control_plane.kubectl("apply", "--server-side", "-f", str(CRD_FILE))
    name = "cdcpipelines.sparkcdc.io"
    # Poll rather than `kubectl wait`: right after the apply the CRD may have no conditions yet,
    # which `kubectl wait` reports as an error instead of waiting.
    query = ["get", f"crd/{name}", "-o", "jsonpath={.status.conditions[?(@.type=='Established')].status}"]
    wait_until(lambda: control_plane.kubectl(*query).stdout.strip() == "True", 90, f"CRD {name} Established")
    return name
