"""The driver JVM options of a local context: quick-start flags and a class-data archive,
unless the caller chose the driver's Java options."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkcdc.spark.session import LOCAL_JVM_OPTIONS, cds_archive, local_jvm_options


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SPARKCDC_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("PYSPARK_SUBMIT_ARGS", raising=False)
    return tmp_path


def test_the_first_run_writes_the_archive_under_a_partial_name(cache: Path) -> None:
    options, partial = local_jvm_options({})
    assert partial is not None and partial.parent == cache / "jvm"
    assert partial.name.startswith(cds_archive().name + ".") and partial.name.endswith(".partial")
    assert options is not None and options.startswith(LOCAL_JVM_OPTIONS)
    assert f"-XX:ArchiveClassesAtExit={partial}" in options.split()


def test_later_runs_map_the_archive() -> None:
    archive = cds_archive()
    archive.parent.mkdir(parents=True)
    archive.write_bytes(b"")
    options, partial = local_jvm_options({})
    assert partial is None
    assert options is not None and f"-XX:SharedArchiveFile={archive}" in options.split()
    assert "-Xshare:auto" in options.split()  # an unusable archive is skipped, not fatal


def test_the_archive_is_keyed_by_the_installation(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    first = cds_archive()
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text("#!/bin/sh\n")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    assert cds_archive() != first


@pytest.mark.parametrize(
    ("submit_args", "conf"),
    [
        ('--driver-java-options "-Xmx2g" pyspark-shell', {}),
        (None, {"spark.driver.extraJavaOptions": "-Xmx2g"}),
    ],
)
def test_options_the_caller_chose_are_kept(
    submit_args: str | None, conf: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    if submit_args is not None:
        monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", submit_args)
    assert local_jvm_options(conf) == (None, None)


def test_no_cache_directory_still_gets_the_quick_start_flags(
    monkeypatch: pytest.MonkeyPatch, cache: Path
) -> None:
    blocker = cache / "file"
    blocker.write_text("")
    monkeypatch.setenv("SPARKCDC_CACHE_DIR", str(blocker))  # a file where the directory should be
    assert local_jvm_options({}) == (LOCAL_JVM_OPTIONS, None)
