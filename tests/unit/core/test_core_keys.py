from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparkcdc.core.keys import (
    KeyOrder,
    PadSpaceKey,
    collation_is_exact,
    collation_sort_key,
    key_in_range,
    key_of,
)

pytestmark = pytest.mark.unit

PADDED_TEXT = st.text(alphabet=" \t\x01abAB_é", max_size=8)


def padded_reference(a: str, b: str) -> int:
    """PAD SPACE comparison by definition: pad both with spaces beyond the longer one."""
    n = max(len(a), len(b)) + 1
    pa, pb = a.ljust(n), b.ljust(n)
    return (pa > pb) - (pa < pb)


def cmp(x: PadSpaceKey, y: PadSpaceKey) -> int:
    return (x > y) - (x < y)


@given(PADDED_TEXT, PADDED_TEXT)
def test_pad_space_key_matches_padded_comparison(a: str, b: str) -> None:
    assert cmp(PadSpaceKey(a), PadSpaceKey(b)) == padded_reference(a, b)
    assert (PadSpaceKey(a) == PadSpaceKey(b)) == (padded_reference(a, b) == 0)
    encoded = cmp(PadSpaceKey(a.encode()), PadSpaceKey(b.encode()))
    assert encoded == padded_reference(a, b)


def test_pad_space_tab_sorts_below_padding() -> None:
    assert PadSpaceKey("a\t") < PadSpaceKey("a")
    assert PadSpaceKey("a") < PadSpaceKey("a b")
    assert PadSpaceKey("a  ") == PadSpaceKey("a")
    assert hash(PadSpaceKey("a  ")) == hash(PadSpaceKey("a"))


def test_bin_collations_are_exact_and_pad_space() -> None:
    key = collation_sort_key("utf8mb4_bin")
    assert key("a") == key("a   ")
    assert key("B") < key("a")  # binary: upper case first
    assert key("z") < key("é") < key("€") < key("😀")  # code point == UTF-8 byte order
    assert collation_is_exact("utf8mb4_bin") and collation_is_exact("binary")
    assert not collation_is_exact("utf8mb4_general_ci")


def test_no_pad_collations_keep_trailing_spaces() -> None:
    for name in ("utf8mb4_0900_bin", "binary", "utf8mb4_nopad_bin"):
        key = collation_sort_key(name)
        assert key("a") < key("a ")
    assert collation_sort_key("binary")(b"\x00\xff") < collation_sort_key("binary")(b"\x01")


def test_latin1_bin_uses_cp1252_byte_order() -> None:
    key = collation_sort_key("latin1_bin")
    assert key("€") < key("ÿ")  # 0x80 < 0xFF although U+20AC > U+00FF
    assert key("\x81") < key("\u201a")  # undefined cp1252 byte 0x81 maps to itself; U+201A is 0x82


def test_case_insensitive_families() -> None:
    general = collation_sort_key("utf8mb4_general_ci")
    unicode_ci = collation_sort_key("utf8mb4_unicode_ci")
    ai_ci = collation_sort_key("utf8mb4_0900_ai_ci")
    for key in (general, unicode_ci, ai_ci):
        assert key("abc") == key("ABC")
        assert key("résumé") == key("RESUME")
        assert key("apple") < key("Banana") < key("cherry")
    assert general("abc") == general("abc  ")  # PAD SPACE
    assert ai_ci("abc") < ai_ci("abc ")  # 0900 collations are NO PAD
    assert general("a") < general("_")  # general_ci weighs letters by their upper case form
    assert unicode_ci("_") < unicode_ci("a")  # UCA: punctuation before letters


def test_accent_sensitive_and_case_sensitive() -> None:
    as_ci = collation_sort_key("utf8mb4_0900_as_ci")
    assert as_ci("É") == as_ci("é") != as_ci("e")
    cs = collation_sort_key("utf8mb4_0900_as_cs")
    assert cs("a") < cs("A") < cs("b")  # lower case first, then the next letter
    assert cs("e") < cs("é") < cs("f")


def test_natural_order_is_exact() -> None:
    order = KeyOrder()
    big = 2**64 - 1
    assert order.compare((big - 1,), (big,)) == -1
    assert order.compare((Decimal("0.30000000000000000001"),), (Decimal("0.3"),)) == 1
    assert order.compare((b"\x00",), (b"\xff",)) == -1
    assert order.compare((dt.date(2020, 1, 1),), (dt.date(2019, 12, 31),)) == 1
    assert order.compare((None,), (-(10**30),)) == -1  # type: ignore[arg-type]  # NULL sorts first
    assert order.equal((1, "a"), (1, "a"))


def test_for_columns_composite() -> None:
    order = KeyOrder.for_columns([None, "utf8mb4_general_ci"])
    assert order.compare((1, "B"), (1, "a")) == 1
    assert order.compare((1, "ABC"), (1, "abc  ")) == 0
    assert order.compare((0, "z"), (1, "a")) == -1
    assert order.in_range((1, "b"), (1, "A"), (1, "C"))
    assert not order.in_range((1, "C"), (1, "A"), (1, "c"))


