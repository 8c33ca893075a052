"""A local context's JVM writes its class-data archive when the first run stops, and later runs
map it (spark/session.py). Real JVMs in subprocesses, as ``sparkcdc run`` starts them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

_RUN = """
import json
from pyspark import SparkContext
from sparkcdc.options import EngineOptions
from sparkcdc.spark.session import cds_archive, create_context
options = EngineOptions.from_environment()
spark = create_context("sparkcdc-jvm-test", "local[2,2]", options)
total = spark.sparkContext.parallelize(range(10), 2).map(lambda x: x * 2).sum()
archive = str(cds_archive(options))
with open(f"/proc/{SparkContext._gateway.proc.pid}/maps") as maps:
    mapped = archive in maps.read()
spark.stop()
print(json.dumps({"total": total, "mapped": mapped}))
"""


def _run(cache: Path) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_SUBMIT_ARGS"}
    env.update(SPARKCDC_CACHE_DIR=str(cache), PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    done = subprocess.run(
        [sys.executable, "-c", _RUN], env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_first_run_writes_the_archive_and_the_next_maps_it(tmp_path: Path) -> None:
    first = _run(tmp_path)
    assert first == {"total": 90, "mapped": False}
    archives = list((tmp_path / "jvm").iterdir())
    assert len(archives) == 1 and archives[0].suffix == ".jsa", archives  # no partial file left
    assert _run(tmp_path) == {"total": 90, "mapped": True}
    assert list((tmp_path / "jvm").iterdir()) == archives
