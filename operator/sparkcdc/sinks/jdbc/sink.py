"""JDBC-style sink into MySQL/MariaDB or PostgreSQL.

A snapshot split is one transaction: delete the split's key range, insert the split's rows.
Re-running the split after a crash therefore replaces whatever an earlier attempt wrote and
also removes rows the source deleted meanwhile (architecture §3 rule 3). A binlog batch is one
transaction of deletes then upserts of last images, so replaying it converges (rule 5); on MySQL
targets where it is equivalent the upserts are ``INSERT … ON DUPLICATE KEY UPDATE`` instead of
delete + insert (MySqlDialect.can_upsert).

A configuration with a ``fence`` (the driver's pipeline, owner and epoch) checks the sink's fence
row first in each of those transactions, so a superseded driver cannot write (sinks/jdbc/fence.py).
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import pyarrow as pa

from sparkcdc.core.cascades import Cascade
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.splits import SnapshotSplit
from sparkcdc.core.table_errors import DataError, classify
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks.base import ColumnChanges, Sink, SinkError, TableChanges, TableDataError
from sparkcdc.sinks.jdbc.applied import ensure_applied_table, read_applied, write_applied
from sparkcdc.sinks.jdbc.bulk_load import BulkLoader
from sparkcdc.sinks.jdbc.cascade_sql import cascade_statements
from sparkcdc.sinks.jdbc.config import JdbcSinkConfig
from sparkcdc.sinks.jdbc.dialects import Dialect, Load, dialect_for
from sparkcdc.sinks.jdbc.evolution import (
    alter_statements,
    existing_columns,
    pg_column_types,
    truncate_statement,
)
from sparkcdc.sinks.jdbc.fence import check_fence, claim_fence, ensure_fence_table
from sparkcdc.sinks.jdbc.sql import key_in_list_predicate
from sparkcdc.sinks.jdbc.table_follow import drop_statement, rename_statements


class JdbcSink(Sink):
    def __init__(self, config: JdbcSinkConfig) -> None:
        self._config = config
        self._dialect: Dialect = dialect_for(config.scheme, config.batch_rows)
        self._conn = self._dialect.connect(config)
        self._shared: Any = None  # the open cursor of batch_transaction, if any
        self._statement = ""  # what the open transaction runs now, for TableDataError messages
        # Snapshot splits into MySQL/MariaDB by LOAD DATA where it is exact (bulk_load.py).
        bulk = config.bulk_load and config.scheme in ("mysql", "mariadb")
        self._bulk = BulkLoader(self._dialect.quote, config.describe()) if bulk else None

    def prepare(self, schemas: Sequence[TableSchema]) -> None:
        with self._transaction() as cur:
            for schema in schemas:
                if self._config.create_tables:
                    cur.execute(self._dialect.create_table_sql(schema))
                elif not self._dialect.table_exists(cur, schema.sink_name):
                    raise SinkError(
                        f"target table {schema.sink_name} for {schema.table} does not exist in "
                        f"{self._config.describe()}; create it or set spec.sink.createTables: true"
                    )

    def write_split(
        self, schema: TableSchema, split: SnapshotSplit, data: pa.Table, hw: BinlogOffset
    ) -> None:
        # Tasks writing adjacent ranges at once lock each other's boundary gaps (next-key locks of
        # the DELETE; on an empty table every range shares one gap), so deadlocks are expected;
        # the transaction is redone, as InnoDB advises, after about as long as the failed attempt
        # took: the winner's transaction is as large, and tasks that start in step (threads of
        # one driver) would otherwise collide again at every attempt.
        for attempt in range(1, _WRITE_ATTEMPTS + 1):
            began = time.monotonic()
            try:
                with self._transaction(schema, fenced=True) as cur:
                    self._statement = f"DELETE of split {split.split_id}'s key range"
                    self._dialect.delete_range(cur, schema, split.start, split.end)
                    self._statement = f"INSERT of split {split.split_id}'s rows"
                    self._write_split_rows(cur, schema, data)
                return
            except SinkError as err:
                if attempt == _WRITE_ATTEMPTS or not _is_write_conflict(err.__cause__):
                    raise
                time.sleep(
                    random.uniform(0.5, 1.5) * (time.monotonic() - began)
                    + random.uniform(0.01, 0.05) * attempt
                )

    def _write_split_rows(self, cur: Any, schema: TableSchema, data: pa.Table) -> None:
        if self._bulk is None:
            self._dialect.write_table(cur, schema, data)
        else:
            self._bulk.write(cur, schema, data, lambda: self._dialect.write_table(cur, schema, data))

    def _replacing(self, cur: Any, schema: TableSchema) -> Load | None:
        """Upserts by ``LOAD DATA … REPLACE`` where splits load so: where an upsert is exactly
        delete + insert (``can_upsert``), so is ``REPLACE``, for less of the target's CPU."""
        bulk = self._bulk
        if bulk is None:
            return None
        return lambda data, insert: bulk.write(cur, schema, data, insert, replace=True)

    def apply_changes(self, schema: TableSchema, changes: TableChanges) -> None:
        target = self._dialect.quote(schema.sink_name)
        key = schema.row_key
        with self._transaction(schema, fenced=True) as cur:
            # Where an upsert on the row key is exactly delete + insert (dialects.can_upsert), the
            # upserted keys need no DELETE: one statement per rows instead of two, and no gap locks.
            upsert = bool(changes.upserts) and self._dialect.can_upsert(cur, schema)
            doomed = list(changes.deletes) + ([] if upsert else list(changes.upserts))
            self._statement = "DELETE of a binlog batch's rows"
            for chunk in _chunks(doomed, self._config.batch_rows):
                pred = key_in_list_predicate(key, len(chunk), self._dialect.quote)
                cur.execute(f"DELETE FROM {target} WHERE {pred}", [v for k in chunk for v in k])
            self._statement = f"{'upsert' if upsert else 'INSERT'} of a binlog batch's row images"
            load = getattr(changes.upserts, "load_text", None) if upsert else None
            if load is not None and self._bulk is not None:
                names = [c.name for c in schema.columns]
                insert = lambda: self._dialect.upsert_rows(cur, schema, changes.upserts)  # noqa: E731
                self._bulk.write_text(cur, schema, names, load, insert)
            elif upsert:
                self._dialect.upsert_rows(cur, schema, changes.upserts, self._replacing(cur, schema))
            elif changes.upserts:
                names = [c.name for c in schema.columns]
                rows = [tuple(row.get(n) for n in names) for row in changes.upserts.values()]
                self._dialect.write_rows(cur, schema, names, rows)

    @property
    def reads_load_text(self) -> bool:
        """Whether binlog upserts given as load text (core/image_columns.py) may be loaded as they
        are: the target takes ``LOAD DATA`` (or has not been asked yet)."""
        return self._bulk is not None and self._bulk.enabled is not False

    @contextmanager
    def batch_transaction(self) -> Iterator[None]:
        """Run every write of the block in one transaction (a binlog batch with referential
        actions, so the replica never shows a child whose parent is gone)."""
        with self._transaction(fenced=True) as cur:
            self._shared = cur
            try:
                yield
            finally:
                self._shared = None

    def track_applied(self) -> None:
        """Keep how far the binlog batches are (sinks/jdbc/applied.py), for a pipeline whose
        batches are written whole by ``batch_transaction``; in a transaction of its own."""
        if self._config.fence is not None:
            with self._transaction() as cur:
                ensure_applied_table(cur, self._dialect)

    def applied_through(self) -> tuple[str, str] | None:
        """In ``batch_transaction``: the (source, offset) the batches were last written through."""
        fence = self._config.fence
        if fence is None or self._shared is None:
            return None
        return read_applied(self._shared, self._dialect, fence.pipeline)

    def mark_applied(self, source: str, through: str) -> None:
        """In ``batch_transaction``: the batch being written ends at ``through`` of ``source``."""
        fence = self._config.fence
        if fence is not None and self._shared is not None:
            write_applied(self._shared, self._dialect, fence.pipeline, source, through)

    def apply_cascades(self, cascades: Sequence[Cascade], names: Mapping[TableId, str]) -> None:
        """Run referential actions (core/cascades.py) as predicate writes; ``names`` maps each
        table a cascade reads or writes to its target table."""
        statements = cascade_statements(cascades, names, self._dialect.quote, self._config.batch_rows)
        with self._transaction(fenced=True) as cur:
            for sql, params in statements:
                cur.execute(sql, params)

    def evolve_table(self, schema: TableSchema, changes: ColumnChanges) -> list[str]:
        """Follow a source column change (sinks/jdbc/evolution.py); returns the statements run.

        The fence check is atomic with the change on PostgreSQL only: MySQL commits before DDL."""
        scheme = self._config.scheme
        with self._transaction(schema, fenced=True) as cur:
            existing = existing_columns(cur, scheme, schema.sink_name)
            pg_types = None if scheme in ("mysql", "mariadb") else pg_column_types(cur, schema.sink_name)
            statements = alter_statements(scheme, self._dialect.quote, schema, existing, changes, pg_types)
            for statement in statements:
                cur.execute(statement)
        return statements

    def truncate_table(self, schema: TableSchema, offset: BinlogOffset, statement: str) -> list[str]:
        """Follow a source TRUNCATE in the fenced transaction order (sinks/jdbc/evolution.py)."""
        sql, params = truncate_statement(self._config.scheme, self._dialect.quote, schema)
        with self._transaction(schema, fenced=True) as cur:
            self._statement = f"emptying for {statement!r}"
            cur.execute(sql, params)
        return [sql]

    def rename_table(
        self, old: TableSchema, new: TableSchema, offset: BinlogOffset, statement: str
    ) -> list[str]:
        """Follow a source table rename in the target's name (sinks/jdbc/table_follow.py); like
        ``evolve_table``, the fence check is atomic with it on PostgreSQL only."""
        with self._transaction(old, fenced=True) as cur:
            exists = lambda name: self._dialect.table_exists(cur, name)  # noqa: E731
            statements = rename_statements(self._config.scheme, self._dialect.quote, exists, cur, old, new)
            for sql in statements:
                cur.execute(sql)
        return statements

    def drop_table(self, schema: TableSchema, drop: bool, offset: BinlogOffset, statement: str) -> list[str]:
        """Follow a source table drop: the target stays, or goes with ``drop`` (table_follow.py)."""
        if not drop:
            return []
        sql, params = drop_statement(self._dialect.quote, schema)
        with self._transaction(schema, fenced=True) as cur:
            cur.execute(sql, params)
        return [sql]

    def claim_fence(self) -> None:
        """Raise the fence row to this sink's fence (the starting driver's claim), retrying lock
        conflicts: the claim waits for every transaction of the previous driver still open."""
        fence = self._config.fence
        if fence is None:
            return
        with self._transaction() as cur:
            ensure_fence_table(cur, self._dialect)
        for attempt in range(1, _CLAIM_ATTEMPTS + 1):
            try:
                with self._transaction() as cur:
                    claim_fence(cur, self._dialect, fence, self._config.describe())
                return
            except SinkError as err:
                if attempt == _CLAIM_ATTEMPTS or not _is_lock_conflict(err.__cause__):
                    raise
                time.sleep(random.uniform(0.01, 0.05) * attempt)

    @contextmanager
    def _transaction(self, schema: TableSchema | None = None, *, fenced: bool = False) -> Iterator[Any]:
        if self._shared is not None:
            yield from self._in_shared(schema)
            return
        cur = self._conn.cursor()
        try:
            self._dialect.begin(cur)
            if fenced and self._config.fence is not None:
                check_fence(cur, self._dialect, self._config.fence, self._config.describe())
            yield cur
            self._conn.commit()
        except SinkError:
            self._conn.rollback()
            raise
        except Exception as err:
            self._rollback_quietly()
            raise self._error(err, schema) from err
        finally:
            cur.close()
            self._statement = ""

    def _in_shared(self, schema: TableSchema | None) -> Iterator[Any]:
        # Part of batch_transaction: its owner commits or rolls back the whole.
        try:
            yield self._shared
        except SinkError:
            raise
        except Exception as err:
            raise self._error(err, schema) from err

    def _error(self, err: Exception, schema: TableSchema | None) -> SinkError:
        """A ``TableDataError`` when ``err`` is about ``schema``'s rows (core/table_errors.py),
        else the ``SinkError`` that stops the run."""
        data = _data_error(err) if schema is not None and self._statement else None
        if schema is not None and data is not None:
            return TableDataError(
                f"the sink {self._config.describe()} refused the {self._statement} into "
                f"{schema.sink_name}: {data.describe()}",
                schema.table,
                data,
                self._statement,
            )
        where = f" writing {schema.table}" if schema is not None else ""
        return SinkError(
            f"the sink {self._config.describe()} failed{where}: {self._dialect.describe_error(err)}"
        )

    def _rollback_quietly(self) -> None:
        # The connection may already be gone; the write is undone either way.
        with contextlib.suppress(Exception):
            self._conn.rollback()

    def close(self) -> None:
        # Closing a broken connection must not hide the error that broke it.
        with contextlib.suppress(Exception):
            self._conn.close()


