"""The Python daemon Spark forks its Python workers from (``spark.python.daemon.module``).

Spark puts its own ``pyspark.zip``, ``py4j-*.zip`` and core jar in front of the workers'
``sys.path``, though a pip-installed PySpark has the same packages unpacked in site-packages. At the start of
every task PySpark calls ``importlib.invalidate_caches()`` (``worker_util.setup_spark_files``),
and for a zip that re-reads the zip's whole directory once per package imported from it: about
0.1 s of CPU per task on the development machine, more than reading a small split costs. This
module takes the zips off the path when the same packages are found without them (else leaves
the path alone), then runs PySpark's own daemon, which forks the workers with that path.
"""

from __future__ import annotations

import importlib.machinery
import os
import runpy
import sys

__all__ = ["without_spark_zips"]


def _is_spark_zip(entry: str) -> bool:
    name = os.path.basename(entry)
    if name.endswith(".jar"):  # Spark's core jar, for builds that ship Python in it: no .py here
        return os.path.basename(os.path.dirname(entry)) == "jars"
    return name == "pyspark.zip" or (name.startswith("py4j-") and name.endswith(".zip"))


def without_spark_zips(path: list[str]) -> list[str]:
    """``path`` without Spark's zips and jars, if ``pyspark`` and ``py4j`` import from the rest."""
    kept = [entry for entry in path if not _is_spark_zip(entry)]
    if len(kept) == len(path):
        return path
    for package in ("pyspark", "py4j"):
        spec = importlib.machinery.PathFinder.find_spec(package, kept)
        if spec is None or spec.origin is None or ".zip" in spec.origin:
            return path
    return kept


def main() -> None:
    kept = without_spark_zips(sys.path)
    for entry in set(sys.path) - set(kept):
        sys.path_importer_cache.pop(entry, None)  # its zipimporter would be invalidated too
    sys.path[:] = kept
    runpy.run_module("pyspark.daemon", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
