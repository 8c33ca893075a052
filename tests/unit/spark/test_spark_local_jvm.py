"""The driver JVM options of a local context: quick-start flags and a class-data archive,
unless the caller chose the driver's Java options."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from sparkcdc.options import EngineOptions
from sparkcdc.spark.session import LOCAL_JVM_OPTIONS, cds_archive, local_jvm_options


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "cache"


@pytest.fixture
def options(cache: Path) -> EngineOptions:
    return EngineOptions(cache_dir=cache)


def test_the_first_run_writes_the_archive_under_a_partial_name(cache: Path, options: EngineOptions) -> None:
    java, partial = local_jvm_options({}, options)
    assert partial is not None and partial.parent == cache / "jvm"
    assert partial.name.startswith(cds_archive(options).name + ".") and partial.name.endswith(".partial")
    assert java is not None and java.startswith(LOCAL_JVM_OPTIONS)
    assert f"-XX:ArchiveClassesAtExit={partial}" in java.split()


def test_later_runs_map_the_archive(options: EngineOptions) -> None:
    archive = cds_archive(options)
    archive.parent.mkdir(parents=True)
    archive.write_bytes(b"")
    java, partial = local_jvm_options({}, options)
    assert partial is None
    assert java is not None and f"-XX:SharedArchiveFile={archive}" in java.split()
    assert "-Xshare:auto" in java.split()  # an unusable archive is skipped, not fatal


def test_the_archive_is_keyed_by_the_installation(options: EngineOptions, tmp_path: Path) -> None:
    first = cds_archive(options)
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text("#!/bin/sh\n")
    assert cds_archive(replace(options, java_home=tmp_path / "jdk")) != first


@pytest.mark.parametrize(
    ("submit_args", "conf"),
    [
        ('--driver-java-options "-Xmx2g" pyspark-shell', {}),
        (None, {"spark.driver.extraJavaOptions": "-Xmx2g"}),
    ],
)
def test_options_the_caller_chose_are_kept(
    submit_args: str | None, conf: dict[str, str], options: EngineOptions
) -> None:
    chosen = replace(options, spark_submit_args=submit_args or "")
    assert local_jvm_options(conf, chosen) == (None, None)


def test_no_cache_directory_still_gets_the_quick_start_flags(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")  # a file where the cache directory should be
    assert local_jvm_options({}, EngineOptions(cache_dir=blocker)) == (LOCAL_JVM_OPTIONS, None)
