"""The string rank that bounds a split's candidates in PostgreSQL never misses a key in the range."""

from __future__ import annotations

import random

import pytest

from sparkcdc.core.keys import KeyOrder
from sparkcdc.mysql.columns import Column
from sparkcdc.sinks.jdbc.postgres import StringRank, pg_type

COLLATIONS = [
    "utf8mb4_general_ci",
    "utf8mb4_unicode_ci",
    "utf8mb4_0900_ai_ci",
    "utf8mb4_0900_as_cs",
    "utf8mb4_uca1400_ai_ci",
    "utf8mb4_bin",
    "utf8mb4_0900_bin",
    "latin1_swedish_ci",
    "latin1_general_cs",
    "latin1_bin",
]
# ASCII letters, digits and punctuation, plus what falls outside the rank's alphabet: space, tab,
# accented and non-Latin letters, combining marks, emoji.
CHARS = "aAbBzZ09_-.@[{~` \t" + "éÉüßæ\u0301ЖΩ😀"


def _word(rng: random.Random, chars: str) -> str:
    return "".join(rng.choice(chars) for _ in range(rng.randint(0, 5)))


@pytest.mark.parametrize("collation", COLLATIONS)
def test_every_key_in_the_range_is_a_candidate(collation: str) -> None:
    rank = StringRank.for_collation(collation)
    assert rank is not None and len(rank.alphabet) == 94
    order = KeyOrder.for_columns([collation])
    rng = random.Random(collation)
    chars = "".join(ch for ch in CHARS if ord(ch) < 0x100) if collation.startswith("latin1") else CHARS
    for _ in range(300):
        start, end = sorted([_word(rng, chars), _word(rng, chars)], key=lambda w: order.sort_key((w,)))
        lo, hi = rank.bounds(start, end)
        for _ in range(40):
            x = (
                _word(rng, chars)
                if rng.random() < 0.5
                else start[: rng.randint(0, len(start))] + _word(rng, chars)
            )
            if not order.in_range((x,), (start,), (end,)):
                continue
            safe = all(ch in rank.alphabet for ch in x)
            ranked = rank.rank(x) if safe else ""
            assert ranked == "" or ((lo is None or ranked >= lo) and (hi is None or ranked < hi)), (
                x,
                start,
                end,
            )


def test_case_insensitive_collations_share_a_rank_per_letter() -> None:
    general = StringRank.for_collation("utf8mb4_general_ci")
    binary = StringRank.for_collation("utf8mb4_bin")
    assert general is not None and binary is not None
    assert general.rank("abc") == general.rank("ABC") != general.rank("abd")
    assert binary.rank("abc") != binary.rank("ABC")
    assert general.bounds("user-1", "user-2é") == (general.rank("user-1"), general.rank("user-2") + "\x7f")


@pytest.mark.parametrize(
    ("data_type", "column_type", "unsigned", "expected"),
    [
        ("tinyint", "tinyint(3) unsigned", True, "smallint"),
        ("smallint", "smallint(5) unsigned", True, "integer"),
        ("int", "int(10) unsigned", True, "bigint"),
        ("bigint", "bigint(20) unsigned", True, "numeric(20,0)"),
        ("mediumint", "mediumint(9)", False, "integer"),
        ("json", "json", False, "text"),
        ("time", "time", False, "interval"),
    ],
)
def test_type_mapping_holds_every_value(
    data_type: str, column_type: str, unsigned: bool, expected: str
) -> None:
    column = Column(name="c", ordinal=1, data_type=data_type, column_type=column_type, unsigned=unsigned)
    assert pg_type(column) == expected
