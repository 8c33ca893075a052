"""Creating the Spark session the driver runs its split readers on.

What Spark needs to know about the machine (the Python its workers run, Java, a Spark
installation, the cache directory) arrives as ``EngineOptions`` from the composition root.
"""

from __future__ import annotations

import hashlib
import importlib
import logging
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from sparkcdc.compat import pyspark_daemon
from sparkcdc.options import EngineOptions
from sparkcdc.spark.credentials import HadoopCredentials

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


def _base_conf() -> dict[str, str]:
    # Workers that import PySpark without its zips: ~0.1 s of CPU less per task. The daemon patches
    # around PySpark's own (compat/pyspark_daemon.py), whose guard runs here, in the driver.
    return {**_BASE_CONF, "spark.python.daemon.module": pyspark_daemon.daemon_module()}


def create_session(
    app_name: str,
    master: str,
    options: EngineOptions,
    conf: Mapping[str, str] | None = None,
    credentials: HadoopCredentials | None = None,
) -> Any:
    """A SparkSession whose Python workers run ``options.python``, with quiet logging; the sink's
    object-store ``credentials`` go into its Hadoop configuration, never into ``conf``
    (spark/credentials.py)."""
    options.export_spark_python()
    from pyspark.sql import SparkSession

    settings = {**_base_conf(), **(conf or {})}
    if options.jvm_log is not None:  # the JVM starts with the context, its output goes to the file
        _start_context(_spark_conf(app_name, master, settings), options)
    builder = SparkSession.builder.appName(app_name).master(master)
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    if credentials is not None:
        credentials.apply(session.sparkContext)
    return session


def _spark_conf(app_name: str, master: str, settings: Mapping[str, str]) -> Any:
    from pyspark import SparkConf

    spark_conf = SparkConf().setAppName(app_name).setMaster(master)
    for key, value in settings.items():
        spark_conf.set(key, value)
    return spark_conf


def _start_context(spark_conf: Any, options: EngineOptions) -> Any:
    """The active SparkContext, or a new one; a new JVM writes its output to ``options.jvm_log``
    (``launch_gateway``'s documented ``popen_kwargs``) instead of this process's terminal, where
    its warnings would land between the progress lines."""
    from pyspark import SparkContext
    from pyspark.java_gateway import launch_gateway

    if options.jvm_log is None or SparkContext._gateway is not None:  # the JVM runs already
        return SparkContext.getOrCreate(spark_conf)
    options.jvm_log.parent.mkdir(parents=True, exist_ok=True)
    with options.jvm_log.open("ab") as out:  # the child keeps its own copy of the descriptor
        gateway = launch_gateway(spark_conf, popen_kwargs={"stdout": out, "stderr": out})  # type: ignore[no-untyped-call]
    log.info("Spark's JVM writes its output to %s", options.jvm_log)
    return SparkContext(conf=spark_conf, gateway=gateway)


class ContextSession:
    """A SparkContext standing in for a session where only RDD jobs run (snapshot split readers
    and binlog catch-up with a sink that writes from the tasks): the SQL session on top of the
    context costs more than a second of JVM start-up on two cores, and nothing here uses it."""

    def __init__(self, context: Any, archive: Path | None = None) -> None:
        self.sparkContext = context  # the name SparkSession gives it
        self._archive = archive

    def stop(self) -> None:
        self.sparkContext.stop()
        if self._archive is not None:
            _finish_archive(self._archive)


def create_context(
    app_name: str,
    master: str,
    options: EngineOptions,
    conf: Mapping[str, str] | None = None,
    credentials: HadoopCredentials | None = None,
) -> ContextSession:
    """Like ``create_session``, without the SQL session (see ``ContextSession``); a local master
    gets a JVM tuned for starting quickly (``local_jvm_options``)."""
    options.export_spark_python()
    settings = {**_base_conf(), **(conf or {})}
    java, archive = local_jvm_options(settings, options) if master.startswith("local") else (None, None)
    if java is not None:
        settings["spark.driver.extraJavaOptions"] = java
    context = _start_context(_spark_conf(app_name, master, settings), options)
    context.setLogLevel("ERROR")
    if credentials is not None:
        credentials.apply(context)
    return ContextSession(context, archive)


