"""The stored form of a checkpoint survives JSON merge patches exactly."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.reconcile_fixtures import merge
from sparkcdc.kube.status_codec import (
    chunk_data,
    decode_value,
    encode_value,
    join_chunks,
    merge_diff,
    spill_chunks,
)
from sparkcdc.state.base import StateError

keys = st.one_of(st.text(max_size=6), st.sampled_from(["$null", "$int", "$spill", "$$x", "$", "a"]))
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=8),
)  # fmt: skip
documents = st.recursive(
    scalars, lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=4)),
    max_leaves=30,
)  # fmt: skip


def test_nulls_and_reserved_keys_round_trip() -> None:
    doc: dict[str, Any] = {"a": None, "$null": 1, "big": 2**64 - 1, "l": [None, {"$int": "7"}], "$$": {}}
    assert decode_value(encode_value(doc)) == doc
    assert None not in encode_value(doc).values()


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(keys, documents, max_size=5), st.dictionaries(keys, documents, max_size=5))
def test_a_merge_patch_of_the_diff_replaces_exactly(old: dict[str, Any], new: dict[str, Any]) -> None:
    stored_old, stored_new = encode_value(old), encode_value(new)
    server = merge(stored_old, merge_diff(stored_old, stored_new))
    assert server == stored_new
    assert decode_value(server) == new


def test_diff_is_minimal() -> None:
    old = {"a": 1, "b": {"c": 2, "d": 3}, "gone": 1}
    assert merge_diff(old, {"a": 1, "b": {"c": 2, "d": 4}}) == {"b": {"d": 4}, "gone": None}
    assert merge_diff(old, old) == {}
    assert merge_diff(None, {"a": 1}) == {"a": 1}


def test_spill_chunks_round_trip_and_check_the_digest() -> None:
    doc = {"tables": [{"n": i, "v": None} for i in range(20000)]}
    sha, chunks = spill_chunks(doc)
    data = [chunk_data(c) for c in chunks]
    assert join_chunks(data, sha) == doc
    with pytest.raises(StateError, match="checksum"):
        join_chunks(data, "0" * 64)
