"""Guardrails for pipeline authors on the real API server (docs/install.md, Security model).

* a CdcPipeline whose ``spec.spark.conf`` sets a key that decides where and how its pods run, or a
  credential, is refused by the CRD's CEL rules at ``kubectl apply``;
* with ``pipelines.allowedImages`` set, the chart's ValidatingAdmissionPolicy refuses a pipeline
  whose image is not allowed at ``kubectl apply``, with the same matching rule as the operator
  (the table in harness/image_policy.py); an update that keeps the image passes;
* the chart's aggregated ClusterRoles give the cluster's ``view`` role read access to pipelines and
  ``edit`` write access, and neither may write a pipeline's status.

The policy's binding is narrowed to the test's namespace: other tests of the session create
pipelines with their own images at the same time.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.image_policy import ALLOWED_IMAGES, FORBIDDEN_IMAGE, IMAGE_CASES
from sparkcdc.api.spec import DEFAULT_SPARK_IMAGE
from sparkcdc.testing.kube import ControlPlane, wait_until

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "sparkcdc"
Obj = dict[str, Any]


def render(cp: ControlPlane, release: str, *args: str) -> list[Obj]:
    res = subprocess.run(
        ["helm", "template", release, str(CHART), "--namespace", "sparkcdc-system", *args],
        env=cp.env(), capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    return [d for d in yaml.safe_load_all(res.stdout) if d]


def of_kind(objects: list[Obj], kind: str) -> list[Obj]:
    return [o for o in objects if o["kind"] == kind]


def pipeline(name: str, *, image: str | None = None, conf: dict[str, str] | None = None) -> Obj:
    spark: Obj = {}
    if image is not None:
        spark["image"] = image
    if conf is not None:
        spark["conf"] = conf
    return {
        "apiVersion": "sparkcdc.io/v1alpha1",
        "kind": "CdcPipeline",
        "metadata": {"name": name},
        "spec": {
            "source": {
                "host": "mysql.shop.svc", "user": "cdc", "tables": ["shop.orders"],
                "passwordSecretRef": {"name": "mysql-cdc", "key": "password"},
            },
            "sink": {"type": "console"},
            "spark": spark,
        },
    }  # fmt: skip


def apply(
    cp: ControlPlane, namespace: str, obj: Obj, *, dry_run: bool = False
) -> subprocess.CompletedProcess[str]:
    extra = ["--dry-run=server"] if dry_run else []
    return cp.kubectl("apply", *extra, "-n", namespace, "-f", "-", input=json.dumps(obj), check=False)


def exists(cp: ControlPlane, namespace: str, name: str) -> bool:
    return cp.kubectl("get", "cdcp", name, "-n", namespace, check=False).returncode == 0


# -- spec.spark.conf: the CRD's CEL rules --------------------------------------------------------------

CONF_REFUSED = [
    ({"spark.kubernetes.container.image": FORBIDDEN_IMAGE}, "must not set spark.kubernetes.*"),
    (
        {"spark.kubernetes.authenticate.executor.serviceAccountName": "default"},
        "must not set spark.kubernetes.*",
    ),
    ({"spark.jars.packages": "com.example:miner:1.0"}, "must not set spark.kubernetes.*"),
    ({"spark.executorEnv.LD_PRELOAD": "/tmp/x.so"}, "must not set spark.kubernetes.*"),
    ({"spark.hadoop.fs.s3a.secret.key": "wJalrXUtnFEMI-K7MDENG"}, "must not hold credentials"),
    ({"spark.driver.extraJavaOptions": "-XX:OnOutOfMemoryError=sh"}, "may only hold JVM tuning flags"),
]


@pytest.mark.parametrize(("conf", "message"), CONF_REFUSED, ids=[next(iter(c)) for c, _ in CONF_REFUSED])
def test_a_forbidden_conf_key_is_refused_at_apply(
    control_plane: ControlPlane, sparkcdc_crd: str, namespace: str, conf: dict[str, str], message: str
) -> None:
    res = apply(control_plane, namespace, pipeline("guarded", conf=conf))
    assert res.returncode != 0, res.stdout
    assert 'spec.spark.conf: Invalid value: "object": ' in res.stderr and message in res.stderr, res.stderr
    assert next(iter(conf.values())) not in res.stderr  # the value is not repeated
    assert not exists(control_plane, namespace, "guarded")


def test_the_conf_keys_pipelines_need_are_accepted(
    control_plane: ControlPlane, sparkcdc_crd: str, namespace: str
) -> None:
    conf = {
        "spark.sql.shuffle.partitions": "8",
        "spark.executor.memoryOverhead": "1g",
        "spark.hadoop.fs.s3a.endpoint.region": "eu-central-1",
        "spark.hadoop.fs.s3a.aws.credentials.provider": "com.example.WebIdentityProvider",
        "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
    }
    res = apply(control_plane, namespace, pipeline("tuned", conf=conf))
    assert res.returncode == 0, res.stderr


# -- the image allow-list: the chart's ValidatingAdmissionPolicy ----------------------------------------


def policy_objects(cp: ControlPlane, release: str, namespace: str) -> list[Obj]:
    """The chart's policy and binding, the binding narrowed to ``namespace``."""
    listed = "{" + ",".join(ALLOWED_IMAGES) + "}"
    objects = render(cp, release, "--set", f"pipelines.allowedImages={listed}")
    (policy,) = of_kind(objects, "ValidatingAdmissionPolicy")
    (binding,) = of_kind(objects, "ValidatingAdmissionPolicyBinding")
    assert binding["spec"]["policyName"] == policy["metadata"]["name"] == f"{release}-sparkcdc-allowed-images"
    selector = {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
    binding["spec"]["matchResources"] = {"namespaceSelector": selector}
    return [policy, binding]


@pytest.fixture
def image_policy(control_plane: ControlPlane, sparkcdc_crd: str, namespace: str) -> Iterator[str]:
    objects = policy_objects(control_plane, f"sec{uuid.uuid4().hex[:6]}", namespace)
    text = "\n---\n".join(json.dumps(o) for o in objects)
    control_plane.kubectl("apply", "-f", "-", input=text)
    try:
        # A new policy takes effect once the API server has compiled it and seen its binding.
        wait_until(
            lambda: (
                apply(
                    control_plane, namespace, pipeline("probe", image=FORBIDDEN_IMAGE), dry_run=True
                ).returncode
                != 0
            ),
            timeout=60,
            what="the ValidatingAdmissionPolicy refusing images",
        )
        yield namespace
    finally:
        control_plane.kubectl("delete", "--ignore-not-found", "-f", "-", input=text, check=False)


def test_the_policy_refuses_a_forbidden_image_at_apply(
    control_plane: ControlPlane, image_policy: str
) -> None:
    ns = image_policy
    res = apply(control_plane, ns, pipeline("miner", image=FORBIDDEN_IMAGE))
    assert res.returncode != 0
    assert (
        f"spec.spark.image {FORBIDDEN_IMAGE} is not allowed by the chart value pipelines.allowedImages"
        in (res.stderr)
    ), res.stderr
    assert "ghcr.io/sparkcdc/" in res.stderr  # the list is named, so the author knows what is
    assert not exists(control_plane, ns, "miner")
    # The default image (spec.spark.image unset) is checked as the operator would run it.
    assert DEFAULT_SPARK_IMAGE.startswith(ALLOWED_IMAGES[0])
    assert apply(control_plane, ns, pipeline("default-image")).returncode == 0


@pytest.mark.parametrize(("image", "allowed"), IMAGE_CASES)
def test_the_policy_matches_images_like_the_operator(
    control_plane: ControlPlane, image_policy: str, image: str, allowed: bool
) -> None:
    res = apply(control_plane, image_policy, pipeline("probe", image=image), dry_run=True)
    assert (res.returncode == 0) is allowed, res.stderr


def test_an_update_is_checked_only_when_it_changes_the_image(
    control_plane: ControlPlane, image_policy: str
) -> None:
    ns = image_policy
    assert apply(control_plane, ns, pipeline("shop", image="registry.local/team/spark:1")).returncode == 0
    labelled = control_plane.kubectl("label", "cdcp", "shop", "-n", ns, "team=shop", check=False)
    assert labelled.returncode == 0, labelled.stderr
    res = apply(control_plane, ns, pipeline("shop", image=FORBIDDEN_IMAGE))
    assert res.returncode != 0 and "is not allowed" in res.stderr
    image = control_plane.kubectl("get", "cdcp", "shop", "-n", ns, "-o", "jsonpath={.spec.spark.image}")
    assert image.stdout == "registry.local/team/spark:1"


def test_no_policy_without_a_list(control_plane: ControlPlane) -> None:
    assert not of_kind(render(control_plane, "rel"), "ValidatingAdmissionPolicy")
    listed = render(
        control_plane, "rel", "--set", "pipelines.allowedImages={a/},pipelines.admissionPolicy=false"
    )
    assert not of_kind(listed, "ValidatingAdmissionPolicy")
    (deployment,) = of_kind(listed, "Deployment")
    assert "--allowed-image=a/" in deployment["spec"]["template"]["spec"]["containers"][0]["args"]


# -- aggregated roles -----------------------------------------------------------------------------------


def can_i(cp: ControlPlane, namespace: str, account: str, verb: str, resource: str, *extra: str) -> bool:
    res = cp.kubectl(
        "auth", "can-i", verb, resource, "-n", namespace,
        f"--as=system:serviceaccount:{namespace}:{account}", *extra, check=False,
    )  # fmt: skip
    return res.stdout.strip() == "yes"


def test_the_aggregated_roles_extend_view_and_edit(
    control_plane: ControlPlane, core: Any, namespace: str
) -> None:
    cp, release = control_plane, f"sec{uuid.uuid4().hex[:6]}"
    roles = of_kind(render(cp, release), "ClusterRole")
    ours = [
        r for r in roles if r["metadata"]["name"] in (f"{release}-sparkcdc-view", f"{release}-sparkcdc-edit")
    ]
    assert len(ours) == 2
    assert "primary-key values" in ours[0]["metadata"]["annotations"]["kubernetes.io/description"]
    text = "\n---\n".join(json.dumps(r) for r in ours)
    cp.kubectl("apply", "-f", "-", input=text)
    try:
        for account, role in (("reader", "view"), ("author", "edit")):
            core.create_namespaced_service_account(namespace, {"metadata": {"name": account}})
            cp.kubectl("create", "rolebinding", account, f"--clusterrole={role}",
                       f"--serviceaccount={namespace}:{account}", "-n", namespace)  # fmt: skip
        pipelines = "cdcpipelines.sparkcdc.io"
        wait_until(
            lambda: can_i(cp, namespace, "author", "create", pipelines), timeout=60, what="edit aggregated"
        )
        wait_until(
            lambda: can_i(cp, namespace, "reader", "list", pipelines), timeout=60, what="view aggregated"
        )
        assert can_i(cp, namespace, "reader", "watch", pipelines)
        assert not can_i(cp, namespace, "reader", "create", pipelines)
        assert can_i(cp, namespace, "author", "get", pipelines)
        assert can_i(cp, namespace, "author", "delete", pipelines)
        for account in ("reader", "author"):  # the status is the driver's checkpoint
            assert not can_i(cp, namespace, account, "patch", pipelines, "--subresource=status")
    finally:
        cp.kubectl("delete", "--ignore-not-found", "-f", "-", input=text, check=False)
    assert not [
        r for r in of_kind(render(cp, release, "--set", "rbac.aggregatedRoles=false"), "ClusterRole")
        if r["metadata"]["name"].endswith(("-view", "-edit"))
    ]  # fmt: skip
