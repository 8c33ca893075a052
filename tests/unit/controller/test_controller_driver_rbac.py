"""Each pipeline's drivers get their own ServiceAccount, a Role naming only their pipeline, and a
RoleBinding, all owned by the pipeline (pure builders)."""

from __future__ import annotations

from harness.reconcile_fixtures import pipeline
from sparkcdc.controller.builders import DEFAULT_SPARK_MASTER, driver_account_name
from sparkcdc.controller.driver_account import driver_role, driver_role_binding, driver_service_account

OWNER = {
    "apiVersion": "sparkcdc.io/v1alpha1", "kind": "CdcPipeline", "name": "shop", "uid": "uid-1",
    "controller": True, "blockOwnerDeletion": True,
}  # fmt: skip


def test_the_three_objects_share_one_name_and_go_with_the_pipeline() -> None:
    p = pipeline()
    bodies = [driver_service_account(p, None), driver_role(p, "local[2]"), driver_role_binding(p)]
    for body in bodies:
        md = body["metadata"]
        assert (md["name"], md["namespace"]) == ("shop-sparkcdc-driver", "ns")
        assert md["ownerReferences"] == [OWNER]
        assert md["labels"]["sparkcdc.io/pipeline"] == "shop"
    binding = bodies[2]
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "shop-sparkcdc-driver"
    }  # fmt: skip
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "shop-sparkcdc-driver", "namespace": "ns"}
    ]
    assert bodies[0]["automountServiceAccountToken"] is False


def test_the_role_names_its_own_pipeline_only() -> None:
    rules = driver_role(pipeline(), "local[2]")["rules"]
    by_resource = {tuple(r["resources"]): r for r in rules}
    for resource, verbs in ((("cdcpipelines",), ["get"]), (("cdcpipelines/status",), ["get", "patch"])):
        assert by_resource[resource]["resourceNames"] == ["shop"]
        assert by_resource[resource]["verbs"] == verbs
    # A local Spark master needs no executor objects: only the checkpoint spill ConfigMaps.
    assert by_resource[("configmaps",)]["verbs"] == ["create", "delete", "get"]
    assert ("pods",) not in by_resource
    kubernetes = {tuple(r["resources"]): r for r in driver_role(pipeline(), DEFAULT_SPARK_MASTER)["rules"]}
    assert "create" in kubernetes[("pods",)]["verbs"] and "list" in kubernetes[("configmaps",)]["verbs"]
    assert all("secrets" not in r["resources"] for r in rules)


def test_the_account_takes_the_shared_accounts_annotations_and_pull_secrets() -> None:
    template = {
        "metadata": {"annotations": {"iam.example.com/role": "drivers", "kubernetes.io/enforce": "x"}},
        "imagePullSecrets": [{"name": "regcred"}],
    }
    account = driver_service_account(pipeline(), template)
    assert account["metadata"]["annotations"] == {"iam.example.com/role": "drivers"}
    assert account["imagePullSecrets"] == [{"name": "regcred"}]
    assert "annotations" not in driver_service_account(pipeline(), None)["metadata"]


def test_long_pipeline_names_still_give_valid_names() -> None:
    name = driver_account_name("p" * 253)
    assert len(name) <= 253 and name.endswith("-sparkcdc-driver")
    assert name != driver_account_name("p" * 252 + "q")