# -- the JVM of a local context ----------------------------------------------------------------------
#
# A local context's JVM only schedules Python tasks, so its own start-up is most of its work (about
# 4 CPU seconds on the development machine, more than the tasks of a million-row snapshot). The C1
# compiler alone and the serial collector make that start-up cheaper, and a class-data sharing
# archive of the classes it loads halves what is left: the first run writes the archive when its
# JVM exits, under ``<cache dir>/jvm``, keyed by the Spark and Java installations; later runs map
# it. A JVM that cannot use an archive (another Java build) runs without it, silently. Callers
# that choose the driver's Java options themselves (``spark.driver.extraJavaOptions``, or
# ``--driver-java-options`` in ``PYSPARK_SUBMIT_ARGS``) keep theirs.

LOCAL_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
_CDS_QUIET = "-Xshare:auto -Xlog:cds=off -Xlog:cds+dynamic=off"


def _java_identity(home: Path | None) -> str:
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not found:
        return "no java"
    real = Path(found).resolve()
    stat = real.stat()
    return f"{real}|{stat.st_size}|{stat.st_mtime_ns}"


def cds_archive(options: EngineOptions) -> Path:
    """Where the class-data archive of this Spark and Java installation lives."""
    import pyspark

    java = _java_identity(options.java_home)
    ident = f"{pyspark.__version__}|{Path(pyspark.__file__).parent}|{java}|{LOCAL_JVM_OPTIONS}"
    digest = hashlib.sha256(ident.encode()).hexdigest()[:16]
    return options.cache_dir / "jvm" / f"spark-{pyspark.__version__}-{digest}.jsa"


def local_jvm_options(conf: Mapping[str, str], options: EngineOptions) -> tuple[str | None, Path | None]:
    """The driver's Java options for a local context, and the partial archive its JVM is to
    write at exit (None when the archive exists or cannot be written); ``(None, None)`` when
    the caller chose the options."""
    if "spark.driver.extraJavaOptions" in conf or "--driver-java-options" in options.spark_submit_args:
        return None, None
    try:
        archive = cds_archive(options)
        if archive.is_file():
            return f"{LOCAL_JVM_OPTIONS} {_CDS_QUIET} -XX:SharedArchiveFile={archive}", None
        archive.parent.mkdir(parents=True, exist_ok=True)
    except OSError:  # no cache directory: no archive, the rest still helps
        return LOCAL_JVM_OPTIONS, None
    partial = archive.with_name(f"{archive.name}.{os.getpid()}.partial")
    return f"{LOCAL_JVM_OPTIONS} {_CDS_QUIET} -XX:ArchiveClassesAtExit={partial}", partial


def _finish_archive(partial: Path) -> None:
    """Let the stopped context's JVM exit (it exits when its stdin closes), which writes the
    archive, and move the archive into place only if the JVM exited cleanly."""
    from pyspark import SparkContext

    proc = getattr(SparkContext._gateway, "proc", None)
    try:
        if proc is not None and proc.stdin is not None:
            proc.stdin.close()
            if proc.wait(timeout=120) == 0 and partial.is_file():
                os.replace(partial, partial.with_name(partial.name.split(".jsa.")[0] + ".jsa"))
    except (OSError, subprocess.TimeoutExpired) as err:
        log.debug("no class-data archive written: %s", err)
    finally:
        partial.unlink(missing_ok=True)


def executors_ready(spark: Any) -> bool:
    """Whether a job submitted to ``spark`` now would run right away: the session has started
    (a ``LazySession`` may still be starting it) and, on a cluster, an executor has registered
    (executor pods can take much longer to come up than the driver)."""
    if not getattr(spark, "started", True):
        return False
    context = spark.sparkContext
    if str(context.master).startswith("local"):
        return True
    try:
        return int(context._jsc.sc().getExecutorIds().size()) > 0
    except Exception:  # the JVM API moved: assume ready, as before this check existed
        return True


def takes_jobs(spark: Any, warm: threading.Event | None) -> bool:
    """Whether work should go to ``spark`` now rather than to the driver's threads: its warm-up
    (``warm_up``) is done and a job would run right away. A session that failed to start counts
    too: the job meets the failure and reports it."""
    if warm is None or not warm.is_set():
        return False
    return executors_ready(spark) or not getattr(spark, "started", True)


