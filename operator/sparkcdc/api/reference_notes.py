# ruff: noqa: E501  (Markdown table rows cannot be wrapped)
"""Sections of docs/reference.md that are about engine behaviour rather than one field: how rows
are identified in the sink when a table has no key, and which referential actions are followed.
Kept next to the models so the generated reference and the engine change together."""

from __future__ import annotations

__all__ = ["KEYS_AND_REFERENCES_MARKDOWN"]

KEYS_AND_REFERENCES_MARKDOWN = """
## Tables without a primary key

A table is split on its **chunk key** and its rows are identified in the sink by its **row key**
(the target's primary key). By default both are the primary key, else the narrowest unique
`NOT NULL` key. `spec.snapshot.chunkKeyColumns` may name any orderable columns (not ENUM, SET,
JSON or spatial), also of a table without any key, e.g. `{"inventory.products_no_pk": ["type"]}`:

| Chunk key | Row key in the sink | Guarantee |
|---|---|---|
| a unique `NOT NULL` key, or a prefix of the primary key | that key / the primary key | exact |
| other columns, table with a primary or unique `NOT NULL` key | chunk key, then that key's other columns | exact |
| other columns, no key, `sinkKeyColumns` set | chunk key, then `sinkKeyColumns` | exact if `sinkKeyColumns` identify a row at the source; rows sharing them are one row in the sink |
| other columns, no key, no `sinkKeyColumns` | chunk key, then every other column (full-row identity) | every distinct row exactly once; identical rows are one row in the sink |

The row key always starts with the chunk key, so a snapshot split is still rewritten as a key
range and its binlog window (DBLog's watermark merge) is reconciled by row key. A split that is
read again after a crash (Flink CDC's at-least-once case for a non-unique chunk key) therefore
replaces its range instead of adding its rows twice: the replica holds every source row, and no
row twice. What a non-unique identity gives up is multiplicity: with a full-row identity two
identical source rows are one sink row, and deleting one of them at the source deletes that
row from the sink (an update of one of them likewise moves the single sink row). Name
`sinkKeyColumns` that tell rows apart where that matters.

A full-row identity needs every column `NOT NULL` and comparable as a key (no FLOAT, DOUBLE,
JSON, spatial, TEXT or BLOB column); otherwise the table is refused with a message naming the
column and `spec.snapshot.sinkKeyColumns`. A table without a key and without `chunkKeyColumns`
is refused with a message naming both settings. `sinkKeyColumns` are used only for tables
without a primary or unique `NOT NULL` key and must be `NOT NULL`. A full-row identity keeps
the columns it had when a column is added later (the new column is not part of it).

## Referential actions

MySQL and MariaDB do not write cascaded foreign-key actions to the binlog: only the parent's
own DELETE or UPDATE is logged. sparkcdc reads the captured tables' foreign keys at the start of
the binlog phase (`information_schema.KEY_COLUMN_USAGE` and `SHOW CREATE TABLE`, which need only
SELECT) and follows, for parents and children that are both captured:

* `ON DELETE CASCADE`: a parent delete deletes the child rows whose foreign-key columns equal the
  parent's before image, and level by level the rows of grandchildren that referenced them;
* `ON DELETE SET NULL`: those child rows get NULL foreign-key columns;
* `ON UPDATE CASCADE` (and `ON UPDATE SET NULL`): a parent whose referenced columns change
  changes the children's foreign-key columns to the new values (NULL), and those of
  grandchildren whose foreign key covers the changed columns.

`RESTRICT` and `NO ACTION` need nothing: the source refuses the parent change while children
exist. The JDBC sinks (MySQL/MariaDB, PostgreSQL) run each cascade as a predicate write
(`DELETE FROM child WHERE (fk) IN (…)`, `UPDATE child SET fk = … WHERE …`, a grandchild reached
through a subquery on the child) at the parent event's place in the batch, and apply each batch
of such a pipeline in one transaction, so the replica never shows a child whose parent is gone.
That transaction also records the batch's end in the sink database's `sparkcdc_applied` table
(`pipeline`, the source server's ids, `through`): a batch replayed after a driver was killed
between the sink's commit and its checkpoint is cut to what the sink does not hold yet, because a
cascade replayed over the sink's later state would miss a grandchild that the replay writes again.
While cascades are followed the parallel catch-up is off (its ranges lose the order).

Named in a warning at the start of the binlog phase, and not followed:

* a captured child whose parent is not captured (capture the parent too);
* `ON DELETE SET DEFAULT` / `ON UPDATE SET DEFAULT` (InnoDB does not run them either);
* cycles, e.g. a table that references itself (an employee's manager);
* a foreign key that references only part of the columns another action changes or nulls;
* a table on a chain that is written to a merging route, or with transforms, metadata columns
  or soft deletes;
* a sink other than JDBC (Delta, changelog, console): their replicas keep the cascaded rows;
  the changelog records the parent's change only, as the binlog does.

Snapshot splits read the children as they are. A cascade in the binlog while the snapshot of a
table on its chain is still settling (before the table's last split high watermark) is not
followed there and is named in a warning; run `sparkcdc verify` and resnapshot that table if it
differs. A cascade that a source transaction runs while a child's split is being read can leave
that split with the child rows the cascade removed, for the same reason; tables with cascading
foreign keys are best snapshotted while their parents are quiet.
"""
