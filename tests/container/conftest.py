"""Fixtures for the tests of the built container images (marker ``container``, see docs/testing.md).

The images are built (or reused: ``hack/images.sh`` skips a build whose inputs did not change) once,
before the first test runs and outside any test's timeout, and only when a container test is selected.
A failed build is an error of every container test, never a skip.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkcdc.testing.containers import Images, ensure_images

_DIR = Path(__file__).parent
_built: dict[str, Images | Exception] = {}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _DIR in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.container)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Build the images once, before the test clock starts, if any container test was selected."""
    if session.config.option.collectonly:
        return
    if not any(_DIR in Path(str(item.path)).parents for item in session.items):
        return
    try:
        _built["images"] = ensure_images()
    except Exception as e:  # reported as the error of every container test
        _built["images"] = e


@pytest.fixture(scope="session")
def images() -> Images:
    built = _built.get("images") or ensure_images()
    if isinstance(built, Exception):
        raise RuntimeError(f"building the images failed: {built}")
    return built
