"""A table definition as the checkpoint records it (engine/schema_history.py).

A stream resumed from an old checkpoint must decode each event with the definition of its
time. Without ``binlog_row_metadata=FULL`` the binlog does not name columns, nor tell
signedness, charsets or ENUM/SET labels, so the definition in force at the checkpoint is
stored with it: every field of each ``Column`` and the table's keys, exactly (a definition
decoded here equals the one encoded, targets aside: those come from the spec), plus the
position it is known to be in force from (``loaded_at``, schema_changes.py) and the snapshot it
belongs to (a resnapshot of the table makes the record stale).

Columns are positional lists with trailing empty fields left out, ENUM/SET labels only when
they are not the ones ``column_type`` spells, keys only where they differ from the one before;
``FORMAT`` versions the layout.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sparkcdc.core.checkpoint_blocks import decode_offset, encode_offset
from sparkcdc.core.jsoncodec import CheckpointError
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.columns import Column
from sparkcdc.mysql.schema import TableSchema, parse_members

__all__ = ["FORMAT", "RecordedDefinition", "decode_definition", "encode_definition"]

FORMAT = 1

_NULLABLE, _UNSIGNED, _ZERO_DATES = 1, 2, 4


@dataclass(frozen=True)
class RecordedDefinition:
    """``schema`` (target left out) in force from ``loaded_at`` on; ``snapshot``: the table's
    highest snapshot watermark when recorded (None: streamed without a snapshot)."""

    schema: TableSchema
    loaded_at: BinlogOffset
    snapshot: BinlogOffset | None


def _members(column: Column) -> tuple[str, ...]:
    return parse_members(column.column_type) if column.data_type in ("enum", "set") else ()


def _encode_column(c: Column) -> list[Any]:
    flags = (
        (_NULLABLE if c.nullable else 0)
        | (_UNSIGNED if c.unsigned else 0)
        | (_ZERO_DATES if c.zero_dates else 0)
    )
    members = list(c.members) if c.members != _members(c) else None
    fields: list[Any] = [
        c.name,
        c.ordinal,
        c.data_type,
        c.column_type,
        flags,
        c.precision,
        c.scale,
        c.datetime_precision,
        c.length,
        c.charset,
        c.collation,
        c.default_sql,
        members,
    ]
    while fields[-1] is None:
        fields.pop()
    return fields


def _decode_column(doc: Any) -> Column:
    if not isinstance(doc, list) or len(doc) < 5:
        raise CheckpointError(f"bad recorded column {doc!r}")
    fields = doc + [None] * (13 - len(doc))
    name, ordinal, data_type, column_type, flags = fields[:5]
    precision, scale, dt_precision, length, charset, collation, default, members = fields[5:13]
    column = Column(
        name=str(name),
        ordinal=int(ordinal),
        data_type=str(data_type),
        column_type=str(column_type),
        nullable=bool(flags & _NULLABLE),
        unsigned=bool(flags & _UNSIGNED),
        precision=None if precision is None else int(precision),
        scale=None if scale is None else int(scale),
        datetime_precision=None if dt_precision is None else int(dt_precision),
        length=None if length is None else int(length),
        charset=None if charset is None else str(charset),
        collation=None if collation is None else str(collation),
        default_sql=None if default is None else str(default),
        zero_dates=bool(flags & _ZERO_DATES),
    )
    labels = _members(column) if members is None else tuple(str(m) for m in members)
    return Column(**{**column.__dict__, "members": labels})


def _position(offset: BinlogOffset) -> dict[str, Any] | None:
    # Only compared, which GTIDs take no part in; left out, they would repeat per table.
    return encode_offset(BinlogOffset(offset.file, offset.pos))


def encode_definition(recorded: RecordedDefinition) -> dict[str, Any]:
    s = recorded.schema
    doc: dict[str, Any] = {
        "f": FORMAT,
        "at": _position(recorded.loaded_at),
        "c": [_encode_column(c) for c in s.columns],
        "pk": list(s.primary_key),
    }
    if s.row_key != s.primary_key:
        doc["rk"] = list(s.row_key)
    if s.chunk_key != s.row_key:
        doc["ck"] = list(s.chunk_key)
    if not s.row_key_unique:
        doc["u"] = 0
    if recorded.snapshot is not None:
        doc["snap"] = _position(recorded.snapshot)
    return doc


def decode_definition(table: TableId, doc: Any) -> RecordedDefinition:
    """Raises ``CheckpointError`` for a malformed record or a layout this release does not know."""
    if not isinstance(doc, dict) or doc.get("f") != FORMAT:
        raise CheckpointError(f"{table}: recorded definition in an unknown format: {doc!r:.200}")
    try:
        primary = tuple(str(n) for n in doc["pk"])
        row_key = tuple(str(n) for n in doc.get("rk", primary))
        schema = TableSchema(
            table=table,
            columns=tuple(_decode_column(c) for c in doc["c"]),
            primary_key=primary,
            chunk_key=tuple(str(n) for n in doc.get("ck", row_key)),
            row_key=row_key,
            row_key_unique=bool(doc.get("u", 1)),
        )
        loaded_at = decode_offset(doc["at"])
    except (KeyError, TypeError, ValueError) as exc:
        raise CheckpointError(f"{table}: malformed recorded definition: {exc!r}") from exc
    if loaded_at is None:
        raise CheckpointError(f"{table}: recorded definition without its position")
    return RecordedDefinition(schema, loaded_at, decode_offset(doc.get("snap")))
