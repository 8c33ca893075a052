"""Creating the Spark session the driver runs its split readers on."""

from __future__ import annotations

import importlib
import logging
import os
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


def local_master(parallelism: int) -> str:
    # One retry per task: a split write is idempotent, so a retried task is harmless.
    return f"local[{max(1, parallelism)},2]"


# Settings of every session: no UI, quiet, reused Python workers.
_BASE_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.python.worker.reuse": "true",
    # A split must not be read twice at once: both attempts would write the same range.
    "spark.speculation": "false",
}


def _use_this_interpreter() -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


def create_session(app_name: str, master: str, conf: Mapping[str, str] | None = None) -> Any:
    """A SparkSession whose Python workers run this interpreter, with quiet logging."""
    _use_this_interpreter()
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name).master(master)
    for key, value in {**_BASE_CONF, **(conf or {})}.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


class ContextSession:
    """A SparkContext standing in for a session where only RDD jobs run (snapshot split readers
    and binlog catch-up with a sink that writes from the tasks): the SQL session on top of the
    context costs more than a second of JVM start-up on two cores, and nothing here uses it."""

    def __init__(self, context: Any) -> None:
        self.sparkContext = context  # the name SparkSession gives it

    def stop(self) -> None:
        self.sparkContext.stop()


def create_context(app_name: str, master: str, conf: Mapping[str, str] | None = None) -> ContextSession:
    """Like ``create_session``, without the SQL session (see ``ContextSession``)."""
    _use_this_interpreter()
    from pyspark import SparkConf, SparkContext

    spark_conf = SparkConf().setAppName(app_name).setMaster(master)
    for key, value in {**_BASE_CONF, **(conf or {})}.items():
        spark_conf.set(key, value)
    context = SparkContext.getOrCreate(spark_conf)
    context.setLogLevel("ERROR")
    return ContextSession(context)


def warm_up(spark: Any, workers: int, modules: Sequence[str]) -> None:
    """Start ``spark`` (e.g. a ``LazySession``) and its Python workers with ``modules`` imported,
    so the first snapshot wave does not pay for them: one task per worker, each worker kept for
    reuse (``spark.python.worker.reuse``). Runs on a daemon thread, concurrently with the
    caller's planning; a failure here is left for the first wave to meet and report."""
    names = list(modules)

    def imports(_: Iterable[int]) -> Iterator[int]:
        for name in names:
            importlib.import_module(name)
        yield os.getpid()

    def run() -> None:
        try:
            context = spark.sparkContext
            context.parallelize(range(workers), workers).mapPartitions(imports).collect()
        except Exception as err:  # e.g. stopped while starting; the first wave reports real failures
            log.debug("warming up Spark failed: %s", err)

    threading.Thread(target=run, name="sparkcdc-spark-warm-up", daemon=True).start()


# -- Delta Lake -------------------------------------------------------------------------------------
#
# The Delta sink needs Delta's jars on the JVM's class path and its SQL extension and catalog in
# the session, set when the session is created. The jars are the Maven artifacts matching the
# installed ``delta-spark`` Python package (same version, Scala 2.13 for Spark 4). They are found,
# in order: already in Spark's own ``jars/`` directory (a container image that ships them); in the
# cache ``$SPARKCDC_CACHE_DIR/ivy/jars`` (default ``~/.cache/sparkcdc``) as Spark's Ivy resolver
# leaves them, then used as plain ``spark.jars`` without resolving anything; otherwise Spark
# resolves ``spark.jars.packages`` from Maven Central into that cache at start-up (the first run
# on a machine). ``python -m sparkcdc.spark.session fetch-delta-jars`` (run by hack/bootstrap.sh)
# fills the cache ahead of time.

DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
_SCALA = "2.13"


def cache_dir() -> Path:
    return Path(os.environ.get("SPARKCDC_CACHE_DIR") or Path.home() / ".cache" / "sparkcdc")


