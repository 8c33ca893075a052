"""The engine's switches, typed and built once at the composition roots, then passed down.

Where a snapshot wave or a catch-up round runs, which binlog decoder and chunk reader are used: these
choose between paths that give the same result at different cost, so they are not in the
CdcPipeline spec (except ``spec.snapshot.readInDriver``, which a user tunes per pipeline). They come
from the environment of the process that composes the engine (``sparkcdc run`` in ``driver/local.py``, the
driver pod's ``driver/main.py``) through :meth:`EngineOptions.from_environment` and
nowhere else: ``mysql/``, ``spark/`` and ``sinks/`` take them as arguments, so every path a test or a
benchmark wants is built, not set in a global. ``python -m sparkcdc.configuration`` prints
``docs/configuration.md``, with these variables from :func:`documented_variables`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Literal, get_args

from sparkcdc.core.waves import SPARK_WORTH_SECONDS
from sparkcdc.paths import cache_dir

__all__ = [
    "BINLOG_DECODER_ENV",
    "CACHE_DIR_ENV",
    "CATCHUP_IN_DRIVER_ENV",
    "CHUNK_READER_ENV",
    "JAVA_HOME_ENV",
    "PYSPARK_PYTHON_ENV",
    "SNAPSHOT_IN_DRIVER_ENV",
    "SPARK_HOME_ENV",
    "SPARK_WORTH_SECONDS_ENV",
    "SUBMIT_ARGS_ENV",
    "ChunkReader",
    "EngineOptions",
    "InDriver",
    "OptionsError",
    "documented_variables",
]

# The environment variables of the composition roots, one per field (tests and benchmarks that
# start ``sparkcdc run`` set them).
SNAPSHOT_IN_DRIVER_ENV = "SPARKCDC_SNAPSHOT_IN_DRIVER"
CATCHUP_IN_DRIVER_ENV = "SPARKCDC_CATCHUP_IN_DRIVER"
SPARK_WORTH_SECONDS_ENV = "SPARKCDC_SPARK_WORTH_SECONDS"
BINLOG_DECODER_ENV = "SPARKCDC_BINLOG_DECODER"
CHUNK_READER_ENV = "SPARKCDC_CHUNK_READER"
CACHE_DIR_ENV = "SPARKCDC_CACHE_DIR"
# Spark's and Java's own variables, honoured as their tools honour them.
PYSPARK_PYTHON_ENV = "PYSPARK_PYTHON"
JAVA_HOME_ENV = "JAVA_HOME"
SPARK_HOME_ENV = "SPARK_HOME"
SUBMIT_ARGS_ENV = "PYSPARK_SUBMIT_ARGS"
JVM_LOG_ENV = "SPARKCDC_JVM_LOG"  # after Spark's: it is sparkcdc's own

InDriver = Literal["auto", "never", "always"]
ChunkReader = Literal["auto", "pymysql"]


class OptionsError(ValueError):
    """An environment variable has a value the engine cannot use; the message names it."""


@dataclass(frozen=True)
class EngineOptions:
    """Every engine switch (see the module docstring); the defaults are the production choices."""

    snapshot_in_driver: InDriver | None = field(
        default=None,
        metadata={
            "env": SNAPSHOT_IN_DRIVER_ENV,
            "doc": "Overrides `spec.snapshot.readInDriver` for every pipeline of the process "
            "(`auto`, `never`, `always`); the benchmarks compare the modes with it.",
        },
    )
    catchup_in_driver: InDriver = field(
        default="auto",
        metadata={
            "env": CATCHUP_IN_DRIVER_ENV,
            "doc": "Where parallel catch-up rounds are decoded: `auto` (the driver while Spark starts, "
            "then Spark), `never` (always Spark), `always` (always the driver's threads).",
        },
    )
    spark_worth_seconds: float = field(
        default=SPARK_WORTH_SECONDS,
        metadata={
            "env": SPARK_WORTH_SECONDS_ENV,
            "doc": "With `readInDriver: auto`, the driver starts Spark once the splits left would keep "
            "it busy longer than this many seconds.",
        },
    )
    binlog_decoder: str = field(
        default="auto",
        metadata={
            "env": BINLOG_DECODER_ENV,
            "doc": "Catch-up's decoder: `auto` (the Go decoder built under the cache directory where it "
            "is exact, else Python), `python`, or the path of a decoder binary (the images set it).",
        },
    )
    chunk_reader: ChunkReader = field(
        default="auto",
        metadata={
            "env": CHUNK_READER_ENV,
            "doc": "How snapshot chunks are read: `auto` (ConnectorX where it is exact, else PyMySQL) "
            "or `pymysql`.",
        },
    )
    cache_dir: Path = field(
        default_factory=lambda: cache_dir(os.environ),
        metadata={
            "env": CACHE_DIR_ENV,
            "doc": "Where built tools (the Go decoder, Spark's class-data archive) are kept; default "
            "`$XDG_CACHE_HOME/sparkcdc`, else `~/.cache/sparkcdc` (the same in hack/cache-dir.sh).",
        },
    )
    python: str = field(
        default=sys.executable,
        metadata={
            "env": PYSPARK_PYTHON_ENV,
            "shown": "this interpreter",
            "doc": "The Python that Spark's workers run; it must have sparkcdc and pyarrow installed.",
        },
    )
    java_home: Path | None = field(
        default=None,
        metadata={
            "env": JAVA_HOME_ENV,
            "shown": "java on PATH",
            "doc": "The Java 17 that Spark starts; part of the key of the local JVM's class-data archive.",
        },
    )
    spark_home: Path | None = field(
        default=None,
        metadata={
            "env": SPARK_HOME_ENV,
            "shown": "PySpark's own",
            "doc": "A Spark installation whose `jars/` are searched first for Delta's jars (the images).",
        },
    )
    spark_submit_args: str = field(
        default="",
        metadata={
            "env": SUBMIT_ARGS_ENV,
            "shown": "",
            "doc": "PySpark's launch arguments; with `--driver-java-options` in them, a local JVM keeps "
            "those options instead of sparkcdc's quick-start ones.",
        },
    )

    jvm_log: Path | None = field(
        default=None,
        metadata={
            "env": JVM_LOG_ENV,
            "shown": "the process's own output",
            "doc": "Where a Spark JVM this process starts writes its output (its log, Java warnings, "
            "local workers' errors); `sparkcdc run` and `verify` default to `<state dir>/spark-jvm.log`, "
            "so the terminal shows only sparkcdc's lines.",
        },
    )

    @classmethod
    def from_environment(cls, env: Mapping[str, str] | None = None) -> EngineOptions:
        """The options the variables in ``env`` (default: this process's) ask for."""
        env = os.environ if env is None else env
        found: dict[str, object] = {"cache_dir": cache_dir(env)}
        for f in fields(cls):
            text = env.get(f.metadata["env"], "").strip()
            if text and f.name != "cache_dir":
                found[f.name] = _parse(f.name, f.metadata["env"], text)
        return cls(**found)  # type: ignore[arg-type]

    def export_spark_python(self) -> None:
        """Make PySpark start its workers with :attr:`python`: PySpark reads the interpreter only
        from this process's environment, when a context starts."""
        os.environ["PYSPARK_PYTHON"] = self.python
        os.environ["PYSPARK_DRIVER_PYTHON"] = self.python

    def child_environment(self, **variables: str) -> dict[str, str]:
        """This process's environment with ``variables`` set, for a tool started as a subprocess."""
        return {**os.environ, **variables}


def _parse(name: str, variable: str, text: str) -> object:
    choices = {"snapshot_in_driver": InDriver, "catchup_in_driver": InDriver, "chunk_reader": ChunkReader}
    if name in choices:
        allowed = get_args(choices[name])
        if text.lower() not in allowed:
            raise OptionsError(f"${variable}={text!r}: use one of {', '.join(allowed)}")
        return text.lower()
    if name in ("java_home", "spark_home", "jvm_log"):
        return Path(text)
    if name == "spark_worth_seconds":
        try:
            return max(0.0, float(text))
        except ValueError:
            raise OptionsError(f"${variable}={text!r} is not a number of seconds") from None
    return text


def documented_variables() -> list[tuple[str, str, str]]:
    """Each field's variable, its default as docs/configuration.md shows it, and what it does
    (rendered by ``sparkcdc.configuration``)."""
    # A fixed cache directory: the page must not depend on the environment that generates it.
    defaults = EngineOptions(cache_dir=Path("~/.cache/sparkcdc"))
    rows = []
    for f in fields(EngineOptions):
        default = getattr(defaults, f.name)
        shown = f.metadata.get("shown", "spec" if default is None else str(default))
        rows.append((f.metadata["env"], shown, f.metadata["doc"]))
    return rows
