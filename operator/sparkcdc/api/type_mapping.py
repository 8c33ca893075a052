# ruff: noqa: E501  (Markdown table rows cannot be wrapped)
"""The per-sink type mapping section of docs/reference.md.

Hand-written (the models do not know it) but kept here so the generated reference carries it: the
reference is regenerated from the models and a section edited into docs/reference.md would be lost.
The code it describes: sparkcdc.mysql.types and zero_dates (canonical values), sinks.postgres
(``pg_type``), sinks.spark_types (Delta), sinks.geometry (spatial values), sinks.changelog.
"""

from __future__ import annotations

__all__ = ["TYPE_MAPPING_MARKDOWN"]

TYPE_MAPPING_MARKDOWN = """## Type mapping per sink

How a source column arrives in each sink. MySQL/MariaDB targets reuse the source's column
declaration verbatim (type, charset, collation, `NOT NULL`, default); the other sinks map types:

| MySQL | MySQL/MariaDB target | PostgreSQL target | Delta | changelog (JSON) |
|---|---|---|---|---|
| TINYINT..BIGINT | same | smallint/integer/bigint (unsigned one size up; BIGINT UNSIGNED numeric(20,0)) | BYTE..LONG (unsigned one size up; BIGINT UNSIGNED DECIMAL(20,0)) | number |
| DECIMAL(p,s) | same | numeric(p,s) | DECIMAL(p,s); p > 38: STRING (plain notation) | string |
| FLOAT / DOUBLE | same | real / double precision | FLOAT / DOUBLE | number |
| BIT(1) / BIT(n) | same | boolean / bytea | BOOLEAN / BINARY | bool / base64 |
| YEAR | same | smallint | SHORT | number |
| DATE | same, zero dates kept | date | DATE | `YYYY-MM-DD` |
| DATETIME(p) | same, zero dates kept | timestamp(p) without time zone | TIMESTAMP_NTZ | ISO text |
| TIMESTAMP(p) | same, zero TIMESTAMP kept | timestamp(p) with time zone | TIMESTAMP | ISO text, UTC |
| TIME(p) | same | interval | LONG (microseconds) | `[-]hh:mm:ss.ffffff` |
| CHAR/VARCHAR/TEXT, ENUM, SET, JSON | same | text (JSON as MySQL prints it) | STRING | string |
| BINARY/VARBINARY/BLOB | same | bytea | BINARY | base64 |
| GEOMETRY, POINT, LINESTRING, POLYGON, MULTI*, GEOMETRYCOLLECTION | same (SRID kept) | `geometry` with PostGIS, else bytea; EWKB with the SRID | STRUCT<srid: LONG, wkb: BINARY> | `{"srid": n, "wkb": base64 WKB}` |

**Zero and partly-zero dates** (`0000-00-00`, `2020-00-10`, `2020-05-00`, `0000-01-01`,
`0000-00-00 00:00:00`, the zero TIMESTAMP). A MySQL/MariaDB target stores them as the source does:
the sink session drops `NO_ZERO_DATE` and `NO_ZERO_IN_DATE` from its `sql_mode`, and a `NOT NULL`
date column stays `NOT NULL`. PostgreSQL, Delta and the changelog have no such values: they get
NULL, so a `NOT NULL` source DATE/DATETIME/TIMESTAMP column outside the key is NULL-able there
(every Delta column is NULL-able). The snapshot and the binlog give the same value for a row
(architecture §3 rule 7). Key columns keep the canonical date form in every sink: a zero date in a key
column reads as NULL. Tables streamed to a MySQL/MariaDB target with zero-date-capable columns
are caught up by the Python binlog decoder, not the Go one.

**Spatial values** keep their SRID everywhere. In MySQL/MariaDB they are the column's own format
(SRID then WKB). In PostgreSQL they are EWKB (the PostGIS extended WKB; no SRID flag for SRID 0):
in a `geometry` column when the target database has the `postgis` extension when the table is
created, else in a `bytea` column (`ST_GeomFromEWKB(col)` reads it). `sparkcdc verify` compares
the WKB of spatial values, not their SRID.
"""
