"""RBAC: what the operator's and the driver's ServiceAccounts may do with the Roles the chart ships.

The chart's RBAC objects (``helm template``: ServiceAccounts, Roles, ClusterRoles and bindings) are
applied to the real control plane and every cell of a permission matrix is asked of the API server
with ``kubectl auth can-i --as system:serviceaccount:...``: the accounts can do what the operator
and the driver need, and cannot read Secrets, change pipelines' specs, grant themselves more, or
reach namespaces they are not given. (That the operator and the driver actually work with exactly
these rules is shown by ``test_chart.py``.)

The driver's Role is per namespace: a Role cannot name pipelines that do not exist yet, so a driver
may patch the status of any pipeline in its own namespace; the epoch fence keeps a stale driver of
its own pipeline out, not a hostile one of another pipeline in the same namespace.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml

from sparkcdc.testing.kube import ControlPlane, wait_until

CHART = Path(__file__).resolve().parents[2] / "charts" / "sparkcdc"
RBAC_KINDS = {"ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"}
PIPELINES, STATUS = "cdcpipelines.sparkcdc.io", "cdcpipelines.sparkcdc.io/status"
ALL = "*"  # --all-namespaces
Cell = tuple[str, str, str, str, bool]  # who, verb, resource, namespace, allowed


def new_namespace(core: Any, prefix: str) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    core.create_namespace({"metadata": {"name": name}})
    return name


def render_rbac(cp: ControlPlane, release: str, namespace: str, *values: str) -> list[dict[str, Any]]:
    command = ["helm", "template", release, str(CHART), "--namespace", namespace, *values]
    out = subprocess.run(command, env=cp.env(), capture_output=True, text=True, timeout=120, check=True)
    return [d for d in yaml.safe_load_all(out.stdout) if d and d["kind"] in RBAC_KINDS]


@pytest.fixture
def chart_rbac(
    request: pytest.FixtureRequest, control_plane: ControlPlane, core: Any, namespace: str
) -> Iterator[dict[str, str]]:
    """The chart's RBAC for ``request.param`` ("cluster" or "namespaced") applied; who is who."""
    release_ns, other = new_namespace(core, "sparkcdc-system"), new_namespace(core, "other")
    release = f"rbac{uuid.uuid4().hex[:6]}"
    scope = (
        f"driver.namespaces={{{namespace}}}"
        if request.param == "cluster"
        else f"watchNamespaces={{{namespace}}}"
    )
    objects = render_rbac(control_plane, release, release_ns, "--set", scope)
    control_plane.kubectl("apply", "-f", "-", input="\n---\n".join(json.dumps(o) for o in objects))
    (operator_sa,) = [
        o["metadata"]["name"] for o in objects
        if o["kind"] == "ServiceAccount" and o["metadata"]["namespace"] == release_ns
    ]  # fmt: skip
    who = {
        "operator": f"system:serviceaccount:{release_ns}:{operator_sa}",
        "driver": f"system:serviceaccount:{namespace}:sparkcdc-driver",
        "pipelines": namespace, "other": other,
    }  # fmt: skip
    # RBAC objects take effect a moment after they are stored.
    wait_until(lambda: can_i(control_plane, who["driver"], "get", PIPELINES, namespace), what="RBAC")
    try:
        yield who
    finally:
        for obj in objects:
            if "namespace" not in obj["metadata"]:
                kind, name = obj["kind"].lower(), obj["metadata"]["name"]
                control_plane.kubectl("delete", kind, name, "--ignore-not-found", check=False)
        for name in (release_ns, other):
            core.delete_namespace(name)


def can_i(cp: ControlPlane, who: str, verb: str, resource: str, namespace: str) -> bool:
    kind, _, sub = resource.partition("/")
    args = ["auth", "can-i", verb, kind, "--as", who]
    args += ["--subresource", sub] if sub else []
    args += ["--all-namespaces"] if namespace == ALL else ["-n", namespace]
    res = cp.kubectl(*args, check=False)
    answer = res.stdout.strip().splitlines()[-1] if res.stdout.strip() else ""
    assert answer in ("yes", "no"), f"kubectl {' '.join(args)}: {res.stdout} {res.stderr}"
    return answer == "yes"


