"""``sparkcdc run``'s JVM gets the heap a driver pod would: ``spec.spark.driver.memory``."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from sparkcdc.api.manifest import load_manifests
from sparkcdc.driver.local import local_driver_conf, runtimes_of
from sparkcdc.options import EngineOptions

pytestmark = pytest.mark.unit

PIPELINE = """
apiVersion: sparkcdc.io/v1alpha1
kind: CdcPipeline
metadata: {{name: {name}}}
spec:
  source:
    host: 127.0.0.1
    user: cdc
    passwordSecretRef: {{name: mysql-cdc, key: password}}
    tables: [shop.orders]
  sink: {{type: changelog, path: {path}}}
{spark}
"""
SECRET = "apiVersion: v1\nkind: Secret\nmetadata: {name: mysql-cdc}\nstringData: {password: pw}\n"


def _manifest(tmp_path: Path, memories: list[str | None]) -> list[str]:
    files = [tmp_path / "secret.yaml"]
    files[0].write_text(SECRET)
    for i, memory in enumerate(memories):
        spark = f"  spark: {{driver: {{memory: {memory}}}}}" if memory else ""
        path = tmp_path / f"p{i}.yaml"
        path.write_text(textwrap.dedent(PIPELINE.format(name=f"p{i}", path=tmp_path / f"p{i}", spark=spark)))
        files.append(path)
    return [str(f) for f in files]


@pytest.mark.parametrize(
    ("memories", "heap"),
    [([None], "1024m"), (["512m"], "512m"), (["2Gi", None, "1500m"], "2048m")],
)
def test_the_local_heap_is_the_largest_driver_memory(
    tmp_path: Path, memories: list[str | None], heap: str
) -> None:
    runtimes = runtimes_of(load_manifests(_manifest(tmp_path, memories)), EngineOptions())
    assert local_driver_conf(runtimes) == {"spark.driver.memory": heap}
