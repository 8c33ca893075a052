"""sparkcdc's container images in tests: building them (``hack/images.sh``) and running them with podman.

The podman flags are the ones that work on the CI machine kind (see docs/testing.md, "Containers"):
``runc`` because ``crun`` refuses hybrid cgroup layouts, ``cgroupfs`` without systemd, and explicit
resource limits because podman's defaults are above what the machine allows. The process limit
counts every process and thread of a uid on the machine, and the pods of a pipeline (driver,
executors, their Python workers) all run as uid 185: 1024 is too few for three JVMs, so containers
get ``CONTAINER_LIMIT`` of each, or the runner's own hard limit if lower (the machine refuses
process limits above 32768 in a container).
"""

from __future__ import annotations

import resource
import shlex
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sparkcdc.testing.kube import REPO_ROOT

IMAGES_SCRIPT = REPO_ROOT / "hack" / "images.sh"
DEFAULT_PODMAN = "podman --runtime runc --cgroup-manager cgroupfs"


CONTAINER_LIMIT = 16384


def _hard_limit(kind: int) -> str:
    hard = resource.getrlimit(kind)[1]
    return str(CONTAINER_LIMIT if hard == resource.RLIM_INFINITY else min(hard, CONTAINER_LIMIT))


LIMITS = tuple(
    arg
    for name, kind in (("nofile", resource.RLIMIT_NOFILE), ("nproc", resource.RLIMIT_NPROC))
    for arg in ("--ulimit", f"{name}={_hard_limit(kind)}:{_hard_limit(kind)}")
)


@dataclass(frozen=True)
class Images:
    """The references of the two images ``hack/images.sh`` built (tags at the project version)."""

    spark: str
    operator: str


def podman() -> list[str]:
    """The podman command with its runtime flags."""
    return shlex.split(DEFAULT_PODMAN)


def ensure_images() -> Images:
    """Build both images, or reuse them when their inputs did not change (a warm call takes seconds)."""
    if not IMAGES_SCRIPT.exists():
        raise RuntimeError(f"{IMAGES_SCRIPT} not found")
    out = subprocess.run(
        ["bash", str(IMAGES_SCRIPT), "spark", "operator"],
        stdout=subprocess.PIPE,
        stderr=None,
        text=True,
        check=True,
    )
    spark, operator = out.stdout.split()[-2:]
    return Images(spark=spark, operator=operator)


def run_image(
    image: str,
    args: Sequence[str] = (),
    *,
    user: str | None = None,
    read_only: bool = True,
    tmpfs: Sequence[str] = ("/tmp",),
    env: Mapping[str, str] | None = None,
    entrypoint: str | None = None,
    timeout: float = 300.0,
) -> subprocess.CompletedProcess[str]:
    """``podman run --rm`` of ``image`` on the host network; stdout and stderr are captured apart.

    By default the root filesystem is read-only with a tmpfs on /tmp, as the operator's pods have it
    (a read-only root with an emptyDir on /tmp).
    """
    command = [*podman(), "run", "--rm", "--pull=never", "--network", "host", *LIMITS]
    if read_only:
        command.append("--read-only")
    for path in tmpfs:
        command += ["--tmpfs", path]
    if user is not None:
        command += ["--user", user]
    for key, value in (env or {}).items():
        command += ["--env", f"{key}={value}"]
    if entrypoint is not None:
        command += ["--entrypoint", entrypoint]
    command += [image, *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)


def image_config(image: str, template: str) -> str:
    """One field of ``podman image inspect``, e.g. ``{{.Config.User}}``."""
    out = subprocess.run(
        [*podman(), "image", "inspect", "--format", template, image],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()
