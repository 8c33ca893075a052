"""The operator's image allow-list (``--allowed-image``, core/reconcile_image.py): a pipeline whose
``spec.spark.image`` is not allowed gets no driver pod and says why in its conditions."""

from __future__ import annotations

import pytest

from harness.image_policy import ALLOWED_IMAGES, FORBIDDEN_IMAGE, IMAGE_CASES
from harness.reconcile_fixtures import (
    NOW,
    apply_status,
    condition,
    make_pod,
    make_spec,
    make_status,
    observed,
    summary,
)
from sparkcdc.api import CdcPipelineStatus
from sparkcdc.api.spec import DEFAULT_SPARK_IMAGE
from sparkcdc.controller.settings import parse_settings
from sparkcdc.core.reconcile import reconcile
from sparkcdc.core.reconcile_image import IMAGE_NOT_ALLOWED, image_allowed, image_refusal, refuse_image
from sparkcdc.core.reconcile_types import Action, CreatePod, CreateService, DriverPod, Event, Settings

pytestmark = pytest.mark.unit

LIST = ALLOWED_IMAGES
EVIL = FORBIDDEN_IMAGE


@pytest.mark.parametrize(("image", "allowed"), IMAGE_CASES)
def test_entries_allow_images_by_registry_path_repository_or_exact_name(image: str, allowed: bool) -> None:
    assert image_allowed(image, LIST) is allowed


def test_an_empty_list_allows_any_image() -> None:
    assert image_allowed(EVIL, ()) and image_refusal(EVIL, ()) is None


def test_the_refusal_names_the_field_the_image_and_the_setting() -> None:
    message = image_refusal(EVIL, LIST)
    assert message is not None
    assert f"spec.spark.image {EVIL!r} is not allowed" in message
    assert "--allowed-image" in message and "pipelines.allowedImages" in message
    assert "ghcr.io/sparkcdc/" in message


def refused(status: CdcPipelineStatus | None = None, *pods: DriverPod) -> list[Action]:
    spec = make_spec(spark={"image": EVIL})
    message = image_refusal(spec.spark.image, LIST)
    assert message is not None
    return refuse_image(spec, status, observed(*pods), NOW, message, Settings())


def test_a_new_pipeline_with_a_refused_image_gets_no_driver() -> None:
    actions = refused()
    assert not [a for a in actions if isinstance(a, (CreatePod, CreateService))]
    status = apply_status(None, actions)
    assert status.phase == "Pending"
    assert condition(status, "Ready") == ("False", IMAGE_NOT_ALLOWED)
    assert condition(status, "Stalled") == ("True", IMAGE_NOT_ALLOWED)
    ready = status.condition("Ready")
    assert ready is not None and "spec.spark.image" in ready.message
    (event,) = [a for a in actions if isinstance(a, Event)]
    assert (event.type, event.reason) == ("Warning", IMAGE_NOT_ALLOWED)
    # The next resync finds it said: no second Event, no status change.
    assert refused(status) == []


def test_a_running_driver_of_a_refused_image_is_stopped() -> None:
    actions = refused(make_status(phase="Streaming"), make_pod(1))
    assert ("delete", "shop-driver-1", IMAGE_NOT_ALLOWED) in summary(actions)
    assert not [a for a in actions if isinstance(a, CreatePod)]


def test_once_allowed_the_pipeline_starts_from_pending() -> None:
    """Not Failed: phase Failed sticks until the spec changes, and a widened list must suffice."""
    status = apply_status(None, refused())
    spec = make_spec(spark={"image": EVIL})
    assert image_refusal(spec.spark.image, (*LIST, "docker.io/attacker/")) is None
    actions = reconcile(spec, status, observed(), NOW)
    assert [a for a in actions if isinstance(a, CreatePod)] == [CreatePod(1)]


def test_the_default_image_is_allowed_by_the_default_chart_entry() -> None:
    assert image_allowed(DEFAULT_SPARK_IMAGE, ("ghcr.io/sparkcdc/sparkcdc-spark",))


def test_the_setting_comes_from_flags_or_the_variable() -> None:
    env = {"SPARKCDC_ALLOWED_IMAGES": "a/, b/c"}
    assert parse_settings([], env).allowed_images == ("a/", "b/c")
    assert parse_settings(["--allowed-image", "x/", "--allowed-image=y"], env).allowed_images == ("x/", "y")
    assert parse_settings([], {}).allowed_images == ()