_WRITE_ATTEMPTS = 8
# A claim waits for the previous driver's open transactions, one lock wait timeout per attempt.
_CLAIM_ATTEMPTS = 20


def _mysql_code(err: BaseException | None) -> object:
    args: tuple[Any, ...] = getattr(err, "args", ())
    return args[0] if args else None


def _data_error(err: BaseException) -> DataError | None:
    """The data error ``err`` is (a MySQL error number, or a PostgreSQL SQLSTATE), if any."""
    args: tuple[Any, ...] = getattr(err, "args", ())
    if len(args) >= 2 and isinstance(args[0], int):
        return classify(args[0], None, str(args[1]))
    state = getattr(err, "sqlstate", None)
    if isinstance(state, str):
        diag = getattr(err, "diag", None)
        text = getattr(diag, "message_primary", None) or str(err)
        return classify(None, state, str(text), getattr(diag, "column_name", None))
    return None


def _is_lock_conflict(err: BaseException | None) -> bool:
    """A deadlock or lock wait timeout (MySQL 1213/1205, SQLSTATE 40P01/40001): retry the transaction."""
    state = getattr(err, "sqlstate", None) or getattr(err, "pgcode", None)
    return _mysql_code(err) in (1205, 1213) or state in ("40001", "40P01")


def _is_write_conflict(err: BaseException | None) -> bool:
    """A lock conflict, or a duplicate key: another attempt of the same split (a zombie task)
    committed the range after this transaction looked whether it held rows (dialects.py); redone,
    the transaction sees them and deletes them first."""
    return _is_lock_conflict(err) or _mysql_code(err) == 1062


def _chunks(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for i in range(0, len(items), max(1, size)):
        yield items[i : i + size]
