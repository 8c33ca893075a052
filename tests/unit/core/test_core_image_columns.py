"""``ImageColumns``: last images kept column by column, read and changed as the key → row mapping
``BackfillChanges.upserts`` is; the columns are only offered while they still say what it holds."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparkcdc.core.catchup import absorb
from sparkcdc.core.image_columns import ImageColumns, LoadText
from sparkcdc.core.merge import BackfillChanges

NAMES = ("a", "id", "b")


def images(rows: list[tuple[Any, ...]]) -> ImageColumns:
    columns = [list(c) for c in zip(*rows, strict=True)] if rows else [[], [], []]
    return ImageColumns(NAMES, columns, key_at=[1, 0])


@given(st.dictionaries(st.tuples(st.integers(), st.text(max_size=3)), st.none() | st.floats(allow_nan=False)))
def test_the_mapping_is_the_rows_by_key(data: dict[tuple[int, str], float | None]) -> None:
    rows = [(a, id_, b) for (id_, a), b in data.items()]
    held = images(rows)
    assert len(held) == len(rows) and held.columns is not None  # counting keeps the columns
    expected = {(id_, a): {"a": a, "id": id_, "b": b} for a, id_, b in rows}
    assert dict(held) == expected
    assert held.columns is None  # read as rows: the columns are gone


def test_columns_are_offered_until_the_mapping_changes() -> None:
    held = images([(1, 10, "x"), (2, 20, "y")])
    assert held.columns == [[1, 2], [10, 20], ["x", "y"]]
    held[(30, 3)] = {"a": 3, "id": 30, "b": "z"}
    assert held.columns is None
    assert sorted(held) == [(10, 1), (20, 2), (30, 3)]
    del held[(10, 1)]
    assert len(held) == 2


def test_absorbing_a_later_batch_gives_the_later_images() -> None:
    into = BackfillChanges(upserts=images([(1, 10, "old"), (2, 20, "kept")]), deletes={(40, 4)})
    later = BackfillChanges(upserts=images([(1, 10, "new"), (4, 40, "back")]), deletes={(20, 2)})
    absorb(into, later)
    assert dict(into.upserts) == {
        (10, 1): {"a": 1, "id": 10, "b": "new"},
        (40, 4): {"a": 4, "id": 40, "b": "back"},
    }
    assert into.deletes == {(20, 2)}


def test_inconsistent_columns_are_refused() -> None:
    with pytest.raises(ValueError, match="same length"):
        ImageColumns(NAMES, [[1], [2, 3], [4]], [1])
    with pytest.raises(ValueError, match="one column per name"):
        ImageColumns(NAMES, [[1], [2]], [1])
    with pytest.raises(ValueError, match="same key"):
        dict(ImageColumns(NAMES, [[1, 2], [10, 10], ["x", "y"]], [1]))


def test_columns_made_when_first_asked_for_and_the_load_text_kept_until_rows() -> None:
    made: list[int] = []

    def make() -> list[list[object]]:
        made.append(1)
        return [[1, 2], [10, 20], ["x", "y"]]

    held = ImageColumns(NAMES, make, [1], LoadText(b"1\t10\tx\n2\t20\ty\n", 2))
    assert len(held) == 2 and made == []  # counted from the text
    assert held.load_text is not None and held.columns == [[1, 2], [10, 20], ["x", "y"]] and made == [1]
    assert held[(20,)] == {"a": 2, "id": 20, "b": "y"} and made == [1]
    assert held.load_text is None and held.columns is None  # read as rows: the text is gone

    short = ImageColumns(NAMES, make, [1], LoadText(b"1\t10\tx\n", 1))
    with pytest.raises(ValueError, match="other rows than their load text"):
        _ = short.columns


def test_a_run_of_later_images_is_absorbed_as_columns_until_a_key_repeats() -> None:
    given = [[1, 2], [10, 20], ["x", "y"]]
    held = ImageColumns(NAMES, given, key_at=[1, 0], load=LoadText(b"1\n2\n", 2))
    for n in range(3, 9, 2):  # three later batches of new keys
        load = LoadText(f"{n}\n{n + 1}\n".encode(), 2)
        later = ImageColumns(NAMES, [[n, n + 1], [n * 10, n * 10 + 10], ["z", "w"]], [1, 0], load)
        assert held.absorb(later)
    assert given == [[1, 2], [10, 20], ["x", "y"]]  # the caller's columns were copied, not grown
    assert held.columns is not None and held.columns[0] == [1, 2, 3, 4, 5, 6, 7, 8]
    assert held.load_text == LoadText(b"1\n2\n3\n4\n5\n6\n7\n8\n", 8)

    before = [list(column) for column in held.columns]
    assert not held.absorb(images([(9, 90, "v"), (1, 10, "again")]))  # key (10, 1) repeats
    assert not held.absorb(images([(9, 90, "v")]), removed=[(20, 2)])  # a held key deleted after
    assert not held.absorb(ImageColumns(("a", "id"), [[9], [90]], [1, 0]))  # other columns
    assert [list(column) for column in held.columns] == before  # refused: nothing changed

    assert held.absorb(images([(9, 90, "v")]))  # the set of held keys still says what is held
    assert held.load_text is None  # the later images had no load text
    assert len(held) == 9 and held[(90, 9)] == {"a": 9, "id": 90, "b": "v"}
