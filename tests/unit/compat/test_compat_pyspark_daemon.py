"""The workers' daemon drops Spark's zips and jar from ``sys.path`` only where PySpark and Py4J
import without them (each zip on the path costs a directory re-read per task), and runs PySpark's
daemon only when it is the code it was written for."""

from __future__ import annotations

import importlib
import zipfile
from pathlib import Path

import pytest
from compat_support import dependencies

from sparkcdc.compat import pyspark_daemon
from sparkcdc.compat.guard import Upstream, UpstreamChangedError
from sparkcdc.compat.pyspark_daemon import without_spark_zips


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


def test_the_installed_pyspark_is_the_code_the_daemon_was_written_for() -> None:
    """Fails after an upgrade that changes ``pyspark.daemon``: review this module against it, then
    record the new digest and move the pin."""
    pyspark_daemon.check_upstream()
    assert pyspark_daemon.UPSTREAM.pin in dependencies()


def test_sessions_run_this_daemon() -> None:
    from sparkcdc.spark.session import _base_conf

    assert _base_conf()["spark.python.daemon.module"] == pyspark_daemon.MODULE
    assert importlib.import_module(pyspark_daemon.MODULE) is pyspark_daemon


def test_changed_pyspark_fails_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(pyspark_daemon.DIGESTS, "pyspark.daemon", "0" * 16)
    with pytest.raises(
        UpstreamChangedError, match=r"pyspark 4\.0\.5 does not have the code .*pyspark\.daemon"
    ):
        pyspark_daemon.daemon_module()
    monkeypatch.setattr(pyspark_daemon, "UPSTREAM", Upstream("pyspark", ">=4.1,<4.2"))
    with pytest.raises(UpstreamChangedError, match=r"pyspark 4\.0\.5 is installed.*pyspark>=4\.1,<4\.2"):
        pyspark_daemon.check_upstream()