def check(cp: ControlPlane, who: dict[str, str], matrix: list[Cell]) -> None:
    def ask(cell: Cell) -> str | None:
        account, verb, resource, where, allowed = cell
        namespace = who.get(where, where)
        if can_i(cp, who[account], verb, resource, namespace) == allowed:
            return None
        return f"{account} {'cannot' if allowed else 'can'} {verb} {resource} in {where}"

    with ThreadPoolExecutor(max_workers=4) as pool:
        wrong = [w for w in pool.map(ask, matrix) if w]
    assert not wrong, "\n".join(wrong)


def operator_cells(where: str, allowed: bool) -> list[Cell]:
    """What the operator needs, in ``where``."""
    needs = [
        ("get", PIPELINES), ("list", PIPELINES), ("watch", PIPELINES), ("patch", PIPELINES),
        ("patch", STATUS), ("update", "cdcpipelines.sparkcdc.io/finalizers"),
        ("create", "pods"), ("delete", "pods"), ("watch", "pods"), ("create", "services"),
        ("delete", "services"), ("create", "configmaps"), ("get", "configmaps"), ("create", "events"),
    ]  # fmt: skip
    return [("operator", verb, resource, where, allowed) for verb, resource in needs]


# What neither account may do anywhere: read credentials, change what users declared, escalate.
FORBIDDEN = [
    ("get", "secrets"), ("list", "secrets"), ("watch", "secrets"), ("create", PIPELINES),
    ("delete", PIPELINES), ("update", PIPELINES), ("create", "pods/exec"),
    ("create", "serviceaccounts/token"),
    ("create", "roles.rbac.authorization.k8s.io"), ("create", "rolebindings.rbac.authorization.k8s.io"),
    ("escalate", "roles.rbac.authorization.k8s.io"), ("bind", "clusterroles.rbac.authorization.k8s.io"),
    ("create", "deployments.apps"), ("delete", "customresourcedefinitions.apiextensions.k8s.io"),
    ("impersonate", "serviceaccounts"),
]  # fmt: skip


def forbidden(account: str, where: str) -> list[Cell]:
    return [(account, verb, resource, where, False) for verb, resource in FORBIDDEN]


def driver_cells() -> list[Cell]:
    needs = [
        ("get", PIPELINES), ("get", STATUS), ("patch", STATUS), ("create", "configmaps"),
        ("delete", "configmaps"), ("create", "pods"), ("delete", "pods"), ("create", "services"),
        ("create", "events"),
    ]  # fmt: skip
    cannot = [
        ("list", PIPELINES), ("patch", PIPELINES), ("update", "cdcpipelines.sparkcdc.io/finalizers"),
        ("patch", "events"),
    ]  # fmt: skip
    cells: list[Cell] = [("driver", v, r, "pipelines", True) for v, r in needs]
    cells += [("driver", v, r, "pipelines", False) for v, r in cannot]
    # Nothing at all outside its namespace: not even its own kind of pipeline there.
    cells += [("driver", v, r, "other", False) for v, r in needs]
    cells += [("driver", "list", PIPELINES, ALL, False)]
    return cells + forbidden("driver", "pipelines") + forbidden("driver", "other")


@pytest.mark.parametrize("chart_rbac", ["cluster"], indirect=True)
def test_cluster_wide_operator_and_driver_permissions(
    chart_rbac: dict[str, str], control_plane: ControlPlane
) -> None:
    matrix = operator_cells("pipelines", True) + operator_cells("other", True) + operator_cells(ALL, True)
    matrix += forbidden("operator", "pipelines") + forbidden("operator", "other") + forbidden("operator", ALL)
    matrix += [("operator", "list", "nodes", ALL, False), ("operator", "delete", "namespaces", ALL, False)]
    check(control_plane, chart_rbac, matrix + driver_cells())


@pytest.mark.parametrize("chart_rbac", ["namespaced"], indirect=True)
def test_watch_namespaces_confines_the_operator(
    chart_rbac: dict[str, str], control_plane: ControlPlane
) -> None:
    matrix = operator_cells("pipelines", True) + operator_cells("other", False)
    matrix += [("operator", "list", PIPELINES, ALL, False), ("operator", "list", "pods", ALL, False)]
    matrix += forbidden("operator", "pipelines") + forbidden("operator", "other")
    check(control_plane, chart_rbac, matrix + driver_cells())
