"""A chunk's checksum: its row count and the sum of its rows' hashes (order-independent)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ChunkChecksum", "RowHashes"]

# Each row's hash by the canonical text of its row key.
RowHashes = dict[str, int]


@dataclass(frozen=True)
class ChunkChecksum:
    rows: int
    digest: int

    def to_json(self) -> dict[str, Any]:
        return {"rows": self.rows, "digest": format(self.digest, "x")}

    @classmethod
    def of(cls, rows: RowHashes) -> ChunkChecksum:
        """The checksum the aggregate query computes for these rows."""
        return cls(len(rows), sum(rows.values()))
