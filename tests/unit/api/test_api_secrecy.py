"""A password never shows in an error message, a repr or the CLI's output, wherever it was put."""

from __future__ import annotations

import copy
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparkcdc.api.manifest import ManifestError, load_manifests
from sparkcdc.cli import main

pytestmark = pytest.mark.unit

PASSWORD = "Hunter2-S3cr3t"

SECRET = f"""\
apiVersion: v1
kind: Secret
metadata: {{name: db}}
stringData: {{password: "{PASSWORD}"}}
"""

PIPELINE = """\
apiVersion: sparkcdc.io/v1alpha1
kind: CdcPipeline
metadata: {name: leak}
spec:
  source:
    host: 127.0.0.1
    user: cdc
    passwordSecretRef: {name: db, key: password}
    tables: [shop.orders]
  sink: {type: console}
"""

# Each puts the password where it does not belong; all of them must be reported without it.
MISPLACED = {
    "password as the ref": PIPELINE.replace(
        "passwordSecretRef: {name: db, key: password}", f"passwordSecretRef: {PASSWORD}"
    ),
    "password field": PIPELINE.replace("    user: cdc\n", f"    user: cdc\n    password: {PASSWORD}\n"),
    "password as the ref's name": PIPELINE.replace(
        "{name: db, key: password}", f"{{name: {PASSWORD}, key: password}}"
    ),
    "password as the ref's key": PIPELINE.replace(
        "{name: db, key: password}", f"{{name: db, key: '{PASSWORD}!'}}"
    ),
    "password inside ref": PIPELINE.replace("key: password}", f"key: password, value: {PASSWORD}}}"),
    "credentials in url": PIPELINE.replace(
        "sink: {type: console}",
        f"sink: {{type: jdbc, url: 'mysql://cdc:{PASSWORD}@db:3306/x', user: cdc, "
        "passwordSecretRef: {name: db, key: password}}",
    ),
    "credentials in url, bad scheme": PIPELINE.replace(
        "sink: {type: console}",
        f"sink: {{type: jdbc, url: 'oracle://cdc:{PASSWORD}@db/x', user: cdc, "
        "passwordSecretRef: {name: db, key: password}}",
    ),
    "password as a list": SECRET.replace(f'"{PASSWORD}"', f'["{PASSWORD}"]') + "---\n" + PIPELINE,
    "password as a map": SECRET.replace(f'"{PASSWORD}"', f"{{{PASSWORD}: 1}}") + "---\n" + PIPELINE,
    "duplicate password key": SECRET.replace(
        f'{{password: "{PASSWORD}"}}', f'{{password: "{PASSWORD}", password: "{PASSWORD}x"}}'
    )
    + "---\n"
    + PIPELINE,
    "unterminated quote": SECRET.replace(f'"{PASSWORD}"', f'"{PASSWORD}') + "---\n" + PIPELINE,
    "tab in secret line": SECRET.replace("stringData:", "stringData:\t") + "---\n" + PIPELINE,
    "missing key next to the password": SECRET + "---\n" + PIPELINE.replace("key: password", "key: pw"),
    "bad base64 of the password": SECRET.replace("stringData", "data") + "---\n" + PIPELINE,
    "secret field misplaced": SECRET.replace("stringData:", "strinData:") + "---\n" + PIPELINE,
}


@pytest.mark.parametrize("text", MISPLACED.values(), ids=MISPLACED.keys())
def test_password_is_not_in_messages(text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(textwrap.dedent(text))
    with pytest.raises(ManifestError) as info:
        load_manifests([str(path)])
    assert info.value.messages
    assert PASSWORD not in str(info.value)
    assert PASSWORD not in repr(info.value)
    assert main(["validate", str(path)]) == 2
    out, err = capsys.readouterr()
    assert PASSWORD not in out + err


def test_password_is_not_in_repr_of_a_valid_manifest(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(SECRET + "---\n" + PIPELINE)
    manifest = load_manifests([str(path)])
    ref = manifest.pipelines[0].pipeline.spec.source.password_secret_ref
    value = manifest.resolve_secret(ref, "spec.source.passwordSecretRef")
    assert value.get_secret_value() == PASSWORD
    for text in (repr(manifest), str(manifest), repr(manifest.secrets["db"]), repr(value), str(value)):
        assert PASSWORD not in text


# Random values dropped anywhere into a valid pipeline: loading either succeeds or raises ManifestError
# whose every line names its document; the translation of pydantic's errors never crashes.
_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**40), 2**40), st.floats(allow_nan=False), st.text(max_size=12)
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6,
)


def _paths(node: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            found += _paths(value, (*prefix, key))
    return found


_BASE = yaml.safe_load(PIPELINE)
_ALL_PATHS = [p for p in _paths(_BASE) if p]
_FIELD_NAMES = ["mode", "sink", "chunkSize", "type", "url", "serverId", "tables", "timestamp", "x", "path"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    where=st.sampled_from(_ALL_PATHS),
    key=st.one_of(st.none(), st.sampled_from(_FIELD_NAMES)),
    value=_values,
)
def test_any_garbage_gives_located_messages(
    tmp_path: Path, where: tuple[str, ...], key: str | None, value: Any
) -> None:
    doc = copy.deepcopy(_BASE)
    target = doc
    for part in where[:-1]:
        target = target[part]
    if key is None or not isinstance(target.get(where[-1]), dict):
        target[where[-1]] = value
    else:
        target[where[-1]][key] = value
    path = tmp_path / "fuzz.yaml"
    path.write_text(SECRET + "---\n" + json.dumps(doc))
    try:
        load_manifests([str(path)])
    except ManifestError as err:
        assert err.messages
        for line in err.messages:
            assert line.startswith(f"{path}#2"), line
            assert PASSWORD not in line
