"""MySQL's latin1 (core/charsets.py): Windows-1252 with its five unassigned bytes as C1 controls."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparkcdc.core.charsets import MYSQL_LATIN1, decode_mysql_latin1, encode_mysql_latin1

UNASSIGNED_IN_CP1252 = (0x81, 0x8D, 0x8F, 0x90, 0x9D)


def test_every_byte_is_one_character_and_back() -> None:
    every = bytes(range(256))
    text = decode_mysql_latin1(every)
    assert len(text) == len(set(text)) == 256 and text == MYSQL_LATIN1
    assert encode_mysql_latin1(text) == every


def test_windows_1252_except_its_unassigned_bytes() -> None:
    for byte in range(256):
        char = decode_mysql_latin1(bytes([byte]))
        if byte in UNASSIGNED_IN_CP1252:
            assert char == chr(byte)
        else:
            assert char == bytes([byte]).decode("cp1252")


@given(st.binary(max_size=64))
def test_any_bytes_round_trip(data: bytes) -> None:
    assert encode_mysql_latin1(decode_mysql_latin1(data)) == data


@pytest.mark.parametrize("char", ["\u0080", "\u009f", "\u0100", "\u4e00", "\U0001f600"])
def test_a_character_latin1_has_no_byte_for_is_named(char: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f"character {char!r} is not in MySQL's latin1")):
        encode_mysql_latin1(f"ab{char}c")
