"""The Go decoder's strings of columns in another character set than UTF-8 (base64 of the bytes):
converted column-wise (binlog/native.py) to exactly what ``canonical_value`` makes of the bytes, for
every character set the type mapping knows, undecodable bytes included."""

from __future__ import annotations

import base64

from hypothesis import given
from hypothesis import strategies as st

from sparkcdc.mysql.binlog.native_values import _column_converter
from sparkcdc.mysql.columns import Column
from sparkcdc.mysql.types import canonical_value

CHARSETS = ["latin1", "ascii", "koi8r", "ucs2", "utf16le", "cp1251", None]


@given(st.sampled_from(CHARSETS), st.lists(st.none() | st.binary(max_size=12), max_size=20))
def test_strings_convert_as_canonical_value_decodes_them(
    charset: str | None, values: list[bytes | None]
) -> None:
    column = Column("s", 1, "varchar", "varchar(20)", charset=charset)
    convert = _column_converter(column)
    assert convert is not None
    rendered = [None if v is None else base64.b64encode(v).decode("ascii") for v in values]
    expected = [None if v is None else canonical_value(column, v) for v in values]
    assert list(convert(rendered)) == expected
