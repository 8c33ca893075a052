"""The Helm chart against the real control plane.

* ``helm lint`` passes and ``helm template`` renders with the defaults and every ``ci/`` value set;
* the rendered objects are accepted by the API server (server-side dry run), the operator pod passes
  the ``restricted`` Pod Security Standard, and ``helm install`` / ``upgrade`` / ``uninstall`` work;
* bad values are refused by ``values.schema.json`` (or the chart's cross-field checks) with a message
  naming the value;
* the operator, run with a token of the chart's operator ServiceAccount (not admin) and the arguments
  of the chart's Deployment, reconciles a CdcPipeline: it creates the driver pod and Service, and the
  driver — running as the pipeline's driver ServiceAccount — writes its checkpoint. So the chart's
  RBAC suffices, cluster-wide and with ``watchNamespaces``; and the chart's Deployment itself runs
  the operator from its image.

Every namespace enforces the ``restricted`` Pod Security Standard; driver pods run the fake driver's
image (``tests/e2e/fake_driver``).
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from e2e_images import E2EImages
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from operator_harness import Pipelines, condition, manifest, pods_of

from sparkcdc.testing.kube import RESTRICTED, ControlPlane, create_namespace, free_port, wait_until
from sparkcdc.testing.noderunner import NodeRunner

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "sparkcdc"
CI_VALUES = sorted((CHART / "ci").glob("*-values.yaml"))
# Namespaces the ci/ value sets name; they must exist before objects are put into them.
CI_NAMESPACES = ("sparkcdc-team-a", "sparkcdc-team-b")

Obj = dict[str, Any]


# -- helpers -----------------------------------------------------------------------------------------


def helm(cp: ControlPlane, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    res = subprocess.run(["helm", *args], env=cp.env(), capture_output=True, text=True, timeout=180)
    if check and res.returncode != 0:
        raise AssertionError(f"helm {' '.join(args)} failed ({res.returncode}):\n{res.stderr}")
    return res


def render(cp: ControlPlane, namespace: str, *args: str, crds: bool = False) -> list[Obj]:
    extra = ["--include-crds"] if crds else []
    out = helm(cp, "template", "rel", str(CHART), "--namespace", namespace, *extra, *args).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def find(objects: list[Obj], kind: str, name: str | None = None, namespace: str | None = None) -> list[Obj]:
    return [
        o
        for o in objects
        if o["kind"] == kind
        and (name is None or o["metadata"]["name"] == name)
        and (namespace is None or o["metadata"].get("namespace") == namespace)
    ]


def rules_grant(rules: list[Obj], group: str, resource: str, verb: str) -> bool:
    return any(
        group in r.get("apiGroups", []) and resource in r.get("resources", []) and verb in r.get("verbs", [])
        for r in rules
    )


def ensure_namespace(core: Any, name: str) -> None:
    try:
        core.create_namespace({"metadata": {"name": name, "labels": RESTRICTED}})
    except ApiException as err:
        if err.status != 409:
            raise


def new_namespace(core: Any, prefix: str) -> str:
    return create_namespace(core, f"{prefix}-{uuid.uuid4().hex[:8]}")


OPEN_SCHEMA = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


# Just enough of the Prometheus Operator's CRDs for ServiceMonitor and PodMonitor objects to be stored.
def monitoring_crd(kind: str, plural: str) -> Obj:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.monitoring.coreos.com"},
        "spec": {
            "group": "monitoring.coreos.com",
            "names": {"kind": kind, "plural": plural, "listKind": f"{kind}List", "singular": kind.lower()},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1", "served": True, "storage": True,
                "schema": {"openAPIV3Schema": OPEN_SCHEMA},
            }],
        },
    }  # fmt: skip


def established(cp: ControlPlane, name: str) -> bool:
    """Whether CRD ``name`` is Established. Polled: ``kubectl wait --for=condition=Established`` right
    after an apply can fail at once while the CRD has no conditions yet."""
    out = cp.kubectl("get", "crd", name, "-o", "json", check=False)
    if out.returncode != 0:
        return False
    conditions = (json.loads(out.stdout).get("status") or {}).get("conditions") or []
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)


@pytest.fixture(scope="module")
def cluster_ready(control_plane: ControlPlane, core: Any) -> ControlPlane:
    """The CdcPipeline CRD (the chart's copy), the Prometheus Operator CRDs and the ci/ namespaces."""
    crds = [monitoring_crd("ServiceMonitor", "servicemonitors"), monitoring_crd("PodMonitor", "podmonitors")]
    control_plane.kubectl("apply", "-f", "-", input="\n---\n".join(json.dumps(c) for c in crds))
    control_plane.kubectl(
        "apply", "--server-side", "-f", str(CHART / "crds" / "cdcpipelines.sparkcdc.io.yaml")
    )
    names = ["cdcpipelines.sparkcdc.io", *(c["metadata"]["name"] for c in crds)]
    wait_until(lambda: all(established(control_plane, n) for n in names), timeout=60, what="CRDs Established")
    for name in CI_NAMESPACES:
        ensure_namespace(core, name)
    return control_plane


# -- lint, render, dry run -----------------------------------------------------------------------------


@pytest.mark.parametrize("values", CI_VALUES, ids=lambda p: p.name)
def test_lint_passes(control_plane: ControlPlane, values: Path) -> None:
    res = helm(control_plane, "lint", "--strict", str(CHART), "--values", str(values))
    assert "0 chart(s) failed" in res.stdout


def test_ci_value_sets_cover_the_modes() -> None:
    names = {p.name for p in CI_VALUES}
    assert {"default-values.yaml", "namespaced-values.yaml", "monitoring-values.yaml"} <= names


@pytest.mark.parametrize("values", CI_VALUES, ids=lambda p: p.name)
def test_rendered_objects_pass_a_server_side_dry_run(
    cluster_ready: ControlPlane, namespace: str, values: Path
) -> None:
    objects = render(cluster_ready, namespace, "--values", str(values), crds=True)
    text = "\n---\n".join(json.dumps(o) for o in objects)
    res = cluster_ready.kubectl("apply", "--dry-run=server", "-f", "-", input=text, check=False)
    assert res.returncode == 0, res.stderr
    assert res.stdout.count("(server dry run)") == len(objects)


def test_default_render_is_cluster_wide(control_plane: ControlPlane) -> None:
    objects = render(control_plane, "ops")
    (deployment,) = find(objects, "Deployment")
    spec = deployment["spec"]
    # Two replicas taking turns on the Lease (test_chart_ha.py); rolling updates are safe with it.
    assert (spec["replicas"], spec["strategy"]["type"]) == (2, "RollingUpdate")
    pod = spec["template"]["spec"]
    (container,) = pod["containers"]
    assert container["image"] == f"ghcr.io/sparkcdc/sparkcdc-operator:{chart_meta()['appVersion']}"
    assert container["command"] == ["sparkcdc", "operator"]
    assert "--driver-service-account=sparkcdc-driver" in container["args"]
    assert not [a for a in container["args"] if a.startswith("--namespace")]
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert f"--liveness-port={ports['health']}" in container["args"]
    assert f"--metrics-port={ports['metrics']}" in container["args"]
    assert "--driver-metrics-port=8090" in container["args"]
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"]["drop"] == ["ALL"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    # Cluster-wide, the operator only watches and reports; what it creates is bound in the driver
    # namespace alone (here the release's); the shared driver account (no Role: each pipeline's
    # drivers get their own account and Role from the operator) is there too.
    (watch,) = find(objects, "ClusterRole", "rel-sparkcdc")
    assert rules_grant(watch["rules"], "sparkcdc.io", "cdcpipelines/status", "patch")
    assert rules_grant(watch["rules"], "", "pods", "watch")
    for resource in ("pods", "services", "configmaps", "secrets", "serviceaccounts"):
        assert not rules_grant(watch["rules"], "", resource, "create"), resource
    (binding,) = find(objects, "RoleBinding", "rel-sparkcdc-drivers", "ops")
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "rel-sparkcdc-drivers",
    }
    assert not [
        b for b in find(objects, "ClusterRoleBinding") if b["roleRef"]["name"] == "rel-sparkcdc-drivers"
    ]
    (role,) = find(objects, "ClusterRole", "rel-sparkcdc-drivers")
    assert rules_grant(role["rules"], "", "pods", "create")
    assert not rules_grant(role["rules"], "", "secrets", "get")  # the operator never reads secrets
    for kind in ("roles", "rolebindings"):
        assert rules_grant(role["rules"], "rbac.authorization.k8s.io", kind, "create")
        assert not rules_grant(role["rules"], "rbac.authorization.k8s.io", kind, "escalate")
        assert not rules_grant(role["rules"], "rbac.authorization.k8s.io", kind, "bind")
    assert rules_grant(role["rules"], "", "persistentvolumeclaims", "create")  # what it grants drivers
    assert not find(objects, "Role", "rel-sparkcdc")
    assert find(objects, "ServiceAccount", "sparkcdc-driver", "ops")
    assert not find(objects, "Role", "sparkcdc-driver") and not find(
        objects, "RoleBinding", "sparkcdc-driver"
    )
    assert find(objects, "PodDisruptionBudget")
    assert not find(objects, "NetworkPolicy") and not find(objects, "ServiceMonitor")
    # Pipeline authors' roles, aggregated into the cluster's; no image allow-list by default.
    (view,) = find(objects, "ClusterRole", "rel-sparkcdc-view")
    assert view["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-view"] == "true"
    assert not rules_grant(view["rules"], "sparkcdc.io", "cdcpipelines", "create")
    (edit,) = find(objects, "ClusterRole", "rel-sparkcdc-edit")
    assert rules_grant(edit["rules"], "sparkcdc.io", "cdcpipelines", "create")
    assert not rules_grant(edit["rules"], "sparkcdc.io", "cdcpipelines/status", "patch")
    assert not find(objects, "ValidatingAdmissionPolicy")
    assert not [a for a in container["args"] if a.startswith("--allowed-image")]


