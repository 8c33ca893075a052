"""One table of images and whether an allow-list lets pipelines run them, for both enforcements:
the operator's (core/reconcile_image.py, unit tests) and the chart's ValidatingAdmissionPolicy on
the real API server (e2e), so the two are shown to agree."""

from __future__ import annotations

# A registry path (ends in "/"), a repository (its tags and digests), an exact image.
ALLOWED_IMAGES = ("ghcr.io/sparkcdc/", "registry.local/team/spark", "quay.io/x/y:1.0")
FORBIDDEN_IMAGE = "docker.io/attacker/miner:latest"

IMAGE_CASES: list[tuple[str, bool]] = [
    ("ghcr.io/sparkcdc/sparkcdc-spark:0.1.0", True),  # under a registry path
    ("ghcr.io/sparkcdc/anything@sha256:" + "a" * 64, True),
    ("ghcr.io/sparkcdcevil/spark:1", False),  # a path prefix ends at its '/'
    ("registry.local/team/spark", True),  # the repository itself
    ("registry.local/team/spark:2.0", True),  # its tags
    ("registry.local/team/spark@sha256:" + "b" * 64, True),  # its digests
    ("registry.local/team/spark-evil:1", False),  # not a longer repository name
    ("registry.local/team/spark/sub:1", False),
    ("quay.io/x/y:1.0", True),  # an exact image
    ("quay.io/x/y:1.01", False),
    (FORBIDDEN_IMAGE, False),
]
