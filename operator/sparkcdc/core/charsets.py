"""MySQL's ``latin1``, which is neither Python's ``latin-1`` nor its ``cp1252``.

MySQL and MariaDB call Windows-1252 ``latin1``, except for the five bytes Windows-1252 leaves
undefined (0x81, 0x8D, 0x8F, 0x90, 0x9D): the server maps each to the C1 control of the same
number (U+0081 ...), both when it converts a ``latin1`` value for a UTF-8 client — what a snapshot
reads — and back. Python's ``cp1252`` codec refuses those bytes, so a binlog decoder that used it
would either stop on them or replace them, and the replica would differ from the source's own
reading of the row. Every decoder of raw ``latin1`` bytes (the Python binlog reader through
compat/mysql_replication.py, the Go decoder's column values through mysql/types.py, the Go
decoder's own changelog lines in binlogdec/pyjson.go) decodes with this one table instead.
"""

from __future__ import annotations

import codecs

__all__ = ["MYSQL_LATIN1", "decode_mysql_latin1", "encode_mysql_latin1"]

_UNDEFINED_IN_CP1252 = (0x81, 0x8D, 0x8F, 0x90, 0x9D)


def _table() -> str:
    chars = []
    for byte in range(256):
        if byte in _UNDEFINED_IN_CP1252:
            chars.append(chr(byte))
        else:
            chars.append(bytes([byte]).decode("cp1252"))
    return "".join(chars)


# The character each byte of MySQL's latin1 stands for (a codecs.charmap decoding table).
MYSQL_LATIN1 = _table()
_ENCODING = codecs.charmap_build(MYSQL_LATIN1)


def decode_mysql_latin1(data: bytes) -> str:
    """``data`` as MySQL reads latin1 bytes: every byte is a character."""
    return codecs.charmap_decode(data, "strict", MYSQL_LATIN1)[0]


def encode_mysql_latin1(text: str) -> bytes:
    """``text`` in MySQL's latin1; ValueError naming the first character it has no byte for."""
    try:
        return codecs.charmap_encode(text, "strict", _ENCODING)[0]
    except UnicodeEncodeError as err:
        raise ValueError(f"character {text[err.start]!r} is not in MySQL's latin1") from None
