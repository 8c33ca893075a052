"""PostgreSQL sink: rows/s of one snapshot split written four ways, side by side in one run.

    .venv/bin/python benchmarks/postgres_sink.py [ROWS]

Starts a throwaway PostgreSQL (sparkcdc.testing.postgres), builds a split of ROWS (default
100,000) canonical rows of a 7-column table (bigint key, int, decimal, two varchars, DATETIME,
TIMESTAMP) and writes it, each inside one transaction on an empty table, with

* ``executemany``  one-row INSERT through psycopg's pipelined executemany, 1,000 rows a call
                   (the generic JDBC sink path);
* ``multi-row``    ``INSERT … VALUES (…), (…)`` of 1,000 rows a statement;
* ``copy rows``    ``COPY … FROM STDIN`` fed Python rows with psycopg's ``write_row``;
* ``copy arrow``   ``COPY … (FORMAT csv)`` fed CSV rendered by Arrow (``PostgresDialect.write_table``).

Prints rows/s and the ratio to ``executemany``; best of three runs each.
"""

from __future__ import annotations

import datetime as dt
import sys
import time
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pyarrow as pa

from sparkcdc.core.tables import TableId
from sparkcdc.mysql.columns import Column
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks.jdbc.postgres import PostgresDialect
from sparkcdc.testing.postgres import PostgresServer

BATCH = 1000


def _schema() -> TableSchema:
    def c(name: str, data_type: str, column_type: str, **kw: Any) -> Column:
        return Column(name=name, ordinal=0, data_type=data_type, column_type=column_type, **kw)

    columns = (
        c("id", "bigint", "bigint(20)", nullable=False),
        c("customer", "int", "int(11)"),
        c("amount", "decimal", "decimal(12,2)", precision=12, scale=2),
        c("status", "varchar", "varchar(20)", collation="utf8mb4_general_ci"),
        c("note", "varchar", "varchar(100)", collation="utf8mb4_general_ci"),
        c("created", "datetime", "datetime"),
        c("updated", "timestamp", "timestamp(3)", datetime_precision=3),
    )
    return TableSchema(TableId("bench", "orders"), columns, ("id",), ("id",), ("id",))


def _data(schema: TableSchema, rows: int) -> pa.Table:
    base = dt.datetime(2024, 1, 1)
    return pa.Table.from_pydict(
        {
            "id": list(range(rows)),
            "customer": [i % 9973 for i in range(rows)],
            "amount": [Decimal(i % 100000).scaleb(-2) for i in range(rows)],
            "status": [("new", "paid", "shipped", "Cancelled")[i % 4] for i in range(rows)],
            "note": [f'order {i} for customer {i % 9973}, "gift"' for i in range(rows)],
            "created": [base + dt.timedelta(seconds=i) for i in range(rows)],
            "updated": [
                (base + dt.timedelta(seconds=i, milliseconds=i % 1000)).replace(tzinfo=dt.timezone.utc)
                for i in range(rows)
            ],
        },
        schema=schema.arrow_schema(),
    )


def _rows(data: pa.Table) -> list[tuple[Any, ...]]:
    columns = [data.column(i).to_pylist() for i in range(data.num_columns)]
    return list(zip(*columns, strict=True))


def main(rows: int) -> None:
    schema = _schema()
    data = _data(schema, rows)
    names = ", ".join(f'"{n}"' for n in data.column_names)
    marks = "(" + ", ".join(["%s"] * data.num_columns) + ")"
    dialect = PostgresDialect()

    def executemany(cur: Any) -> None:
        sql = f"INSERT INTO orders ({names}) VALUES {marks}"
        adapted = [dialect.adapt_row(r) for r in _rows(data)]
        for i in range(0, len(adapted), BATCH):
            cur.executemany(sql, adapted[i : i + BATCH])

    def multi_row(cur: Any) -> None:
        adapted = [dialect.adapt_row(r) for r in _rows(data)]
        for i in range(0, len(adapted), BATCH):
            chunk = adapted[i : i + BATCH]
            cur.execute(
                f"INSERT INTO orders ({names}) VALUES " + ", ".join([marks] * len(chunk)),
                [v for r in chunk for v in r],
            )

    def copy_rows(cur: Any) -> None:
        with cur.copy(f"COPY orders ({names}) FROM STDIN") as copy:
            for row in _rows(data):
                copy.write_row(row)

    def copy_arrow(cur: Any) -> None:
        dialect.write_table(cur, schema, data)

    ways: dict[str, Callable[[Any], None]] = {
        "executemany": executemany,
        "multi-row": multi_row,
        "copy rows": copy_rows,
        "copy arrow": copy_arrow,
    }
    with PostgresServer() as pg:
        conn = pg.connect(autocommit=False)
        best: dict[str, float] = {}
        for _ in range(3):
            for name, write in ways.items():
                with conn.cursor() as cur:
                    cur.execute("DROP TABLE IF EXISTS orders")
                    cur.execute(dialect.create_table_sql(schema))
                conn.commit()
                start = time.perf_counter()
                with conn.cursor() as cur:
                    write(cur)
                conn.commit()
                elapsed = time.perf_counter() - start
                assert pg.execute("SELECT count(*) FROM orders")[0][0] == rows
                best[name] = min(best.get(name, elapsed), elapsed)
        conn.close()
    base = rows / best["executemany"]
    print(f"{rows:,} rows x {data.num_columns} columns, one transaction each, best of 3")
    for name, elapsed in best.items():
        rate = rows / elapsed
        print(f"  {name:<12} {rate:>12,.0f} rows/s   x{rate / base:.1f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
