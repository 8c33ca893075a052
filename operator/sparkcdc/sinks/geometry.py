"""Spatial values for the sinks that do not store MySQL's geometry format.

A canonical GEOMETRY value is MySQL's internal format: the SRID as 4 little-endian bytes, then the
WKB (types.py). MySQL/MariaDB targets store it as it is (their column refuses WKB without the SRID,
error 1416). The others get the same geometry with its SRID in a form they know:

* PostgreSQL: EWKB, the PostGIS extended WKB (the SRID flag ``0x20000000`` in the outer type word,
  then the SRID; no flag for SRID 0, as PostGIS writes it) — in a ``geometry`` column when the
  target database has the ``postgis`` extension, else in ``bytea``.
* Delta and the changelog: a struct ``{srid, wkb}`` (``wkb`` the plain OGC WKB).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa

from sparkcdc.mysql.columns import Family
from sparkcdc.mysql.schema import TableSchema

__all__ = [
    "GEOMETRY_STRUCT",
    "ewkb",
    "ewkb_array",
    "from_struct_array",
    "geometry_fields",
    "internal_format",
    "row_with_geometry_fields",
    "struct_array",
    "with_geometry_structs",
]

GEOMETRY_STRUCT = pa.struct([pa.field("srid", pa.int64()), pa.field("wkb", pa.binary())])
_SRID_FLAG = 0x20000000


def geometry_fields(value: bytes) -> tuple[int, bytes]:
    """``(srid, wkb)`` of a value in MySQL's internal format."""
    if len(value) < 5:
        raise ValueError(f"not a MySQL geometry value ({len(value)} bytes)")
    return int.from_bytes(value[:4], "little"), bytes(value[4:])


def internal_format(srid: int, wkb: bytes) -> bytes:
    return int(srid).to_bytes(4, "little") + bytes(wkb)


def ewkb(value: bytes) -> bytes:
    """PostGIS EWKB of a value in MySQL's internal format."""
    srid, wkb = geometry_fields(value)
    if srid == 0:
        return wkb
    order = "<" if wkb[0] == 1 else ">"
    (kind,) = struct.unpack(order + "I", wkb[1:5])
    return wkb[:1] + struct.pack(order + "II", kind | _SRID_FLAG, srid) + wkb[5:]


def _values(array: pa.Array | pa.ChunkedArray) -> Iterable[bytes | None]:
    values: list[bytes | None] = array.to_pylist()  # spatial columns are few: per value is fine
    return values


def ewkb_array(array: pa.Array | pa.ChunkedArray) -> pa.Array:
    return pa.array([None if v is None else ewkb(v) for v in _values(array)], pa.binary())


def struct_array(array: pa.Array | pa.ChunkedArray) -> pa.Array:
    """``{srid, wkb}`` structs of internal-format values (null stays null)."""
    rows = [
        None if v is None else dict(zip(("srid", "wkb"), geometry_fields(v), strict=True))
        for v in _values(array)
    ]
    return pa.array(rows, GEOMETRY_STRUCT)


def from_struct_array(array: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Internal-format values of ``{srid, wkb}`` structs (the inverse of ``struct_array``)."""
    rows = array.to_pylist()
    return pa.array([None if r is None else internal_format(r["srid"], r["wkb"]) for r in rows], pa.binary())


def _spatial(schema: TableSchema) -> list[str]:
    return [c.name for c in schema.columns if c.family is Family.GEOMETRY]


def with_geometry_structs(schema: TableSchema, data: pa.Table) -> pa.Table:
    """``data`` with its GEOMETRY columns as ``{srid, wkb}`` structs (the changelog's form)."""
    for name in _spatial(schema):
        if name in data.column_names:
            data = data.set_column(data.column_names.index(name), name, struct_array(data.column(name)))
    return data


def row_with_geometry_fields(schema: TableSchema, row: Mapping[str, Any]) -> dict[str, Any]:
    """A canonical row image with its GEOMETRY values as ``{"srid": …, "wkb": …}``."""
    out = dict(row)
    for name in _spatial(schema):
        value = out.get(name)
        if value is not None:
            out[name] = dict(zip(("srid", "wkb"), geometry_fields(value), strict=True))
    return out
