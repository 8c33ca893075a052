"""Column descriptions from ``information_schema.COLUMNS`` and the type families they fall in."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Family(str, Enum):
    """How a column's values are represented; one canonical form per family (architecture §3 rule 7)."""

    INTEGER = "integer"
    DECIMAL = "decimal"
    FLOAT = "float"  # 4-byte FLOAT
    DOUBLE = "double"
    BIT = "bit"
    YEAR = "year"
    DATE = "date"
    DATETIME = "datetime"
    TIMESTAMP = "timestamp"
    TIME = "time"
    STRING = "string"  # CHAR, VARCHAR, TEXT, and MariaDB's UUID / INET types
    ENUM = "enum"
    SET = "set"
    JSON = "json"
    BINARY = "binary"  # BINARY, VARBINARY, BLOB
    GEOMETRY = "geometry"


_INTEGER_BITS = {"tinyint": 8, "smallint": 16, "mediumint": 24, "int": 32, "integer": 32, "bigint": 64}
_GEOMETRY = {
    "geometry",
    "point",
    "linestring",
    "polygon",
    "multipoint",
    "multilinestring",
    "multipolygon",
    "geometrycollection",
    "geomcollection",
}
_BINARY = {"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob", "vector"}
_FAMILIES = {
    "decimal": Family.DECIMAL,
    "numeric": Family.DECIMAL,
    "float": Family.FLOAT,
    "double": Family.DOUBLE,
    "real": Family.DOUBLE,
    "double precision": Family.DOUBLE,
    "bit": Family.BIT,
    "year": Family.YEAR,
    "date": Family.DATE,
    "datetime": Family.DATETIME,
    "timestamp": Family.TIMESTAMP,
    "time": Family.TIME,
    "enum": Family.ENUM,
    "set": Family.SET,
    "json": Family.JSON,
}


def family_of(data_type: str) -> Family:
    name = data_type.lower()
    if name in _INTEGER_BITS:
        return Family.INTEGER
    if name in _GEOMETRY:
        return Family.GEOMETRY
    if name in _BINARY:
        return Family.BINARY
    return _FAMILIES.get(name, Family.STRING)


@dataclass(frozen=True)
class Column:
    """One source column, as ``information_schema.COLUMNS`` describes it.

    ``data_type`` is lower case (``bigint``, ``varchar``, ...); ``column_type`` is the full
    declaration (``bigint(20) unsigned``, ``enum('a','b')``). ``length`` is the character (or
    byte, for binary types) length; ``precision`` is also the bit count of ``BIT(n)``;
    ``members`` are the labels of an ENUM or SET in definition order.
    """

    name: str
    ordinal: int
    data_type: str
    column_type: str
    nullable: bool = True
    unsigned: bool = False
    precision: int | None = None
    scale: int | None = None
    datetime_precision: int | None = None
    length: int | None = None
    charset: str | None = None
    collation: str | None = None
    members: tuple[str, ...] = ()
    # The default as a MySQL expression usable after ``DEFAULT`` (None: none). Sinks create their
    # tables with it, so rows the binlog wrote before an ADD COLUMN read as on the source.
    default_sql: str | None = None
    # DATE/DATETIME/TIMESTAMP values as MySQL prints them, zero dates included (``0000-00-00``,
    # ``2024-00-10``): set only for MySQL/MariaDB targets, which can store them (zero_dates.py).
    zero_dates: bool = False

    @property
    def family(self) -> Family:
        return family_of(self.data_type)

    @property
    def integer_bits(self) -> int:
        """Storage bits of an integer type (TINYINT 8 ... BIGINT 64); 0 for other types."""
        return _INTEGER_BITS.get(self.data_type.lower(), 0)

    @property
    def bit_width(self) -> int:
        """``n`` of ``BIT(n)``."""
        return int(self.precision or 1)

    @property
    def is_exact_numeric(self) -> bool:
        return self.family in (Family.INTEGER, Family.DECIMAL)

    @property
    def is_text(self) -> bool:
        """Values compare by a collation (so only the database orders them exactly)."""
        return self.family in (Family.STRING, Family.ENUM, Family.SET, Family.JSON)

    def quoted(self) -> str:
        return quote_name(self.name)


def quote_name(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def default_sql(default: str | None, extra: str, is_mariadb: bool) -> str | None:
    """``information_schema.COLUMNS.COLUMN_DEFAULT`` as an expression usable after ``DEFAULT``.

    MariaDB (10.2.7+) reports defaults as SQL (``'abc'``, ``5``, ``NULL``, ``current_timestamp()``);
    MySQL reports a literal's bare value and marks expressions with ``DEFAULT_GENERATED``.
    """
    if default is None:
        return None
    if is_mariadb:
        return default
    if "DEFAULT_GENERATED" in extra.upper():
        return f"({default})"
    return "'" + default.replace("\\", "\\\\").replace("'", "''") + "'"
