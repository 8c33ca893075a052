"""The check every patch in ``sparkcdc.compat`` runs before it touches upstream code.

A patch declares the library it patches (``Upstream``: the distribution and the version range
``pyproject.toml`` pins it to) and, per upstream function it replaces or relies on, the digest of
that function's source when the patch was written. ``check`` compares both with what is installed
and raises ``UpstreamChangedError`` on any difference; a new digest is recorded only after the
upstream change has been read and the patch brought in line with it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

__all__ = ["Upstream", "UpstreamChangedError", "check", "installed_version", "satisfies", "source_digest"]


class UpstreamChangedError(RuntimeError):
    """The code a patch was written against is not the code installed."""


@dataclass(frozen=True)
class Upstream:
    """A library sparkcdc patches: its distribution name and the version range pyproject.toml pins
    (``requirement``, e.g. ``"==1.0.17"``; the unit tests hold the two to each other)."""

    distribution: str
    requirement: str

    @property
    def pin(self) -> str:
        return f"{self.distribution}{self.requirement}"


def source_digest(source: str) -> str:
    """The digest a patch records for one upstream function's source text."""
    return hashlib.sha256(source.encode()).hexdigest()[:16]


def _digest(source: str | None) -> str | None:
    return None if source is None else source_digest(source)


def satisfies(installed: str, requirement: str) -> bool:
    """Whether a version lies in a range (``>=1.0,<2``), as pip reads it; a pre-release or an
    unparsable version is not one a patch was written for."""
    try:
        return SpecifierSet(requirement).contains(Version(installed), prereleases=False)
    except InvalidVersion:
        return False


def installed_version(upstream: Upstream) -> str:
    try:
        return version(upstream.distribution)
    except PackageNotFoundError:
        raise UpstreamChangedError(
            f"{upstream.distribution} is not installed as a distribution, so sparkcdc cannot tell whether "
            f"its patch of it applies; install {upstream.pin} (pip install '{upstream.pin}')"
        ) from None


def check(
    upstream: Upstream, patch: str, sources: Mapping[str, str | None], digests: Mapping[str, str]
) -> None:
    """Raise unless the installed release is in range and every function in ``digests`` has the
    recorded source (``sources``: name -> source text as ``inspect.getsource`` gives it, None for
    a function that is not there).

    ``patch`` names the patch for the message: its module under ``sparkcdc/compat/``."""
    installed = installed_version(upstream)
    if not satisfies(installed, upstream.requirement):
        raise UpstreamChangedError(
            f"{upstream.distribution} {installed} is installed, but sparkcdc's patch {patch} was written "
            f"for {upstream.pin} (the pin in pyproject.toml): install that version "
            f"(pip install '{upstream.pin}'), or port the patch to {installed} and move the pin with it"
        )
    changed = sorted(name for name, digest in digests.items() if _digest(sources.get(name)) != digest)
    if changed:
        raise UpstreamChangedError(
            f"{upstream.distribution} {installed} does not have the code sparkcdc's patch {patch} was "
            f"written against: {', '.join(changed)} changed or is gone. Install {upstream.pin} (pip install "
            f"'{upstream.pin}'); if that is installed, the library's files were modified. A new release "
            f"needs the patch reviewed against it, then its digests and the pin updated"
        )
