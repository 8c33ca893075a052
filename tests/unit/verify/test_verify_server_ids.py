"""Re-check and repair reads must never take the running pipeline's binlog reader id."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr

from sparkcdc.api.manifest import load_manifests
from sparkcdc.engine.discovery import server_id_range
from sparkcdc.engine.runtime import PipelineRuntime, build_runtime
from sparkcdc.engine.streaming import live_reader_server_id
from sparkcdc.verify.runner import repair_server_ids

pytestmark = pytest.mark.unit

REFERENCE = Path(__file__).parents[1] / "api" / "manifests" / "reference.yaml"


def _runtime(server_id: str | None, parallelism: int) -> PipelineRuntime:
    [loaded] = load_manifests([str(REFERENCE)]).pipelines
    spec = loaded.pipeline.spec
    source = spec.source.model_copy(update={"server_id": server_id})
    snapshot = spec.snapshot.model_copy(update={"parallelism": parallelism})
    pipeline = loaded.pipeline.model_copy(
        update={"spec": spec.model_copy(update={"source": source, "snapshot": snapshot})}
    )
    return build_runtime(pipeline, lambda ref, field: SecretStr("pw"))


@pytest.mark.parametrize(
    ("server_id", "parallelism", "expected"),
    [
        ("5400-5404", 4, [5403, 5402, 5401, 5400]),
        ("5400-5404", 2, [5403, 5402]),
        ("5400-5401", 4, [5400]),
        (None, 4, None),
    ],
)
def test_recheck_ids_exclude_the_live_reader(
    server_id: str | None, parallelism: int, expected: list[int] | None
) -> None:
    runtime = _runtime(server_id, parallelism)
    ids = repair_server_ids(runtime, None)
    assert live_reader_server_id(server_id_range(runtime, None)) not in ids
    assert len(set(ids)) == len(ids)
    if expected is not None:
        assert ids == expected
    else:
        assert len(ids) == parallelism


def test_a_single_id_range_reads_with_ids_of_its_own() -> None:
    runtime = _runtime("5400", 2)
    ids = repair_server_ids(runtime, None)
    assert 5400 not in ids and len(ids) == 2
