"""Table schemas written by hand, for sink tests that need no source table: ``col`` describes a
column as ``information_schema`` would, ``table_schema`` makes a ``shop.<name>`` table of them."""

from __future__ import annotations

from collections.abc import Sequence

from sparkcdc.core.tables import TableId
from sparkcdc.mysql.columns import Column
from sparkcdc.mysql.schema import TableSchema

__all__ = ["GENERAL_CI", "col", "table_schema"]

GENERAL_CI = "utf8mb4_general_ci"


def col(name: str, column_type: str, nullable: bool = True, collation: str | None = None) -> Column:
    """A column as ``information_schema`` would describe ``column_type``."""
    data_type = column_type.split("(")[0].split(" ")[0].lower()
    args = column_type[column_type.find("(") + 1 : column_type.find(")")] if "(" in column_type else ""
    nums = [int(a) for a in args.split(",")] if args and args[0].isdigit() else []
    text = data_type in ("char", "varchar", "text", "enum", "set", "json")
    return Column(
        name=name,
        ordinal=0,
        data_type=data_type,
        column_type=column_type,
        nullable=nullable,
        unsigned="unsigned" in column_type,
        precision=nums[0] if nums and data_type in ("decimal", "bit") else None,
        scale=nums[1] if len(nums) > 1 else (0 if data_type == "decimal" else None),
        datetime_precision=nums[0] if nums and data_type in ("datetime", "timestamp", "time") else None,
        collation=(collation or GENERAL_CI) if text else None,
        charset="utf8mb4" if text else None,
    )


def table_schema(
    name: str, columns: Sequence[Column], row_key: Sequence[str], chunk_key: Sequence[str] = ()
) -> TableSchema:
    """Table ``shop.<name>`` keyed (and chunked, unless ``chunk_key`` says otherwise) by ``row_key``."""
    return TableSchema(
        table=TableId("shop", name),
        columns=tuple(columns),
        primary_key=tuple(row_key),
        chunk_key=tuple(chunk_key or row_key),
        row_key=tuple(row_key),
    )
