"""RBAC: what the operator's and the drivers' ServiceAccounts may do.

The chart's RBAC objects (``helm template``: ServiceAccounts, Roles, ClusterRoles and bindings) are
applied to the real control plane; then, for two pipelines, the objects the operator makes for each
pipeline's drivers (``controller.driver_account``: a ServiceAccount, a Role naming the pipeline, a
RoleBinding) are created *as the operator's ServiceAccount* — so the API server's escalation check
proves the operator holds everything it grants. Every cell of a permission matrix is then asked of
the API server with ``kubectl auth can-i --as system:serviceaccount:...``: the accounts can do what
the operator and the driver need, and cannot read Secrets, change pipelines' specs, grant
themselves more, reach namespaces they are not given — and one pipeline's driver cannot read or
patch another pipeline's status. The per-pipeline objects go with their pipeline (garbage
collection). (That the operator and the driver actually work with exactly these rules is shown by
``test_chart.py``.)
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import kubernetes
import pytest
import yaml
from operator_harness import Pipelines, manifest

from sparkcdc.api.resource import CdcPipeline
from sparkcdc.controller.builders import DEFAULT_SPARK_MASTER, driver_account_name
from sparkcdc.controller.driver_account import driver_role, driver_role_binding, driver_service_account
from sparkcdc.testing.kube import RESTRICTED, ControlPlane, wait_until

CHART = Path(__file__).resolve().parents[2] / "charts" / "sparkcdc"
RBAC_KINDS = {"ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"}
PIPELINES, STATUS = "cdcpipelines.sparkcdc.io", "cdcpipelines.sparkcdc.io/status"
ALL = "*"  # --all-namespaces
Cell = tuple[str, str, str, str, bool]  # who, verb, resource, namespace, allowed


def new_namespace(core: Any, prefix: str) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    core.create_namespace({"metadata": {"name": name, "labels": RESTRICTED}})
    return name


def render_rbac(cp: ControlPlane, release: str, namespace: str, *values: str) -> list[dict[str, Any]]:
    command = ["helm", "template", release, str(CHART), "--namespace", namespace, *values]
    out = subprocess.run(command, env=cp.env(), capture_output=True, text=True, timeout=120, check=True)
    return [d for d in yaml.safe_load_all(out.stdout) if d and d["kind"] in RBAC_KINDS]


def driver_rbac_as_operator(cp: ControlPlane, operator: str, pipelines: Pipelines, name: str) -> None:
    """Create pipeline ``name`` (as admin) and its drivers' account, Role and binding as the operator
    does, with the operator's own credentials: refused if the Role granted more than it holds."""
    obj = pipelines.create(manifest(name))
    pipeline = CdcPipeline.from_k8s(obj)
    template = {"metadata": {"annotations": {"example.com/role": "drivers"}}}
    bodies = [
        driver_service_account(pipeline, template),
        driver_role(pipeline, DEFAULT_SPARK_MASTER),
        driver_role_binding(pipeline),
    ]
    cp.kubectl("create", "--as", operator, "-f", "-", input="\n---\n".join(json.dumps(b) for b in bodies))


@pytest.fixture
def chart_rbac(
    request: pytest.FixtureRequest,
    control_plane: ControlPlane,
    core: Any,
    namespace: str,
    sparkcdc_crd: str,
) -> Iterator[dict[str, str]]:
    """The chart's RBAC for ``request.param`` ("cluster" or "namespaced") applied, and two pipelines
    with their drivers' RBAC made by the operator; who is who."""
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
    operator = f"system:serviceaccount:{release_ns}:{operator_sa}"
    # RBAC objects take effect a moment after they are stored.
    wait_until(lambda: can_i(control_plane, operator, "create", "roles.rbac.authorization.k8s.io", namespace))
    pipelines = Pipelines(control_plane, namespace)
    for name in ("p1", "p2"):
        driver_rbac_as_operator(control_plane, operator, pipelines, name)
    who = {
        "operator": operator,
        "driver": f"system:serviceaccount:{namespace}:{driver_account_name('p1')}",
        "shared": f"system:serviceaccount:{namespace}:sparkcdc-driver",
        "pipelines": namespace, "other": other,
    }  # fmt: skip
    wait_until(lambda: can_i(control_plane, who["driver"], "get", f"{PIPELINES}@p1", namespace), what="RBAC")
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
    """``resource``: ``kind``, ``kind/subresource``, either with ``@name`` for one object."""
    resource, _, name = resource.partition("@")
    kind, _, sub = resource.partition("/")
    args = ["auth", "can-i", verb, f"{kind}/{name}" if name else kind, "--as", who]
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


ROLES, BINDINGS = "roles.rbac.authorization.k8s.io", "rolebindings.rbac.authorization.k8s.io"