def delta_version() -> str:
    """The installed ``delta-spark`` version; the jars must be the same release."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("delta-spark")
    except PackageNotFoundError:
        raise RuntimeError(
            "the delta sink needs the delta-spark Python package (pip install sparkcdc installs it)"
        ) from None


def delta_package() -> str:
    return f"io.delta:delta-spark_{_SCALA}:{delta_version()}"


def _spark_jar_dirs() -> list[Path]:
    import pyspark

    dirs = [Path(pyspark.__file__).parent / "jars"]
    if os.environ.get("SPARK_HOME"):
        dirs.insert(0, Path(os.environ["SPARK_HOME"]) / "jars")
    return dirs


def cached_delta_jars(ivy_dir: Path | None = None) -> list[Path] | None:
    """The Delta jars in the Ivy cache, or None while any is missing."""
    jars = (ivy_dir or cache_dir() / "ivy") / "jars"
    v = delta_version()
    wanted = [jars / f"io.delta_delta-spark_{_SCALA}-{v}.jar", jars / f"io.delta_delta-storage-{v}.jar"]
    return wanted if all(p.is_file() for p in wanted) else None


def _delta_in_spark_jars() -> bool:
    pattern = f"delta-spark_{_SCALA}-{delta_version()}.jar"
    return any((d / pattern).is_file() for d in _spark_jar_dirs())


def delta_conf(snapshot_partitions: int | None = None) -> dict[str, str]:
    """Session settings for the Delta sink (see above). ``snapshot_partitions`` sets how many
    tasks rebuild a table's state from its log (Delta's default, 50, is for clusters)."""
    conf = {"spark.sql.extensions": DELTA_EXTENSION, "spark.sql.catalog.spark_catalog": DELTA_CATALOG}
    if snapshot_partitions is not None:
        conf["spark.databricks.delta.snapshotPartitions"] = str(max(1, snapshot_partitions))
    if not _delta_in_spark_jars():
        jars = cached_delta_jars()
        if jars is not None:
            conf["spark.jars"] = ",".join(str(p) for p in jars)
        else:
            conf["spark.jars.packages"] = delta_package()
            conf["spark.jars.ivy"] = str(cache_dir() / "ivy")
    return conf


def merge_conf(*confs: Mapping[str, str]) -> dict[str, str]:
    """Later settings win, except the comma-separated lists of extensions and jars, which join."""
    joined = ("spark.sql.extensions", "spark.jars", "spark.jars.packages")
    out: dict[str, str] = {}
    for conf in confs:
        for key, value in conf.items():
            if key in joined and out.get(key) and value not in out[key].split(","):
                out[key] = f"{out[key]},{value}"
            else:
                out[key] = value
    return out


def fetch_delta_jars() -> list[Path]:
    """Resolve the Delta jars into the cache with Spark's own resolver (no session is kept)."""
    import subprocess
    import tempfile

    import pyspark

    found = cached_delta_jars()
    if found is not None:
        return found
    ivy = cache_dir() / "ivy"
    ivy.mkdir(parents=True, exist_ok=True)
    home = Path(pyspark.__file__).parent
    env = dict(os.environ, SPARK_HOME=str(home), PYSPARK_PYTHON=sys.executable)
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "noop.py"
        script.write_text("pass\n")
        command = [
            str(home / "bin" / "spark-submit"),
            "--packages",
            delta_package(),
            "--conf",
            f"spark.jars.ivy={ivy}",
            str(script),
        ]
        result = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    found = cached_delta_jars()
    if found is None:
        raise RuntimeError(
            f"could not resolve {delta_package()} into {ivy} (exit code {result.returncode}):\n"
            + result.stderr[-3000:]
        )
    return found


if __name__ == "__main__":
    if sys.argv[1:] != ["fetch-delta-jars"]:
        raise SystemExit("usage: python -m sparkcdc.spark.session fetch-delta-jars")
    for jar in fetch_delta_jars():
        print(jar)