def test_watch_namespaces_switches_to_namespaced_roles(control_plane: ControlPlane) -> None:
    objects = render(control_plane, "ops", "--set", "watchNamespaces={team-a,team-b}")
    (container,) = find(objects, "Deployment")[0]["spec"]["template"]["spec"]["containers"]
    assert [a for a in container["args"] if a.startswith("--namespace")] == [
        "--namespace=team-a",
        "--namespace=team-b",
    ]
    for cluster_role in find(objects, "ClusterRole"):  # only kopf's read-only discovery stays cluster-wide
        if cluster_role["metadata"]["name"] in ("rel-sparkcdc-view", "rel-sparkcdc-edit"):
            continue  # the pipeline authors' roles: bound by nobody, aggregated into view and edit
        for rule in cluster_role["rules"]:
            assert set(rule["verbs"]) <= {"list", "watch"}
            assert set(rule["resources"]) <= {"customresourcedefinitions", "namespaces"}
    for ns in ("team-a", "team-b"):
        (role,) = find(objects, "Role", "rel-sparkcdc", ns)
        assert rules_grant(role["rules"], "", "pods", "create")
        (binding,) = find(objects, "RoleBinding", "rel-sparkcdc", ns)
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "rel-sparkcdc", "namespace": "ops"}]
        assert find(objects, "ServiceAccount", "sparkcdc-driver", ns)
        assert rules_grant(role["rules"], "rbac.authorization.k8s.io", "roles", "create")
    assert not find(objects, "ServiceAccount", "sparkcdc-driver", "ops")


