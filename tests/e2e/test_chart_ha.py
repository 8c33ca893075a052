"""The chart's high availability and CRD upgrades, against the real control plane.

* Rendered: two replicas with leader election (``--leader-election``, the Lease named after the
  release, its namespace from the downward API), a Role on that Lease alone in the release
  namespace; without leader election one replica with Recreate, and more than one is refused.
* The API server agrees that the chart's operator account may create and update its own Lease,
  but not another Lease or one elsewhere (``kubectl auth can-i``). The operator running with that
  account's token and the chart's arguments holds the Lease: test_chart.py's RBAC tests.
* ``crds.templated``: the CRD rendered from the chart is crds/'s file plus
  ``helm.sh/resource-policy: keep``; a release switched to it takes the CRD over, ``helm upgrade``
  with a changed CRD changes it on the API server, and ``helm uninstall`` leaves it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from sparkcdc.testing.kube import ControlPlane, create_namespace, wait_until

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "sparkcdc"
CRD_FILE = CHART / "crds" / "cdcpipelines.sparkcdc.io.yaml"
CRD_NAME = "cdcpipelines.sparkcdc.io"
Obj = dict[str, Any]


def helm(cp: ControlPlane, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    res = subprocess.run(["helm", *args], env=cp.env(), capture_output=True, text=True, timeout=180)
    if check and res.returncode != 0:
        raise AssertionError(f"helm {' '.join(args)} failed ({res.returncode}):\n{res.stderr}")
    return res


def render(cp: ControlPlane, *args: str) -> list[Obj]:
    out = helm(cp, "template", "rel", str(CHART), "--namespace", "ops", *args).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def one(objects: list[Obj], kind: str, name: str | None = None) -> Obj:
    (found,) = [o for o in objects if o["kind"] == kind and name in (None, o["metadata"]["name"])]
    return found


def test_two_replicas_elect_a_leader_on_a_lease_of_their_own(control_plane: ControlPlane) -> None:
    objects = render(control_plane)
    spec = one(objects, "Deployment")["spec"]
    assert (spec["replicas"], spec["strategy"]["type"]) == (2, "RollingUpdate")
    (container,) = spec["template"]["spec"]["containers"]
    assert {"--leader-election", "--leader-election-name=rel-sparkcdc"} <= set(container["args"])
    assert "--leader-election-lease-duration=15" in container["args"]
    env = {e["name"]: e for e in container["env"]}
    assert env["SPARKCDC_LEADER_ELECTION_NAMESPACE"]["valueFrom"] == {
        "fieldRef": {"fieldPath": "metadata.namespace"}
    }
    role = one(objects, "Role", "rel-sparkcdc-leader-election")
    assert role["metadata"]["namespace"] == "ops"
    assert role["rules"] == [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
        {
            "apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
            "resourceNames": ["rel-sparkcdc"], "verbs": ["get", "update"],
        },
    ]  # fmt: skip
    binding = one(objects, "RoleBinding", "rel-sparkcdc-leader-election")
    assert binding["roleRef"]["name"] == "rel-sparkcdc-leader-election"
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "rel-sparkcdc", "namespace": "ops"}]
    budget = one(objects, "PodDisruptionBudget")["spec"]
    assert budget["maxUnavailable"] == 1  # a drain moves one replica at a time: the other takes over
    assert not [o for o in objects if o["kind"] == "CustomResourceDefinition"]  # crds/ only


def test_without_leader_election_one_replica_recreated(control_plane: ControlPlane) -> None:
    objects = render(control_plane, "--set", "leaderElection.enabled=false", "--set", "replicaCount=1")
    spec = one(objects, "Deployment")["spec"]
    assert (spec["replicas"], spec["strategy"]["type"]) == (1, "Recreate")
    assert not [a for a in spec["template"]["spec"]["containers"][0]["args"] if "leader" in a]
    assert not [o for o in objects if o["kind"] == "Role" and "leader" in o["metadata"]["name"]]
    refused = helm(
        control_plane, "template", "rel", str(CHART), "--set", "leaderElection.enabled=false", check=False
    )
    assert refused.returncode != 0 and "replicaCount > 1 needs leaderElection.enabled" in refused.stderr
    unsafe = ["--set", "leaderElection.renewDeadlineSeconds=15"]
    refused = helm(control_plane, "template", "rel", str(CHART), *unsafe, check=False)
    assert "longer than renewDeadlineSeconds" in refused.stderr


def test_the_operator_account_may_use_its_lease_only(control_plane: ControlPlane, core: Any) -> None:
    cp = control_plane
    release_ns = create_namespace(core, f"sparkcdc-ha-{uuid.uuid4().hex[:6]}")
    other_ns = create_namespace(core, f"sparkcdc-other-{uuid.uuid4().hex[:6]}")
    release = f"r{uuid.uuid4().hex[:6]}"
    helm(cp, "install", release, str(CHART), "-n", release_ns, "--skip-crds")
    account = f"system:serviceaccount:{release_ns}:{release}-sparkcdc"
    try:

        def can(verb: str, resource: str, namespace: str) -> bool:
            res = cp.kubectl("auth", "can-i", verb, resource, "-n", namespace, "--as", account, check=False)
            return res.stdout.strip() == "yes"

        lease = f"leases.coordination.k8s.io/{release}-sparkcdc"
        assert can("create", "leases.coordination.k8s.io", release_ns)
        assert can("get", lease, release_ns) and can("update", lease, release_ns)
        assert not can("update", "leases.coordination.k8s.io/kube-scheduler", release_ns)
        assert not can("delete", lease, release_ns)
        assert not can("create", "leases.coordination.k8s.io", other_ns)
        assert not can("update", lease, other_ns)
        assert not can("update", "leases.coordination.k8s.io/kube-controller-manager", "kube-system")
    finally:
        helm(cp, "uninstall", release, "-n", release_ns, check=False)
        for namespace in (release_ns, other_ns):
            core.delete_namespace(namespace)


def test_templated_crd_is_the_crds_file_with_keep(control_plane: ControlPlane) -> None:
    crd = one(render(control_plane, "--set", "crds.templated=true"), "CustomResourceDefinition")
    assert crd["metadata"].pop("annotations") == {"helm.sh/resource-policy": "keep"}
    assert crd == yaml.safe_load(CRD_FILE.read_text())


def served_crd(cp: ControlPlane) -> Obj:
    crd: Obj = json.loads(cp.kubectl("get", "crd", CRD_NAME, "-o", "json").stdout)
    return crd


def columns(crd: Obj) -> list[str]:
    return [c["name"] for c in crd["spec"]["versions"][0]["additionalPrinterColumns"]]


@pytest.fixture
def chart_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "sparkcdc"
    shutil.copytree(CHART, copy)
    return copy


def test_helm_upgrade_upgrades_the_templated_crd(
    control_plane: ControlPlane, core: Any, sparkcdc_crd: str, chart_copy: Path
) -> None:
    """The switch of docs/install.md ("Upgrading the CRD") on a cluster that has the CRD from
    crds/ already: the release takes it over, upgrades change it, uninstalling leaves it."""
    cp = control_plane
    release_ns = create_namespace(core, f"sparkcdc-crd-{uuid.uuid4().hex[:6]}")
    release = f"r{uuid.uuid4().hex[:6]}"
    templated = ["--set", "crds.templated=true", "--skip-crds", "--take-ownership"]
    original = columns(served_crd(cp))
    try:
        helm(cp, "install", release, str(CHART), "-n", release_ns, *templated)
        annotations = served_crd(cp)["metadata"]["annotations"]
        assert annotations["helm.sh/resource-policy"] == "keep"
        assert annotations["meta.helm.sh/release-name"] == release
        # A newer chart's CRD: one more printer column (wide output only).
        crd = yaml.safe_load(CRD_FILE.read_text())
        crd["spec"]["versions"][0]["additionalPrinterColumns"].append(
            {"name": "Upgraded", "type": "string", "jsonPath": ".status.phase", "priority": 1}
        )
        (chart_copy / "crds" / CRD_FILE.name).write_text(yaml.safe_dump(crd, sort_keys=False))
        helm(cp, "upgrade", release, str(chart_copy), "-n", release_ns, "--reuse-values")
        upgraded = [*original, "Upgraded"]
        wait_until(lambda: columns(served_crd(cp)) == upgraded, timeout=30, what="CRD upgraded")
        notes = helm(cp, "get", "notes", release, "-n", release_ns).stdout
        assert "upgraded with it" in notes and "helm show crds" not in notes
        helm(cp, "upgrade", release, str(CHART), "-n", release_ns, "--reuse-values")  # and back
        assert columns(served_crd(cp)) == original
    finally:
        helm(cp, "uninstall", release, "-n", release_ns, "--wait", "--timeout", "60s", check=False)
        core.delete_namespace(release_ns)
    assert columns(served_crd(cp)) == original  # kept: pipelines survive the uninstall
