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

import hashlib
import os
import resource
import shlex
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from sparkcdc.paths import cache_dir
from sparkcdc.testing.kube import REPO_ROOT

IMAGES_SCRIPT = REPO_ROOT / "hack" / "images.sh"
DEFAULT_PODMAN = "podman --runtime runc --cgroup-manager cgroupfs"
INPUTS_LABEL = "io.sparkcdc.inputs"  # what hack/images.sh labels its images with
# hack/images.sh's build flags: no registry, the host's network (and its CAs), limits the machine allows.
BUILD_FLAGS = (
    "--pull=never", "--network", "host", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024",
)  # fmt: skip
PIN_MAX_AGE = 24 * 3600.0  # a pin not used for this long is removed by the next pin of its repository


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


# -- images of one test session ----------------------------------------------------------------------
#
# hack/images.sh tags its images at the project version, so two checkouts on one machine (a CI run
# and a developer's) retag the same names with their own code. A test session therefore pins what
# it builds under a tag naming the content (``pin``), and its pods use the pin: another checkout's
# build cannot change them mid-session. A pin records when it was last used; pins unused for
# ``PIN_MAX_AGE`` are removed (only their tags: layers shared with live images stay).


def _pins_dir() -> Path:
    return cache_dir(os.environ) / "images" / "pins"  # next to hack/images.sh's files


def _use(ref: str) -> None:
    marker = _pins_dir() / hashlib.sha256(ref.encode()).hexdigest()[:24]
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(ref)


def pins_of(refs: Sequence[str], repository: str) -> set[str]:
    """The refs that are tags of ``repository``. podman's ``reference=`` filter lists every name of a
    matching image: a pin's image is also hack/images.sh's ``ghcr.io/…:<version>``, which pruning
    it would untag under another lane's running tests."""
    return {ref for ref in refs if ref.rpartition(":")[0] == repository}


def _prune(repository: str, keep: str) -> None:
    """Untag the pins of ``repository`` other than ``keep`` not used for ``PIN_MAX_AGE``."""
    out = subprocess.run(
        [*podman(), "images", "--format", "{{.Repository}}:{{.Tag}}", "--filter", f"reference={repository}"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    for ref in pins_of(out.stdout.split(), repository) - {keep}:
        marker = _pins_dir() / hashlib.sha256(ref.encode()).hexdigest()[:24]
        if not marker.exists() or time.time() - marker.stat().st_mtime > PIN_MAX_AGE:
            # Without --force: an image a container still runs from stays.
            subprocess.run([*podman(), "rmi", ref], capture_output=True, check=False)
            marker.unlink(missing_ok=True)


def pin(image: str, repository: str) -> str:
    """``image`` also tagged ``repository:<the hash of its inputs>`` (hack/images.sh's label)."""
    inputs = image_config(image, f'{{{{index .Labels "{INPUTS_LABEL}"}}}}') or image_config(image, "{{.Id}}")
    pinned = f"{repository}:{inputs[:16]}"
    subprocess.run([*podman(), "tag", image, pinned], capture_output=True, check=True)
    _use(pinned)
    _prune(repository, pinned)
    return pinned


def build_image(context: Path, repository: str, base: str) -> str:
    """``context/Dockerfile`` built on ``base`` (its ``ARG BASE``) with hack/images.sh's flags, as
    ``repository:<hash>``: a hash of the context's files and the base image's id, so an unchanged
    image is found by its tag without running a build (well under a second)."""
    digest = hashlib.sha256(image_config(base, "{{.Id}}").encode())
    for path in sorted(p for p in context.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(f"{path.relative_to(context)}\0{path.stat().st_mode & 0o111}\0".encode())
        digest.update(path.read_bytes())
    tag = f"{repository}:{digest.hexdigest()[:16]}"
    exists = subprocess.run([*podman(), "image", "exists", tag], capture_output=True, check=False)
    if exists.returncode != 0:
        res = subprocess.run(
            [*podman(), "build", *BUILD_FLAGS, "--layers", "--build-arg", f"BASE={base}",
             "--label", f"{INPUTS_LABEL}={tag.rsplit(':', 1)[1]}", "-t", tag, str(context)],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if res.returncode != 0:
            output = res.stdout[-3000:] + res.stderr[-3000:]
            raise RuntimeError(f"building {tag} from {context} failed:\n{output}")
    _use(tag)
    _prune(repository, tag)
    return tag