def test_operator_pod_meets_the_restricted_pod_security_standard(
    control_plane: ControlPlane, core: Any
) -> None:
    ns = new_namespace(core, "restricted")  # enforcing the restricted standard, as every test's
    try:
        template = find(render(control_plane, ns), "Deployment")[0]["spec"]["template"]
        pod = {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "operator-probe", "namespace": ns, "labels": template["metadata"]["labels"]},
            "spec": {**template["spec"], "serviceAccountName": "default"},
        }  # fmt: skip
        res = control_plane.kubectl(
            "apply", "--dry-run=server", "-f", "-", input=json.dumps(pod), check=False
        )
        assert res.returncode == 0, res.stderr
        # The namespace really enforces: a pod without the security settings is refused.
        bare = {**pod, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
        res = control_plane.kubectl(
            "apply", "--dry-run=server", "-f", "-", input=json.dumps(bare), check=False
        )
        assert res.returncode != 0 and "violates PodSecurity" in res.stderr
    finally:
        core.delete_namespace(ns)


@pytest.mark.parametrize("path", sorted((REPO / "examples").glob("*.yaml")), ids=lambda p: p.name)
def test_example_pipelines_are_accepted_by_the_crd(
    cluster_ready: ControlPlane, namespace: str, path: Path
) -> None:
    """The CRD's schema and CEL rules, not only ``sparkcdc validate``, accept the examples."""
    res = cluster_ready.kubectl("apply", "--dry-run=server", "-n", namespace, "-f", str(path), check=False)
    assert res.returncode == 0, res.stderr
    assert "cdcpipeline.sparkcdc.io/" in res.stdout


def test_argocd_example_values_render(control_plane: ControlPlane, tmp_path: Path) -> None:
    docs = [d for d in yaml.safe_load_all((REPO / "examples" / "argocd" / "sparkcdc.yaml").read_text()) if d]
    (app,) = [
        d for d in docs if d["kind"] == "Application" and d["spec"]["source"]["path"] == "charts/sparkcdc"
    ]
    values = tmp_path / "values.yaml"
    values.write_text(json.dumps(app["spec"]["source"]["helm"]["valuesObject"]))
    helm(control_plane, "lint", "--strict", str(CHART), "-f", str(values))
    objects = render(control_plane, app["spec"]["destination"]["namespace"], "-f", str(values))
    assert find(objects, "ServiceAccount", "sparkcdc-driver", "shop")


# -- bad values --------------------------------------------------------------------------------------

BAD_VALUES = [
    (["--set", "image.pullPolicy=Sometimes"], "at '/image/pullPolicy': value must be one of"),
    (["--set", "watchNamespaces={Team_A}"], "at '/watchNamespaces/0': 'Team_A' does not match pattern"),
    (["--set", "replicas=2"], "additional properties 'replicas' not allowed"),
    (["--set", "metrics.port=70000"], "at '/metrics/port': maximum"),
    (["--set", "operator.resyncSeconds=0"], "at '/operator/resyncSeconds'"),
    (["--set", "resources.limits.memory=lots"], "at '/resources/limits/memory': 'lots' does not match"),
    (["--set", "serviceMonitor.interval=5 minutes"], "at '/serviceMonitor/interval'"),
    (["--set", "image.digest=latest"], "at '/image/digest'"),
    (["--set", "driver.serviceAccount.name=Driver!"], "at '/driver/serviceAccount/name'"),
    (
        ["--set", "podMonitor.enabled=true,driver.metricsPort=0"],
        "podMonitor.enabled needs driver.metricsPort",
    ),
    (["--set", "driver.metricsPort=7079"], "driver.metricsPort 7079 is taken by Spark"),
    (["--set", "metrics.enabled=false,serviceMonitor.enabled=true"], "serviceMonitor.enabled needs metrics"),
    (["--set", "health.port=8080"], "metrics.port and health.port must differ"),
    (["--set", "watchNamespaces={a},driver.namespaces={b}"], "driver.namespaces must be empty"),
    (["--set", "serviceAccount.create=false"], "serviceAccount.name is required"),
    (["--set", "pipelines.allowedImages={has space/}"], "at '/pipelines/allowedImages/0'"),
    (["--set", "rbac.aggregatedRoles=yes"], "at '/rbac/aggregatedRoles'"),
]


@pytest.mark.parametrize(("args", "message"), BAD_VALUES, ids=[" ".join(a[1:]) for a, _ in BAD_VALUES])
def test_bad_values_are_refused_with_a_clear_message(
    control_plane: ControlPlane, args: list[str], message: str
) -> None:
    res = helm(control_plane, "template", "rel", str(CHART), *args, check=False)
    assert res.returncode != 0
    assert message in res.stderr, res.stderr


def test_install_refuses_bad_values_before_creating_anything(
    control_plane: ControlPlane, core: Any, namespace: str
) -> None:
    res = helm(
        control_plane, "install", "bad", str(CHART), "-n", namespace, "--set", "rbac.create=yes", check=False
    )
    assert res.returncode != 0
    assert "at '/rbac/create': got string, want boolean" in res.stderr, res.stderr
    assert helm(control_plane, "list", "-n", namespace, "-q").stdout.strip() == ""
    assert not core.list_namespaced_service_account(namespace, label_selector="app.kubernetes.io/name").items


# -- install, upgrade, uninstall -------------------------------------------------------------------


def test_install_upgrade_uninstall(cluster_ready: ControlPlane, core: Any, namespace: str) -> None:
    cp = cluster_ready
    release = f"r{uuid.uuid4().hex[:6]}"
    fullname = f"{release}-sparkcdc"
    values = str(CHART / "ci" / "monitoring-values.yaml")
    install = ["install", release, str(CHART), "-n", namespace, "-f", values]
    helm(cp, *install, "--set", f"driver.namespaces={{{namespace}}}")
    # Typed as Any: the generated client's Optional attributes add nothing to a test.
    apps: Any = client.AppsV1Api(cp.api_client())
    rbac: Any = client.RbacAuthorizationV1Api(cp.api_client())
    custom: Any = client.CustomObjectsApi(cp.api_client())
    deployment = apps.read_namespaced_deployment(fullname, namespace)
    assert deployment.spec.strategy.type == "RollingUpdate"
    assert core.read_namespaced_service_account("sparkcdc-driver", namespace)
    assert rbac.read_cluster_role(fullname)
    monitor = custom.get_namespaced_custom_object(
        "monitoring.coreos.com", "v1", namespace, "servicemonitors", fullname
    )
    assert monitor["spec"]["endpoints"][0]["port"] == "metrics"
    drivers = custom.get_namespaced_custom_object(
        "monitoring.coreos.com", "v1", namespace, "podmonitors", f"{fullname}-drivers"
    )
    assert drivers["spec"]["namespaceSelector"]["matchNames"] == [namespace]
    # An upgrade changes the operator's arguments; the rolling update replaces the pods.
    helm(
        cp,
        "upgrade",
        release,
        str(CHART),
        "-n",
        namespace,
        "--reuse-values",
        "--set",
        "operator.resyncSeconds=10",
    )
    args = apps.read_namespaced_deployment(fullname, namespace).spec.template.spec.containers[0].args
    assert "--resync-seconds=10" in args
    notes = helm(cp, "get", "notes", release, "-n", namespace).stdout
    assert "helm show crds" in notes  # the CRD upgrade step is shown on upgrades
    helm(cp, "uninstall", release, "-n", namespace, "--wait", "--timeout", "60s")
    selector = f"app.kubernetes.io/instance={release}"
    names = [r.metadata.name for r in rbac.list_cluster_role(label_selector=selector).items]
    assert names == []
    # The CRD stays (Helm never deletes crds/): pipelines survive an uninstall.
    assert cp.kubectl("get", "crd", "cdcpipelines.sparkcdc.io").returncode == 0


# -- the chart's RBAC is enough for the operator and the driver -----------------------------------


def chart_meta() -> Obj:
    meta: Obj = yaml.safe_load((CHART / "Chart.yaml").read_text())
    return meta


def token_kubeconfig(cp: ControlPlane, core: Any, namespace: str, account: str, path: Path) -> Path:
    """A kubeconfig authenticating as ``namespace/account`` with a TokenRequest token."""
    request = {"spec": {"expirationSeconds": 3600}}
    token = core.create_namespaced_service_account_token(account, namespace, request).status.token
    ca = (cp.pki / "ca.crt").read_bytes()
    cfg = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "c", "cluster": {
            "server": cp.server, "certificate-authority-data": base64.b64encode(ca).decode()}}],
        "users": [{"name": account, "user": {"token": token}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": account, "namespace": namespace}}],
        "current-context": "c",
    }  # fmt: skip
    path.write_text(json.dumps(cfg))
    path.chmod(0o600)
    return path


def rbac_denials(log: str) -> list[str]:
    """RBAC refusals of a service account, and kopf's warnings about missing permissions (other 403s,
    such as creating in a namespace being deleted by an earlier test, are not RBAC's)."""
    found = re.findall(r'User \\?"system:serviceaccount:[^"\\]+\\?" cannot [^"\\]+', log)
    return found + re.findall(r"Not enough permissions[^\n]*", log)


class ChartOperator:
    def __init__(self, proc: subprocess.Popen[bytes], log: Path, liveness_port: int) -> None:
        self.proc, self.log, self.liveness_port = proc, log, liveness_port

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-6000:]

    def alive(self) -> None:
        assert self.proc.poll() is None, f"the operator exited:\n{self.tail()}"


