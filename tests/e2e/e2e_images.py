"""The images the e2e tests run their pods from: sparkcdc's own (``make images``: the spark image for
drivers, the operator image for the chart's Deployment), pinned for the session, and the fake
driver's test image built on the spark image (``fake_driver/Dockerfile``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sparkcdc.testing.containers import build_image, ensure_images, pin

FAKE_DRIVER_DIR = Path(__file__).with_name("fake_driver")


@dataclass(frozen=True)
class E2EImages:
    spark: str  # the real driver (`sparkcdc driver`) and executors
    operator: str  # the chart's operator
    fake_driver: str  # the spark image whose `sparkcdc driver` is fake_driver.py


def ensure_e2e_images() -> E2EImages:
    """Build or reuse them: a warm call (nothing changed) takes about a second."""
    built = ensure_images()
    spark = pin(built.spark, "localhost/sparkcdc-e2e-spark")
    operator = pin(built.operator, "localhost/sparkcdc-e2e-operator")
    fake_driver = build_image(FAKE_DRIVER_DIR, "localhost/sparkcdc-e2e-fake-driver", base=spark)
    return E2EImages(spark=spark, operator=operator, fake_driver=fake_driver)