# What the operator needs to watch pipelines and report on them: wherever it watches.
WATCHING = [
    ("get", PIPELINES), ("list", PIPELINES), ("watch", PIPELINES), ("patch", PIPELINES),
    ("patch", STATUS), ("update", "cdcpipelines.sparkcdc.io/finalizers"), ("watch", "pods"),
    ("create", "events"),
]  # fmt: skip
# What it needs to start drivers: only where drivers may run.
CREATING = [
    ("create", "pods"), ("delete", "pods"), ("create", "services"), ("delete", "services"),
    ("create", "configmaps"), ("get", "configmaps"), ("create", "secrets"),
    # Each pipeline's driver account, Role and binding (and the shared account, their template).
    ("get", "serviceaccounts"), ("create", "serviceaccounts"), ("patch", "serviceaccounts"),
    ("create", ROLES), ("patch", ROLES), ("create", BINDINGS), ("patch", BINDINGS),
]  # fmt: skip


def operator_cells(where: str, allowed: bool, needs: list[tuple[str, str]] | None = None) -> list[Cell]:
    """What the operator needs (``needs``, default all of it), in ``where``."""
    return [("operator", verb, resource, where, allowed) for verb, resource in needs or WATCHING + CREATING]


# What no account may do anywhere: read credentials, change what users declared, escalate.
FORBIDDEN = [
    ("get", "secrets"), ("list", "secrets"), ("watch", "secrets"), ("create", PIPELINES),
    ("delete", PIPELINES), ("update", PIPELINES), ("create", "pods/exec"),
    ("create", "serviceaccounts/token"), ("escalate", ROLES), ("bind", ROLES),
    ("bind", "clusterroles.rbac.authorization.k8s.io"), ("create", "clusterroles.rbac.authorization.k8s.io"),
    ("create", "deployments.apps"), ("delete", "customresourcedefinitions.apiextensions.k8s.io"),
    ("impersonate", "serviceaccounts"),
]  # fmt: skip
# The operator makes each pipeline's Role and binding; no driver may make any.
DRIVER_FORBIDDEN = [*FORBIDDEN, ("create", ROLES), ("create", BINDINGS), ("create", "serviceaccounts")]


def forbidden(account: str, where: str) -> list[Cell]:
    rules = DRIVER_FORBIDDEN if account != "operator" else FORBIDDEN
    return [(account, verb, resource, where, False) for verb, resource in rules]


def driver_cells() -> list[Cell]:
    """The driver of pipeline p1: its own pipeline only, not p2 next to it."""
    needs = [
        ("get", f"{PIPELINES}@p1"), ("get", f"{STATUS}@p1"), ("patch", f"{STATUS}@p1"),
        ("create", "configmaps"), ("delete", "configmaps"), ("create", "pods"), ("delete", "pods"),
        ("create", "services"), ("create", "events"),
    ]  # fmt: skip
    cannot = [
        ("patch", f"{STATUS}@p2"), ("get", f"{STATUS}@p2"), ("get", f"{PIPELINES}@p2"),
        ("patch", STATUS), ("get", PIPELINES), ("list", PIPELINES), ("patch", f"{PIPELINES}@p1"),
        ("update", "cdcpipelines.sparkcdc.io/finalizers@p1"), ("patch", "events"),
        ("patch", f"{ROLES}@{driver_account_name('p1')}"),
    ]  # fmt: skip
    cells: list[Cell] = [("driver", v, r, "pipelines", True) for v, r in needs]
    cells += [("driver", v, r, "pipelines", False) for v, r in cannot]
    # Nothing at all outside its namespace: not even its own kind of pipeline there.
    cells += [("driver", v, r, "other", False) for v, r in needs]
    cells += [("driver", "list", PIPELINES, ALL, False)]
    # The namespace's shared driver account is only a template: it may do nothing.
    cells += [("shared", v, r, "pipelines", False) for v, r in needs]
    return cells + forbidden("driver", "pipelines") + forbidden("driver", "other")


@pytest.mark.parametrize("chart_rbac", ["cluster"], indirect=True)
def test_cluster_wide_operator_and_driver_permissions(
    chart_rbac: dict[str, str], control_plane: ControlPlane
) -> None:
    """Watching every namespace, the operator may create drivers (pods, accounts, Roles) only in the
    driver namespaces: not in another namespace, not in kube-system, not cluster-wide."""
    matrix = operator_cells("pipelines", True)
    for where in ("other", "kube-system", ALL):
        matrix += operator_cells(where, True, WATCHING) + operator_cells(where, False, CREATING)
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


@pytest.mark.parametrize("chart_rbac", ["namespaced"], indirect=True)
def test_a_pipelines_driver_rbac_goes_with_it(
    chart_rbac: dict[str, str], control_plane: ControlPlane, core: Any
) -> None:
    namespace, name = chart_rbac["pipelines"], driver_account_name("p2")
    rbac = kubernetes.client.RbacAuthorizationV1Api(control_plane.api_client())
    assert core.read_namespaced_service_account(name, namespace).metadata.annotations == {
        "example.com/role": "drivers"
    }
    Pipelines(control_plane, namespace).api.delete_namespaced_custom_object(
        "sparkcdc.io", "v1alpha1", namespace, "cdcpipelines", "p2"
    )

    def gone() -> bool:
        names = {a.metadata.name for a in core.list_namespaced_service_account(namespace).items}
        names |= {r.metadata.name for r in rbac.list_namespaced_role(namespace).items}
        names |= {b.metadata.name for b in rbac.list_namespaced_role_binding(namespace).items}
        return name not in names and driver_account_name("p1") in names

    wait_until(gone, timeout=60, what="p2's driver account, Role and binding collected")