@pytest.fixture
def chart_operator(
    request: pytest.FixtureRequest,
    cluster_ready: ControlPlane,
    node_runner: NodeRunner,
    core: Any,
    namespace: str,
    tmp_path: Path,
) -> Iterator[tuple[ChartOperator, str]]:
    """The chart installed (``request.param``: "all", "namespaced" or "no-rbac"), and ``sparkcdc
    operator`` started with the chart's Deployment arguments and a token of the chart's operator
    ServiceAccount."""
    cp = cluster_ready
    release_ns = new_namespace(core, "sparkcdc-system")
    release = f"r{uuid.uuid4().hex[:6]}"
    scope = {
        "all": ["--set", f"driver.namespaces={{{namespace}}}"],
        "namespaced": ["--set", f"watchNamespaces={{{namespace}}}"],
        "no-rbac": ["--set", f"driver.namespaces={{{namespace}}}", "--set", "rbac.create=false"],
    }[request.param]
    helm(cp, "install", release, str(CHART), "-n", release_ns, *scope)
    objects = [
        d for d in yaml.safe_load_all(helm(cp, "get", "manifest", release, "-n", release_ns).stdout) if d
    ]
    (deployment,) = find(objects, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["command"] == ["sparkcdc", "operator"]
    kubeconfig = token_kubeconfig(
        cp, core, release_ns, pod["serviceAccountName"], tmp_path / "operator.kubeconfig"
    )
    liveness = free_port()
    # The chart's arguments, then what a test cluster needs: driver pods for the node runner (Spark
    # in local mode) and free local ports instead of the container's.
    argv = [
        *container["args"],
        "--scheduler-name", str(node_runner.scheduler_name),
        "--spark-master", "local[2]",
        f"--metrics-port={free_port()}", f"--liveness-port={liveness}", "--resync-seconds=5",
    ]  # fmt: skip
    env = {k: v for k, v in cp.env().items() if not k.startswith(("KUBERNETES_", "SPARKCDC_"))}
    env.update({e["name"]: e["value"] for e in container.get("env", []) if "value" in e})
    env["KUBECONFIG"] = str(kubeconfig)
    env["HOME"] = str(tmp_path)
    log = tmp_path / "operator.log"
    # The container's command, `sparkcdc operator`, from this virtualenv.
    command = [str(Path(sys.executable).parent / container["command"][0]), *container["command"][1:]]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*command, *argv], env=env, stdout=out, stderr=subprocess.STDOUT, cwd=tmp_path
        )
    running = ChartOperator(proc, log, liveness)
    try:
        yield running, release_ns
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        helm(cp, "uninstall", release, "-n", release_ns, check=False)
        core.delete_namespace(release_ns)


