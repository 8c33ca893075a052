"""Row change events decoded from the binlog, independent of the decoding library."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.tables import TableId

# A row image: column name -> value, already converted to the canonical representation that
# the snapshot path produces for the same column (see architecture §3 rule 7).
Row = Mapping[str, Any]


class Op(str, Enum):
    INSERT = "insert"
    UPDATE = "update"
    DELETE = "delete"


@dataclass(frozen=True)
class ChangeEvent:
    """One row change.

    ``offset`` is the position just after the event, so "the event is after watermark W" is
    ``event.offset > W``. ``index`` orders rows of one binlog event (a multi-row event shares
    its offset). ``before`` is set for updates and deletes, ``after`` for inserts and updates.
    """

    table: TableId
    op: Op
    before: Row | None
    after: Row | None
    offset: BinlogOffset
    index: int = 0
    ts_ms: int = 0

    @property
    def image(self) -> Row:
        """The row's image after the change, or before it for a delete."""
        image = self.before if self.op is Op.DELETE else self.after
        assert image is not None
        return image
