"""Fixtures for end-to-end tests against the real control plane (see docs/testing.md).

* ``control_plane`` (session): etcd + kube-apiserver + kube-controller-manager on loopback.
* ``images`` (session): the images pods run from (``e2e_images.E2EImages``: spark, operator and the
  fake driver's), pinned for the session.
* ``node_runner`` (session): a Node whose pods run as podman containers of their images.
* ``core`` (session): a ``CoreV1Api`` with admin credentials.
* ``namespace`` (function): a fresh namespace enforcing the ``restricted`` Pod Security Standard,
  deleted afterwards.
* ``sparkcdc_crd`` (session): ``crds/cdcpipelines.sparkcdc.io.yaml`` applied and Established.

The binaries and the images are built (or reused) before the first test runs, outside any test's
timeout: a cold build takes minutes. A failed build is an error of every e2e test that needs it,
never a skip.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from e2e_images import E2EImages, ensure_e2e_images

from sparkcdc.testing.kube import ControlPlane, create_namespace, ensure_binaries, wait_until
from sparkcdc.testing.noderunner import NodeRunner

_E2E_DIR = Path(__file__).parent
CRD_FILE = _E2E_DIR.parents[1] / "crds" / "cdcpipelines.sparkcdc.io.yaml"
_BUILDS: dict[str, Callable[[], Any]] = {"binaries": ensure_binaries, "images": ensure_e2e_images}
_built: dict[str, Any] = {}
T = TypeVar("T")


def _wants_e2e(items: list[pytest.Item]) -> bool:
    return any(_E2E_DIR in Path(str(item.path)).parents for item in items)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Build the binaries and the images once, before the test clock starts, if any e2e test was
    selected."""
    if session.config.option.collectonly or not _wants_e2e(session.items):
        return
    for what, build in _BUILDS.items():
        try:
            _built[what] = build()
        except Exception as e:  # reported as the error of every e2e test that needs it
            _built[what] = e


def _built_or_raise(what: str, kind: type[T]) -> T:
    if what not in _built:
        _built[what] = _BUILDS[what]()
    found = _built[what]
    if isinstance(found, Exception):
        raise RuntimeError(f"building the {what} failed: {found}")
    assert isinstance(found, kind)
    return found


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    bin_dir = _built_or_raise("binaries", Path)
    with ControlPlane(tmp_path_factory.mktemp("controlplane"), bin_dir=bin_dir) as cp:
        yield cp


@pytest.fixture(scope="session")
def images() -> E2EImages:
    return _built_or_raise("images", E2EImages)


@pytest.fixture(scope="session")
def node_runner(
    control_plane: ControlPlane, images: E2EImages, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[NodeRunner]:
    """Pods run from their images (a test pod names ``images.spark``, a pipeline its image)."""
    workdir = tmp_path_factory.mktemp("node")
    with NodeRunner(control_plane.kubeconfig_path, workdir=workdir, containers=True) as runner:
        yield runner


@pytest.fixture(scope="session")
def core(control_plane: ControlPlane) -> Any:
    from kubernetes import client

    return client.CoreV1Api(control_plane.api_client())


@pytest.fixture
def namespace(control_plane: ControlPlane, core: Any) -> Iterator[str]:
    name = create_namespace(core, f"t-{uuid.uuid4().hex[:10]}")
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
