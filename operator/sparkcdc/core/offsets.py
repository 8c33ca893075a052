"""Binlog offsets: a position in the source's binary log, totally ordered."""

from __future__ import annotations

import re
from dataclasses import dataclass

_SUFFIX = re.compile(r"\.(\d+)$")


def binlog_file_index(file: str) -> int:
    """The numeric suffix of a binlog file name (``mysql-bin.000012`` -> 12).

    Binlog files are ordered by this suffix, not by their name: the server rolls the
    suffix past its zero padding (``.999999`` -> ``.1000000``).
    """
    match = _SUFFIX.search(file)
    if match is None:
        raise ValueError(f"binlog file name {file!r} has no numeric suffix")
    return int(match.group(1))


@dataclass(frozen=True)
class BinlogOffset:
    """A position in the binlog: the file and the byte offset of the next event to read.

    ``gtid_set`` is informational (it lets a reader start by GTID on a new primary); order
    is defined by file index then position only.
    """

    file: str
    pos: int
    gtid_set: str = ""

    def sort_key(self) -> tuple[int, int]:
        return (binlog_file_index(self.file), self.pos)

    def __lt__(self, other: BinlogOffset) -> bool:
        return self.sort_key() < other.sort_key()

    def __le__(self, other: BinlogOffset) -> bool:
        return self.sort_key() <= other.sort_key()

    def __gt__(self, other: BinlogOffset) -> bool:
        return self.sort_key() > other.sort_key()

    def __ge__(self, other: BinlogOffset) -> bool:
        return self.sort_key() >= other.sort_key()

    def same_position(self, other: BinlogOffset) -> bool:
        return self.sort_key() == other.sort_key()

    def __str__(self) -> str:
        return f"{self.file}:{self.pos}"

    @classmethod
    def parse(cls, text: str) -> BinlogOffset:
        """Parse ``file:pos`` as printed by ``str()``."""
        file, sep, pos = text.rpartition(":")
        if not sep or not file or not pos.isdigit():
            raise ValueError(f"binlog offset {text!r} is not of the form FILE:POSITION")
        return cls(file, int(pos))