@pytest.mark.parametrize("chart_operator", ["all", "namespaced"], indirect=True)
def test_operator_with_the_charts_rbac_reconciles_a_pipeline(
    chart_operator: tuple[ChartOperator, str], control_plane: ControlPlane, core: Any, namespace: str,
    images: E2EImages,
) -> None:  # fmt: skip
    operator, _ = chart_operator
    core.create_namespaced_secret(
        namespace, {"metadata": {"name": "mysql-cdc"}, "stringData": {"password": "pw"}}
    )
    pipelines = Pipelines(control_plane, namespace)
    pipelines.create(manifest("chart-rbac", images.fake_driver))

    def checkpointed() -> bool:
        operator.alive()
        checkpoint = pipelines.status("chart-rbac").get("checkpoint") or {}
        return checkpoint.get("epochs") == [1]

    # The operator created the pipeline's own driver ServiceAccount, Role and RoleBinding (holding
    # all it granted: the chart gives it no escalate or bind), the driver pod running as that
    # account, and its Service; the driver, with the account's token, read its pipeline and wrote
    # the fenced checkpoint.
    wait_until(checkpointed, timeout=90, what=f"the driver's checkpoint (operator log: {operator.log})")
    (pod,) = pods_of(core, namespace, "chart-rbac")
    assert pod["spec"]["serviceAccountName"] == "chart-rbac-sparkcdc-driver"
    assert core.read_namespaced_service("chart-rbac-driver", namespace)
    rbac: Any = client.RbacAuthorizationV1Api(control_plane.api_client())
    role = rbac.read_namespaced_role("chart-rbac-sparkcdc-driver", namespace)
    assert role.metadata.owner_references[0].name == "chart-rbac"
    assert {tuple(r.resource_names or ()) for r in role.rules if r.api_groups == ["sparkcdc.io"]} == {
        ("chart-rbac",)
    }

    def snapshotting() -> Obj:
        status = pipelines.status("chart-rbac")
        return status if status.get("phase") == "Snapshotting" else {}

    status = wait_until(snapshotting, timeout=60, what="phase Snapshotting")
    assert condition(status, "Ready")["status"] == "True"
    # kopf's health endpoint, which the chart's probes call, answers.
    with urllib.request.urlopen(f"http://127.0.0.1:{operator.liveness_port}/healthz", timeout=5) as response:
        assert response.status == 200
    # Suspending deletes the driver pod: the operator may delete pods too.
    pipelines.patch("chart-rbac", {"spec": {"suspend": True}})
    wait_until(lambda: not pods_of(core, namespace, "chart-rbac"), timeout=60, what="driver pod deleted")
    wait_until(
        lambda: pipelines.status("chart-rbac").get("phase") == "Suspended", timeout=60, what="Suspended"
    )
    operator.alive()
    log = operator.tail()
    assert not rbac_denials(log), f"the operator lacked a permission:\n{log}"


