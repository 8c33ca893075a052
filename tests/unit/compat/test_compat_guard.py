"""The guard of the compat patches: version ranges and source digests."""

from __future__ import annotations

import pytest

from sparkcdc.compat.guard import Upstream, UpstreamChangedError, check, satisfies, source_digest

PYTEST = Upstream("pytest", ">=1")  # an installed distribution to check against


@pytest.mark.parametrize(
    ("installed", "requirement", "expected"),
    [
        ("1.0.17", "==1.0.17", True),
        ("1.0.18", "==1.0.17", False),
        ("4.0.5", ">=4.0.1,<4.1", True),
        ("4.1.0", ">=4.0.1,<4.1", False),
        ("4.0", "==4.0.0", True),
        ("1.0.17rc1", ">=1", False),  # a pre-release is no release a patch was written for
        ("1.0.17", "!=1.0.17", False),
    ],
)
def test_version_ranges(installed: str, requirement: str, expected: bool) -> None:
    assert satisfies(installed, requirement) is expected


def test_a_malformed_range_is_refused() -> None:
    with pytest.raises(ValueError, match=r"=>1\.0"):
        satisfies("1.0", "=>1.0")


def test_a_matching_source_passes() -> None:
    check(PYTEST, "test", {"f": "def f(): pass\n"}, {"f": source_digest("def f(): pass\n")})


def test_a_changed_or_missing_source_fails_naming_it() -> None:
    digests = {"f": source_digest("def f(): pass\n"), "g": source_digest("def g(): pass\n")}
    with pytest.raises(UpstreamChangedError, match=r"sparkcdc's patch test .*: f, g changed or is gone"):
        check(PYTEST, "test", {"f": "def f(): return 1\n", "g": None}, digests)


def test_a_distribution_that_is_not_installed_fails() -> None:
    with pytest.raises(UpstreamChangedError, match="no-such-distribution is not installed"):
        check(Upstream("no-such-distribution", "==1"), "test", {}, {})
