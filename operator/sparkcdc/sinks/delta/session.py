"""The Delta sink's own Spark session on the driver, and scoped settings on it."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

from sparkcdc.sinks.base import SinkError, start_driver_session

__all__ = ["driver_session", "failing", "session_conf"]

_SESSION_TIME_ZONE = "UTC"


def driver_session(describe: str) -> Any:
    """A session of its own (its settings: idempotent-write marks, commit metadata) on the
    driver's Spark context, which must have been created with Delta (spark/session.py); started
    now if the entry point left it for the first use (``start_driver_session``)."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    if SparkContext._active_spark_context is None:
        start_driver_session()
    if SparkContext._active_spark_context is None:
        raise SinkError(f"the {describe} sink writes from the Spark driver; no Spark session is running here")
    base = SparkSession.builder.getOrCreate()
    extensions = base.conf.get("spark.sql.extensions", "") or ""
    if "DeltaSparkSessionExtension" not in extensions:
        raise SinkError(
            f"the Spark session was created without Delta Lake, which the {describe} sink needs; "
            "create it with sparkcdc.spark.session.delta_conf() (sparkcdc run does this for delta sinks)"
        )
    session = base.newSession()
    session.conf.set("spark.sql.session.timeZone", _SESSION_TIME_ZONE)
    # A MERGE's source is a batch already in memory (deterministic): no copy of it first.
    session.conf.set("spark.databricks.delta.merge.materializeSource", "none")
    return session


@contextlib.contextmanager
def session_conf(spark: Any, values: Mapping[str, str]) -> Iterator[None]:
    """``values`` set on the session for the block (the sink's session is its own)."""
    conf = spark.conf
    for key, value in values.items():
        conf.set(key, value)
    try:
        yield
    finally:
        for key in values:
            conf.unset(key)


@contextlib.contextmanager
def failing(what: str, path: str) -> Iterator[None]:
    """Any error of the block as a short ``SinkError`` naming what failed where."""
    try:
        yield
    except SinkError:
        raise
    except Exception as err:
        raise SinkError(f"the delta sink failed {what} at {path}: {_short(err)}") from err


def _short(err: BaseException) -> str:
    text = str(err).strip() or type(err).__name__
    lines = [line for line in text.splitlines() if line.strip()]
    return " ".join(lines[:3])[:1500]
