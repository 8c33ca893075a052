"""The Python daemon Spark forks its Python workers from (``spark.python.daemon.module``).

Spark puts its own ``pyspark.zip``, ``py4j-*.zip`` and core jar in front of the workers'
``sys.path``, though a pip-installed PySpark has the same packages unpacked in site-packages. At the start of
every task PySpark calls ``importlib.invalidate_caches()`` (``worker_util.setup_spark_files``),
and for a zip that re-reads the zip's whole directory once per package imported from it: about
0.1 s of CPU per task on the development machine, more than reading a small split costs. This
module takes the zips off the path when the same packages are found without them (else leaves
the path alone), then runs PySpark's own daemon, which forks the workers with that path.

It stands in for PySpark's ``pyspark.daemon``, a module meant to be run only by Spark, by running
it as ``__main__``: guarded like every patch here (compat/guard.py) by the pinned PySpark release
and the recorded source of that module. ``daemon_module`` runs the guard in the driver, where the
session is configured, so a mismatch fails the driver with its message rather than every worker's
start; ``main`` runs it again in the daemon, whose installation may be another (an executor's).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import runpy
import sys

from sparkcdc.compat.guard import Upstream, check

__all__ = ["DIGESTS", "MODULE", "PATCH", "UPSTREAM", "check_upstream", "daemon_module", "without_spark_zips"]

PATCH = "pyspark_daemon (the workers' daemon without Spark's zips)"
MODULE = "sparkcdc.compat.pyspark_daemon"  # the value of spark.python.daemon.module
UPSTREAM = Upstream("pyspark", "==4.0.5")
_DAEMON = "pyspark.daemon"
# sha256[:16] of the daemon module's source in the release above.
DIGESTS = {_DAEMON: "c69b29f49ab97a07"}


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


def _daemon_source() -> str | None:
    # The loader's text, which is what inspect.getsource would read: importing the module to hand it
    # to inspect would make runpy, which runs it next, warn and execute it a second time.
    spec = importlib.util.find_spec(_DAEMON)
    if spec is None or spec.loader is None:
        return None
    get_source = getattr(spec.loader, "get_source", None)
    return get_source(_DAEMON) if get_source is not None else None


def check_upstream() -> None:
    """Raise ``UpstreamChangedError`` unless PySpark's daemon is the code this module was written for."""
    check(UPSTREAM, PATCH, {_DAEMON: _daemon_source()}, DIGESTS)


def daemon_module() -> str:
    """The ``spark.python.daemon.module`` setting, once the guard passed."""
    check_upstream()
    return MODULE


def main() -> None:
    kept = without_spark_zips(sys.path)
    for entry in set(sys.path) - set(kept):
        sys.path_importer_cache.pop(entry, None)  # its zipimporter would be invalidated too
    sys.path[:] = kept
    # After the path is set: the guard imports pyspark, which must come from where the workers' does.
    check_upstream()
    runpy.run_module(_DAEMON, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
