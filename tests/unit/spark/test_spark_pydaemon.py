"""The workers' daemon drops Spark's zips and jar from ``sys.path`` only where PySpark and Py4J
import without them (each zip on the path costs a directory re-read per task)."""

from __future__ import annotations

import zipfile
from pathlib import Path

from sparkcdc.spark.pydaemon import without_spark_zips


def _package(root: Path, name: str) -> None:
    (root / name).mkdir(parents=True)
    (root / name / "__init__.py").write_text("")


def _spark_entries(tmp_path: Path) -> list[str]:
    lib = tmp_path / "spark" / "python" / "lib"
    lib.mkdir(parents=True)
    for name in ("pyspark.zip", "py4j-0.10.9.9-src.zip"):
        with zipfile.ZipFile(lib / name, "w") as archive:
            archive.writestr(f"{name.split('.')[0].split('-')[0]}/__init__.py", "")
    jars = tmp_path / "spark" / "jars"
    jars.mkdir()
    (jars / "spark-core_2.13-4.0.5.jar").write_bytes(b"")
    return [
        str(lib / "pyspark.zip"),
        str(lib / "py4j-0.10.9.9-src.zip"),
        str(jars / "spark-core_2.13-4.0.5.jar"),
    ]


def test_spark_zips_go_when_the_packages_are_installed(tmp_path: Path) -> None:
    site = tmp_path / "site-packages"
    _package(site, "pyspark")
    _package(site, "py4j")
    path = [*_spark_entries(tmp_path), "/opt/app", str(site)]
    assert without_spark_zips(path) == ["/opt/app", str(site)]


def test_spark_zips_stay_when_they_are_the_only_source(tmp_path: Path) -> None:
    site = tmp_path / "site-packages"
    _package(site, "pyspark")  # py4j only in Spark's zip
    path = [*_spark_entries(tmp_path), str(site)]
    assert without_spark_zips(path) == path


def test_other_zips_and_jars_stay(tmp_path: Path) -> None:
    site = tmp_path / "site-packages"
    _package(site, "pyspark")
    _package(site, "py4j")
    path = ["/usr/lib/python311.zip", "/opt/libs/tool.jar", str(site)]
    assert without_spark_zips(path) == path
