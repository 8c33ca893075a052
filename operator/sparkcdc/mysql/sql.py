"""SQL text for reading and comparing keys: select lists, typed parameters, range predicates.

Key values are canonical (types.py) and go to the server as parameters whose SQL type matches
the column, so the server compares them exactly: DECIMAL as DECIMAL (never a double), dates
and times as temporal values, strings by the column's collation.
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Sequence
from typing import Any

from sparkcdc.core.splits import Key
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.columns import Column, Family, quote_name

UTC = dt.timezone.utc


def table_name(table: TableId) -> str:
    return f"{quote_name(table.database)}.{quote_name(table.table)}"


def value_expression(column: Column) -> str:
    """How the snapshot reads a column so its text converts to the canonical value."""
    name = column.quoted()
    if column.family is Family.FLOAT:
        # FLOAT prints with 6 significant digits, which does not round-trip to the stored
        # float32; as a double it prints exactly.
        return f"({name} + 0E0)"
    return name


def select_expression(column: Column) -> str:
    """``value_expression`` named like the column."""
    expr = value_expression(column)
    return expr if expr == column.quoted() else f"{expr} AS {column.quoted()}"


def select_list(columns: Sequence[Column]) -> str:
    return ", ".join(select_expression(c) for c in columns)


def _format_timedelta(value: dt.timedelta) -> str:
    micros = value // dt.timedelta(microseconds=1)
    sign = "-" if micros < 0 else ""
    seconds, fraction = divmod(abs(micros), 1_000_000)
    hours, rest = divmod(seconds, 3600)
    return f"{sign}{hours:02d}:{rest // 60:02d}:{rest % 60:02d}.{fraction:06d}"


def param_sql(column: Column, collate: bool = False) -> str:
    """A placeholder typed like ``column``.

    With ``collate`` a string parameter carries the column's charset and collation explicitly,
    for comparisons between two parameters where no column lends its collation.
    """
    family = column.family
    if family is Family.DECIMAL:
        return f"CAST(%s AS DECIMAL({int(column.precision or 10)},{int(column.scale or 0)}))"
    if family is Family.INTEGER and column.unsigned and column.integer_bits == 64:
        return "CAST(%s AS UNSIGNED)"
    if family is Family.DATE:
        return "CAST(%s AS DATE)"
    if family in (Family.DATETIME, Family.TIMESTAMP):
        return "CAST(%s AS DATETIME(6))"
    if family is Family.TIME:
        return "CAST(%s AS TIME(6))"
    if collate and column.is_text and column.charset and column.collation:
        return f"CONVERT(%s USING {column.charset}) COLLATE {column.collation}"
    return "%s"


def param_value(column: Column, value: Any) -> Any:
    """A canonical key value as a PyMySQL parameter for ``param_sql(column)``."""
    if value is None:
        return None
    family = column.family
    if isinstance(value, bool):
        return int(value)
    if family is Family.BIT and isinstance(value, bytes):
        return int.from_bytes(value, "big")
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            # Sessions run in UTC, so a TIMESTAMP column compares as its UTC wall clock.
            value = value.astimezone(UTC).replace(tzinfo=None)
        return value.isoformat(sep=" ", timespec="microseconds")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return _format_timedelta(value)
    return value


def _tuple(parts: Sequence[str]) -> str:
    return parts[0] if len(parts) == 1 else "(" + ", ".join(parts) + ")"


def key_columns_sql(columns: Sequence[Column]) -> str:
    return _tuple([c.quoted() for c in columns])


def key_params_sql(columns: Sequence[Column], collate: bool = False) -> str:
    return _tuple([param_sql(c, collate) for c in columns])


def key_params(columns: Sequence[Column], key: Key) -> list[Any]:
    if len(key) != len(columns):
        raise ValueError(f"key {key!r} has {len(key)} values for {len(columns)} key columns")
    return [param_value(c, v) for c, v in zip(columns, key, strict=True)]


def range_predicate(columns: Sequence[Column], start: Key | None, end: Key | None) -> tuple[str, list[Any]]:
    """``cols >= start AND cols < end`` as row-constructor comparisons; ``None`` ends omitted.

    For composite keys a redundant bound on the leading column is added: it lets the optimizer
    use an index range even where it does not do so for row constructors.
    """
    cols = key_columns_sql(columns)
    marks = key_params_sql(columns)
    lead = columns[0]
    parts: list[str] = []
    params: list[Any] = []
    if start is not None:
        if len(columns) > 1:
            parts.append(f"{lead.quoted()} >= {param_sql(lead)}")
            params.append(param_value(lead, start[0]))
        parts.append(f"{cols} >= {marks}")
        params.extend(key_params(columns, start))
    if end is not None:
        if len(columns) > 1:
            parts.append(f"{lead.quoted()} <= {param_sql(lead)}")
            params.append(param_value(lead, end[0]))
        parts.append(f"{cols} < {marks}")
        params.extend(key_params(columns, end))
    return (" AND ".join(parts) if parts else "TRUE"), params


def order_by(columns: Sequence[Column]) -> str:
    return ", ".join(c.quoted() for c in columns)
