"""Creating the Spark session the driver runs its split readers on."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any


def local_master(parallelism: int) -> str:
    # One retry per task: a split write is idempotent, so a retried task is harmless.
    return f"local[{max(1, parallelism)},2]"


def create_session(app_name: str, master: str, conf: Mapping[str, str] | None = None) -> Any:
    """A SparkSession whose Python workers run this interpreter, with quiet logging."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.appName(app_name)
        .master(master)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.python.worker.reuse", "true")
        # A split must not be read twice at once: both attempts would write the same range.
        .config("spark.speculation", "false")
    )
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session
