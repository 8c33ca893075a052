"""Reading pods into observations; settings; the requeue scheduler."""

from __future__ import annotations

import json
import os
import threading
from datetime import timedelta
from pathlib import Path

import pytest
from kubernetes.config import kube_config

from harness.reconcile_fixtures import NOW
from sparkcdc.controller.handlers import connection_info
from sparkcdc.controller.observe import ProgressClock, driver_pod_view
from sparkcdc.controller.scheduler import Scheduler
from sparkcdc.controller.settings import parse_settings
from sparkcdc.kube import client as client_module
from sparkcdc.kube.client import load_config


def test_failed_pod_view() -> None:
    pod = {
        "metadata": {
            "name": "shop-driver-3", "creationTimestamp": "2024-05-01T11:00:00Z",
            "annotations": {
                "sparkcdc.io/epoch": "3", "sparkcdc.io/spec-hash": "h", "sparkcdc.io/restart-nonce": "r",
            },
        },
        "status": {
            "phase": "Failed",
            "containerStatuses": [{"name": "driver", "state": {"terminated": {
                "exitCode": 2, "reason": "Error", "message": "bad table", "startedAt": "2024-05-01T11:00:05Z",
                "finishedAt": "2024-05-01T11:01:00Z",
            }}}],
        },
    }  # fmt: skip
    view = driver_pod_view(pod, NOW)
    assert (view.name, view.epoch, view.spec_hash, view.restart_nonce) == ("shop-driver-3", 3, "h", "r")
    assert (view.phase, view.exit_code, view.termination_message) == ("Failed", 2, "bad table")
    assert view.finished_at is not None and view.started_at is not None
    assert view.finished_at - view.started_at == timedelta(seconds=55)
    assert not view.deleting


def test_pending_pod_view() -> None:
    pod = {
        "metadata": {"name": "p", "deletionTimestamp": "2024-05-01T11:00:00Z", "annotations": {}},
        "status": {
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "False", "message": "0/1 nodes"}],
            "containerStatuses": [{"name": "driver", "state": {"waiting": {"reason": "ErrImagePull"}}}],
        },
    }  # fmt: skip
    view = driver_pod_view(pod, NOW)
    assert view.deleting and view.epoch is None and view.created_at == NOW
    assert (view.unschedulable, view.waiting_reason) == ("0/1 nodes", "ErrImagePull")


def test_progress_clock_moves_only_with_progress() -> None:
    clock = ProgressClock()
    later = NOW + timedelta(seconds=30)
    status = {"progress": {"splitsFinished": 1, "lagSeconds": 1}}
    assert clock.last_progress("u", status, NOW) == NOW
    assert clock.last_progress("u", {"progress": {"splitsFinished": 1, "lagSeconds": 9}}, later) == NOW
    assert clock.last_progress("u", {"progress": {"splitsFinished": 2}}, later) == later


def test_settings_from_flags_and_environment() -> None:
    env = {"SPARKCDC_SPARK_MASTER": "local[2]", "SPARKCDC_SCHEDULER_NAME": "test-scheduler"}
    settings = parse_settings(["-n", "a", "-n", "b", "--metrics-port", "0"], env)
    assert settings.namespaces == ("a", "b")
    assert settings.spark_master == "local[2]" and settings.metrics_port == 0
    assert settings.scheduler_name == "test-scheduler"
    assert parse_settings([], {}).spark_master == "k8s://https://kubernetes.default.svc"
    with pytest.raises(SystemExit):  # the driver runs the image's `sparkcdc driver`, always
        parse_settings(["--driver-command", '["python", "x.py"]'], {})


def test_scheduler_runs_the_earliest_request_once() -> None:
    ran: list[tuple[str, str]] = []
    done = threading.Event()

    def callback(key: tuple[str, str]) -> None:
        ran.append(key)
        done.set()

    scheduler = Scheduler(callback)
    try:
        scheduler.schedule(("ns", "a"), 30)
        scheduler.schedule(("ns", "a"), 0.05)  # earlier wins
        scheduler.schedule(("ns", "a"), 20)  # later is ignored
        assert done.wait(5)
        scheduler.schedule(("ns", "b"), 0.05)
        scheduler.cancel(("ns", "b"))
        threading.Event().wait(0.3)
        assert ran == [("ns", "a")]
    finally:
        scheduler.stop()


def test_the_in_cluster_token_is_used_by_the_operator_and_the_driver(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a pod: the token, CA and namespace at the in-cluster path (moved here to a temporary
    directory: the real one is the pod's), the address from the service variables."""
    (tmp_path / "token").write_text("tok-123")
    (tmp_path / "ca.crt").write_text("not really a cert")
    (tmp_path / "namespace").write_text("team-a\n")
    monkeypatch.setattr(client_module, "IN_CLUSTER_DIR", str(tmp_path))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "6443")
    kube = load_config(os.environ)
    assert kube.namespace == "team-a"
    assert kube.configuration.host == "https://10.0.0.1:6443"
    assert kube.configuration.ssl_ca_cert == str(tmp_path / "ca.crt")
    info = connection_info(kube)
    assert (info.server, info.token, info.default_namespace) == ("https://10.0.0.1:6443", "tok-123", "team-a")
    assert info.scheme is not None and info.scheme.lower() == "bearer"


def test_outside_a_pod_the_kubeconfig_is_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No token at the in-cluster path (or no service variables): ``$KUBECONFIG``, as kubectl."""
    kubeconfig = {
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443"}}],
        "users": [{"name": "u", "user": {"token": "kubeconfig-token"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
    }  # fmt: skip
    (tmp_path / "config").write_text(json.dumps(kubeconfig))
    monkeypatch.setattr(client_module, "IN_CLUSTER_DIR", str(tmp_path / "absent"))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    # The client reads $KUBECONFIG when it is imported, as a process started with it does.
    monkeypatch.setattr(kube_config, "KUBE_CONFIG_DEFAULT_LOCATION", str(tmp_path / "config"))
    kube = load_config(os.environ)
    assert kube.namespace is None and kube.configuration.host == "https://127.0.0.1:6443"
    assert connection_info(kube).token == "kubeconfig-token"