@given(st.integers(), st.one_of(st.none(), st.integers()), st.one_of(st.none(), st.integers()))
def test_key_in_range_half_open(k: int, start: int | None, end: int | None) -> None:
    expected = (start is None or start <= k) and (end is None or k < end)
    s = None if start is None else (start,)
    e = None if end is None else (end,)
    assert key_in_range((k,), s, e) == expected


def test_key_in_range_with_collation() -> None:
    order = KeyOrder.for_columns(["utf8mb4_general_ci"])
    assert key_in_range(("B",), ("a",), ("c",), order)
    assert not key_in_range(("B",), ("a",), ("c",))  # Python order: "B" < "a"


def test_key_of() -> None:
    assert key_of({"a": 1, "b": "x", "c": 3}, ["b", "a"]) == ("x", 1)


# Recorded from MariaDB 10.11: for each collation, the number of STRINGS sorting strictly before
# each string (``SELECT COUNT(*) ... WHERE b.s < a.s``).
STRINGS = [
    "a",
    "A",
    "a ",
    "a\t",
    "a b",
    "ab",
    "Ab",
    "b",
    "z",
    "_",
    "-",
    "0",
    "9",
    "[",
    "`",
    "~",
    "$",
    "é",
    "É",
    "e",
    "résumé",
    "resume",
    "ß",
    "ss",
    "å",
    "ä",
    "ö",
    "o",
    "ø",
    "æ",
    "ae",
    "€",
    "ÿ",
    "",
    " ",
]
MARIADB_RANKS = {
    "utf8mb4_bin": [
        12,
        6,
        12,
        11,
        14,
        15,
        7,
        17,
        23,
        9,
        3,
        4,
        5,
        8,
        10,
        24,
        2,
        30,
        25,
        18,
        21,
        20,
        26,
        22,
        28,
        27,
        31,
        19,
        32,
        29,
        16,
        34,
        33,
        0,
        0,
    ],
    "utf8mb4_general_ci": [
        7,
        7,
        7,
        6,
        12,
        13,
        13,
        16,
        27,
        29,
        3,
        4,
        5,
        28,
        30,
        31,
        2,
        17,
        17,
        17,
        22,
        22,
        24,
        25,
        7,
        7,
        20,
        20,
        33,
        32,
        15,
        34,
        26,
        0,
        0,
    ],
    "utf8mb4_unicode_ci": [
        12,
        12,
        12,
        11,
        17,
        18,
        18,
        22,
        34,
        3,
        4,
        9,
        10,
        5,
        2,
        6,
        7,
        23,
        23,
        23,
        29,
        29,
        31,
        31,
        12,
        12,
        26,
        26,
        28,
        21,
        20,
        8,
        33,
        0,
        0,
    ],
    "utf8mb4_unicode_520_ci": [
        12,
        12,
        12,
        11,
        17,
        18,
        18,
        22,
        34,
        3,
        4,
        9,
        10,
        5,
        2,
        6,
        7,
        23,
        23,
        23,
        29,
        29,
        31,
        31,
        12,
        12,
        26,
        26,
        26,
        20,
        20,
        8,
        33,
        0,
        0,
    ],
    "utf8mb4_uca1400_ai_ci": [
        12,
        12,
        12,
        11,
        17,
        18,
        18,
        22,
        34,
        2,
        3,
        9,
        10,
        4,
        5,
        6,
        7,
        23,
        23,
        23,
        29,
        29,
        31,
        31,
        12,
        12,
        26,
        26,
        26,
        20,
        20,
        8,
        33,
        0,
        0,
    ],
    "utf8mb4_nopad_bin": [
        11,
        6,
        13,
        12,
        14,
        15,
        7,
        17,
        23,
        9,
        3,
        4,
        5,
        8,
        10,
        24,
        2,
        30,
        25,
        18,
        21,
        20,
        26,
        22,
        28,
        27,
        31,
        19,
        32,
        29,
        16,
        34,
        33,
        0,
        1,
    ],
    "latin1_swedish_ci": [
        7,
        7,
        7,
        6,
        10,
        11,
        11,
        14,
        22,
        28,
        3,
        4,
        5,
        23,
        29,
        30,
        2,
        15,
        15,
        15,
        19,
        19,
        33,
        21,
        23,
        25,
        27,
        18,
        32,
        25,
        13,
        31,
        34,
        0,
        0,
    ],
    "latin1_general_cs": [
        9,
        6,
        9,
        8,
        11,
        12,
        7,
        17,
        29,
        31,
        3,
        4,
        5,
        30,
        32,
        33,
        2,
        20,
        19,
        18,
        25,
        24,
        27,
        26,
        15,
        14,
        22,
        21,
        23,
        16,
        13,
        34,
        28,
        0,
        0,
    ],
}


@pytest.mark.parametrize("collation", sorted(MARIADB_RANKS))
def test_collation_order_matches_mariadb(collation: str) -> None:
    key = collation_sort_key(collation)
    keys = [key(s) for s in STRINGS]
    ranks = [sum(other < mine for other in keys) for mine in keys]
    assert ranks == MARIADB_RANKS[collation]