def warm_up(spark: Any, workers: int, modules: Sequence[str], needed: Callable[[], bool]) -> threading.Event:
    """Start ``spark`` (e.g. a ``LazySession``) on a daemon thread, concurrently with the caller's
    planning; if it is up while ``needed()`` still holds (no snapshot wave submitted yet), also
    start its Python workers with ``modules`` imported: one task per worker, each worker kept for
    reuse (``spark.python.worker.reuse``). A wave submitted earlier starts the workers itself,
    and a warm-up job queued behind it would only delay the next wave. A failure here is left
    for the first wave to meet and report. The returned event is set once the thread is done
    (started and warmed, skipped, or failed)."""
    names = list(modules)
    done = threading.Event()

    def imports(_: Iterable[int]) -> Iterator[int]:
        for name in names:
            importlib.import_module(name)
        yield os.getpid()

    def run() -> None:
        try:
            context = spark.sparkContext
            if needed():
                context.parallelize(range(workers), workers).mapPartitions(imports).collect()
        except Exception as err:  # e.g. stopped while starting; the first wave reports real failures
            log.debug("warming up Spark failed: %s", err)
        finally:
            done.set()

    threading.Thread(target=run, name="sparkcdc-spark-warm-up", daemon=True).start()
    return done


# -- Delta Lake -------------------------------------------------------------------------------------
#
# The Delta sink needs Delta's jars on the JVM's class path and its SQL extension and catalog in
# the session, set when the session is created. The jars are the Maven artifacts matching the
# installed ``delta-spark`` Python package (same version, Scala 2.13 for Spark 4). They are found,
# in order: already in Spark's own ``jars/`` directory (a container image that ships them); in the
# cache ``<cache dir>/ivy/jars`` (``EngineOptions.cache_dir``; default ``~/.cache/sparkcdc``) as Spark's Ivy
# resolver leaves them, then used as plain ``spark.jars`` without resolving anything; otherwise
# Spark resolves ``spark.jars.packages`` from Maven Central into that cache at start-up (the first
# run on a machine). ``python -m sparkcdc.spark.session fetch-delta-jars`` (run by hack/bootstrap.sh)
# fills the cache ahead of time.

DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
_SCALA = "2.13"


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


def _spark_jar_dirs(spark_home: Path | None) -> list[Path]:
    import pyspark

    dirs = [Path(pyspark.__file__).parent / "jars"]
    if spark_home is not None:
        dirs.insert(0, spark_home / "jars")
    return dirs


def cached_delta_jars(ivy_dir: Path) -> list[Path] | None:
    """The Delta jars in the Ivy cache ``ivy_dir``, or None while any is missing."""
    jars = ivy_dir / "jars"
    v = delta_version()
    wanted = [jars / f"io.delta_delta-spark_{_SCALA}-{v}.jar", jars / f"io.delta_delta-storage-{v}.jar"]
    return wanted if all(p.is_file() for p in wanted) else None


def _delta_in_spark_jars(spark_home: Path | None) -> bool:
    pattern = f"delta-spark_{_SCALA}-{delta_version()}.jar"
    return any((d / pattern).is_file() for d in _spark_jar_dirs(spark_home))


def delta_conf(options: EngineOptions, snapshot_partitions: int | None = None) -> dict[str, str]:
    """Session settings for the Delta sink (see above). ``snapshot_partitions`` sets how many
    tasks rebuild a table's state from its log (Delta's default, 50, is for clusters)."""
    conf = {"spark.sql.extensions": DELTA_EXTENSION, "spark.sql.catalog.spark_catalog": DELTA_CATALOG}
    if snapshot_partitions is not None:
        conf["spark.databricks.delta.snapshotPartitions"] = str(max(1, snapshot_partitions))
    if not _delta_in_spark_jars(options.spark_home):
        jars = cached_delta_jars(options.cache_dir / "ivy")
        if jars is not None:
            conf["spark.jars"] = ",".join(str(p) for p in jars)
        else:
            conf["spark.jars.packages"] = delta_package()
            conf["spark.jars.ivy"] = str(options.cache_dir / "ivy")
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


def fetch_delta_jars(options: EngineOptions) -> list[Path]:
    """Resolve the Delta jars into the cache with Spark's own resolver (no session is kept)."""
    import subprocess
    import tempfile

    import pyspark

    ivy = options.cache_dir / "ivy"
    found = cached_delta_jars(ivy)
    if found is not None:
        return found
    ivy.mkdir(parents=True, exist_ok=True)
    home = Path(pyspark.__file__).parent
    env = options.child_environment(SPARK_HOME=str(home), PYSPARK_PYTHON=options.python)
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
    found = cached_delta_jars(ivy)
    if found is None:
        raise RuntimeError(
            f"could not resolve {delta_package()} into {ivy} (exit code {result.returncode}):\n"
            + result.stderr[-3000:]
        )
    return found


if __name__ == "__main__":
    if sys.argv[1:] != ["fetch-delta-jars"]:
        raise SystemExit("usage: python -m sparkcdc.spark.session fetch-delta-jars")
    for jar in fetch_delta_jars(EngineOptions.from_environment()):
        print(jar)