@pytest.mark.parametrize("chart_operator", ["no-rbac"], indirect=True)
def test_without_the_charts_rbac_the_operator_is_refused(
    chart_operator: tuple[ChartOperator, str], control_plane: ControlPlane, core: Any, namespace: str
) -> None:
    """The control for the test above: the token really is the ServiceAccount's, not an admin's."""
    operator, _ = chart_operator
    core.create_namespaced_secret(
        namespace, {"metadata": {"name": "mysql-cdc"}, "stringData": {"password": "pw"}}
    )
    Pipelines(control_plane, namespace).create(manifest("chart-norbac"))  # no pod: no image needed
    wait_until(lambda: rbac_denials(operator.tail()), timeout=60, what="an RBAC denial in the operator's log")
    assert not pods_of(core, namespace, "chart-norbac")


def test_the_charts_deployment_runs_the_operator(
    cluster_ready: ControlPlane, node_runner: NodeRunner, images: E2EImages, core: Any, namespace: str,
    tmp_path: Path,
) -> None:  # fmt: skip
    """The Deployment itself: its pod, run by the test node runner from the operator image with the
    chart's operator ServiceAccount's token (admission's projected volume), reconciles a pipeline."""
    cp = cluster_ready
    release_ns = new_namespace(core, "sparkcdc-system")
    release = f"r{uuid.uuid4().hex[:6]}"
    scheduler = str(node_runner.scheduler_name)
    repository, tag = images.operator.rsplit(":", 1)
    values = {
        "image": {"repository": repository, "tag": tag, "pullPolicy": "Never"},
        "schedulerName": scheduler,  # so the node runner runs the operator pod
        "replicaCount": 1,  # pods share the host's network here: a second would find its ports taken
        # Pods share the host's network here: free ports.
        "driver": {"namespaces": [namespace], "metricsPort": free_port()},
        "metrics": {"port": free_port()},
        "health": {"port": free_port()},
        "operator": {
            "resyncSeconds": 5,
            "sparkMaster": "local[2]",
            "extraArgs": [f"--scheduler-name={scheduler}"],
        },
    }
    values_file = tmp_path / "values.yaml"
    values_file.write_text(json.dumps(values))
    helm(cp, "install", release, str(CHART), "-n", release_ns, "-f", str(values_file))
    selector = f"app.kubernetes.io/instance={release},app.kubernetes.io/component=operator"

    def operator_pod() -> str:
        pods = core.list_namespaced_pod(release_ns, label_selector=selector).items
        running = [p for p in pods if p.status.phase == "Running"]
        return str(running[0].metadata.name) if running else ""

    pod_name = wait_until(operator_pod, timeout=60, what="the operator pod running")
    assert core.read_namespaced_pod(pod_name, release_ns).spec.service_account_name == f"{release}-sparkcdc"
    try:
        core.create_namespaced_secret(
            namespace, {"metadata": {"name": "mysql-cdc"}, "stringData": {"password": "pw"}}
        )
        pipelines = Pipelines(cp, namespace)
        pipelines.create(manifest("chart-deploy", images.fake_driver))

        def checkpointed() -> bool:
            return (pipelines.status("chart-deploy").get("checkpoint") or {}).get("epochs") == [1]

        wait_until(
            checkpointed,
            timeout=90,
            what=f"the driver's checkpoint ({node_runner.logs(release_ns, pod_name)[-3000:]})",
        )
        log = node_runner.logs(release_ns, pod_name)
        assert not rbac_denials(log), log[-6000:]
    finally:
        helm(cp, "uninstall", release, "-n", release_ns, "--wait", "--timeout", "60s", check=False)
        wait_until(
            lambda: node_runner.process(release_ns, pod_name) is None, timeout=60, what="operator gone"
        )
        core.delete_namespace(release_ns)
