"""The Go decoder following the live stream (mysql/binlog/follow.py) against python-mysql-replication.

Followed in small batches, the type table's changes (every family but GEOMETRY; key changes,
deletes) absorbed batch after batch must equal the Python decoder's reduction of the same stretch,
value for value, and the batches must end at increasing transaction boundaries up to the stretch's
end. A DDL statement comes as a statement to judge, between the batches before and after it; rows
the decoder was not given the definition of stop it at the last boundary before them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import cast

from harness.decoder import SMALL, follow_items, source_schema, spelled_type_table_stretch
from harness.mariadb import binlog_offset
from harness.type_table import create_without_geometry, write_changes_without_geometry
from harness.waiting import wait_until
from sparkcdc.core.catchup import CatchupRange, absorb
from sparkcdc.core.charsets import decode_mysql_latin1
from sparkcdc.core.event_filter import BinlogSplitFilter
from sparkcdc.core.logged_columns import LoggedColumns
from sparkcdc.core.merge import BackfillChanges
from sparkcdc.core.microbatch import ChangelogRecord, changelog_records
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.rendered_log import RenderedLog
from sparkcdc.core.tables import TableId
from sparkcdc.mysql.binlog.follow import NativeBatch, NativeDdl, NativeStopped
from sparkcdc.mysql.binlog.native import decode_range
from sparkcdc.mysql.binlog.reader import read_changes
from sparkcdc.mysql.binlog.rendered import render_spec
from sparkcdc.mysql.connection import SourceConfig
from sparkcdc.mysql.schema import TableSchema
from sparkcdc.sinks.changelog import ChangelogSink
from sparkcdc.sinks.changelog_columns import logged_text
from sparkcdc.spark.catchup_tasks import RangeContext, read_range
from sparkcdc.testing.mariadb import MariaDBServer


def _type_table_stretch(
    mariadb: MariaDBServer, source_config: SourceConfig, db: str
) -> tuple[SourceConfig, TableSchema, BinlogOffset, BinlogOffset]:
    """The type table's changes (every family but GEOMETRY): the stretch of binlog they fill."""
    cfg = replace(source_config, tls_mode="disabled")
    table = f"`{db}`.`types`"
    create_without_geometry(mariadb, table)
    start = binlog_offset(mariadb)
    write_changes_without_geometry(mariadb, table)
    return cfg, source_schema(cfg, TableId(db, "types")), start, binlog_offset(mariadb)


def _assert_same_records(ours: Sequence[ChangelogRecord], python: Sequence[ChangelogRecord]) -> None:
    """The same records in the same order: operation, place, time, and each canonical value."""
    for mine, theirs in zip(ours, python, strict=True):
        place = (theirs.op, theirs.offset, theirs.index, theirs.ts_ms)
        assert (mine.op, mine.offset, mine.index, mine.ts_ms) == place
        diff = {c: (v, mine.data[c]) for c, v in theirs.data.items() if mine.data[c] != v}
        assert diff == {} and list(mine.data) == list(theirs.data), f"{theirs.op} at {theirs.offset}"


def test_followed_batches_reduce_the_type_table_like_python(
    mariadb: MariaDBServer, source_config: SourceConfig, fresh_db: str, binary: Path
) -> None:
    cfg, schema, start, stop = _type_table_stretch(mariadb, source_config, fresh_db)

    items = follow_items(binary, cfg, schema, start, stop)
    batches = [i for i in items if isinstance(i, NativeBatch)]
    assert len(batches) == len(items) and len(batches) > 1, items
    ends = [b.end for b in batches]
    assert ends == sorted(set(ends)) and ends[-1] == stop
    assert all(b.newest_ms > 0 for b in batches if b.events)
    followed = BackfillChanges()
    for batch in batches:
        absorb(followed, batch.changes.get(schema.table, BackfillChanges()))

    event_filter = BinlogSplitFilter({}, {}, streaming=[schema.table])
    context = RangeContext(cfg, {schema.table: schema}, event_filter, "mariadb", None)
    python = read_range(context, CatchupRange(0, start, stop), 4302).changes[schema.table]
    assert sum(b.events for b in batches) == read_range(context, CatchupRange(0, start, stop), 4303).events
    assert followed.deletes == python.deletes and (10121,) in followed.deletes
    assert followed.upserts.keys() == python.upserts.keys()
    for key, row in python.upserts.items():
        diff = {c: (v, followed.upserts[key][c]) for c, v in row.items() if followed.upserts[key][c] != v}
        assert diff == {}, f"row {key}: python vs the followed Go batches"


def test_followed_changes_are_the_python_readers_changelog_records(
    mariadb: MariaDBServer, source_config: SourceConfig, fresh_db: str, binary: Path
) -> None:
    """Log mode (binlogdec/changelog.go), for the changelog sink: every change of the type table's
    stretch in order — inserts, updates, key changes, deletes, multi-row events — as exactly the
    records python-mysql-replication's events make (op, canonical image, offset, row index, time)."""
    cfg, schema, start, stop = _type_table_stretch(mariadb, source_config, fresh_db)

    items = follow_items(binary, cfg, schema, start, stop, replace(SMALL, changes=True))
    batches = [i for i in items if isinstance(i, NativeBatch)]
    assert len(batches) == len(items) > 1 and all(not b.changes for b in batches), items
    followed = [r for b in batches for r in b.changelog.get(schema.table, ())]
    events = list(read_changes(cfg, 4305, start, stop, {schema.table: schema}))
    python = [r for e in events for r in changelog_records(e)]
    assert {r.op for r in python} == {"+I", "-U", "+U", "-D"} and len(followed) == len(python)
    assert sum(b.events for b in batches) == len(events)
    _assert_same_records(followed, python)
    # The changelog sink renders the batches' columns (sinks/changelog_columns.py) into the lines
    # it renders the Python reader's records into, byte for byte.
    logged = [cast(LoggedColumns, b.changelog[schema.table]) for b in batches if schema.table in b.changelog]
    assert all(isinstance(records, LoggedColumns) for records in logged)
    columns = b"".join(bytes(c) for records in logged for c in logged_text(schema, records))
    table = str(schema.table)
    assert columns == "".join(ChangelogSink._render(table, r) + "\n" for r in python).encode()


def test_rendered_lines_are_the_python_readers_lines(
    mariadb: MariaDBServer, source_config: SourceConfig, fresh_db: str, binary: Path
) -> None:
    """Rendered log mode (binlogdec/linelog.go): for a table of the families the decoder spells,
    its lines are the changelog sink's lines of the Python reader's records, byte for byte, and
    the records parsed back from them are those records."""
    cfg = replace(source_config, tls_mode="disabled")
    table = f"`{fresh_db}`.`types`"
    tricky = 'q"uote \\ back\nslash\t\x01\x1f\x7f \u2028 <&>'
    # MySQL's latin1 is Windows-1252 (0x80 to 0x9F are not ISO latin-1's characters), its five
    # unassigned bytes C1 controls (core/charsets.py).
    start, stop = spelled_type_table_stretch(mariadb, table, tricky, "41808A9FA0FF09818D8F909D")
    schema = source_schema(cfg, TableId(fresh_db, "types"))
    assert render_spec(schema) is not None, schema.columns

    items = follow_items(binary, cfg, schema, start, stop, replace(SMALL, changes=True, lines=True))
    batches = [i for i in items if isinstance(i, NativeBatch)]
    assert len(batches) == len(items) > 1, items
    logs = [b.changelog[schema.table] for b in batches if schema.table in b.changelog]
    assert logs and all(isinstance(log, RenderedLog) for log in logs), logs
    events = list(read_changes(cfg, 4306, start, stop, {schema.table: schema}))
    python = [r for e in events for r in changelog_records(e)]
    assert {r.op for r in python} == {"+I", "-U", "+U", "-D"}
    text = b"".join(cast(RenderedLog, log).text for log in logs)
    assert text == "".join(ChangelogSink._render(str(schema.table), r) + "\n" for r in python).encode()
    parsed = [r for log in logs for r in log]
    assert len(parsed) == len(python) == sum(map(len, logs))
    _assert_same_records(parsed, python)


def test_every_latin1_byte_is_read_as_the_server_reads_it(
    mariadb: MariaDBServer, source_config: SourceConfig, fresh_db: str, binary: Path
) -> None:
    """The server's own reading of a latin1 column (what a snapshot and verify read) is what the
    Python reader, the Go decoder's values (the JDBC path), its logged columns and its rendered
    lines make of the binlog's bytes, for every byte: Python's cp1252 has no character for five."""
    cfg = replace(source_config, tls_mode="disabled")
    table = f"`{fresh_db}`.`lat`"
    mariadb.execute(
        f"CREATE TABLE {table} (id INT PRIMARY KEY, v VARCHAR(300) CHARACTER SET latin1,"
        " t TEXT CHARACTER SET latin1)"
    )
    every, backwards = bytes(range(256)), bytes(range(255, -1, -1))
    start = binlog_offset(mariadb)
    mariadb.execute(
        f"INSERT INTO {table} VALUES (1, CONVERT(UNHEX('{every.hex()}') USING latin1),"
        f" CONVERT(UNHEX('{backwards.hex()}') USING latin1))"
    )
    stop = binlog_offset(mariadb)
    server = {
        "id": 1,
        "v": mariadb.execute(f"SELECT v FROM {table}")[0][0],
        "t": decode_mysql_latin1(backwards),
    }
    assert (
        server["v"] == decode_mysql_latin1(every)
        and mariadb.execute(f"SELECT t FROM {table}")[0][0] == server["t"]
    )
    schema = source_schema(cfg, TableId(fresh_db, "lat"))
    assert render_spec(schema) is not None, schema.columns

    python = [
        r.data
        for e in read_changes(cfg, 4312, start, stop, {schema.table: schema})
        for r in changelog_records(e)
    ]
    assert python == [server]
    batches = [i for i in follow_items(binary, cfg, schema, start, stop) if isinstance(i, NativeBatch)]
    assert [dict(b.changes[schema.table].upserts[(1,)]) for b in batches if schema.table in b.changes] == [
        server
    ]
    for settings in (replace(SMALL, changes=True), replace(SMALL, changes=True, lines=True)):
        items = follow_items(binary, cfg, schema, start, stop, settings)
        logged = [
            r.data for i in items if isinstance(i, NativeBatch) for r in i.changelog.get(schema.table, ())
        ]
        assert logged == [server], settings


def test_ddl_is_answered_for_judging_and_unknown_rows_stop_the_decoder(
    mariadb: MariaDBServer, source_config: SourceConfig, fresh_db: str, binary: Path
) -> None:
    cfg = replace(source_config, tls_mode="disabled")
    table = f"`{fresh_db}`.`t`"
    mariadb.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY, v VARCHAR(10))")
    schema = source_schema(cfg, TableId(fresh_db, "t"))  # two columns, as the follower is given it
    start = binlog_offset(mariadb)
    mariadb.execute(f"INSERT INTO {table} VALUES (1, 'a'), (2, 'b')")
    before_ddl = binlog_offset(mariadb)
    mariadb.execute(f"ALTER TABLE {table} ADD COLUMN w INT")
    after_ddl = binlog_offset(mariadb)
    mariadb.execute(f"INSERT INTO {table} VALUES (3, 'c', 3)")
    stop = binlog_offset(mariadb)

    items = follow_items(binary, cfg, schema, start, stop)
    assert [type(i) for i in items] == [NativeBatch, NativeDdl, NativeBatch, NativeStopped], items
    batch, ddl, past, stopped = items
    assert isinstance(batch, NativeBatch) and batch.end == before_ddl
    assert batch.changes[schema.table].upserts == {(1,): {"id": 1, "v": "a"}, (2,): {"id": 2, "v": "b"}}
    assert isinstance(ddl, NativeDdl) and ddl.at == before_ddl and ddl.statement.offset == after_ddl
    assert "ADD COLUMN w" in ddl.statement.query
    # A batch without rows past the statement, where a caller it does not concern checkpoints.
    assert isinstance(past, NativeBatch) and past.end == after_ddl and past.events == 0
    # The row with three columns: the caller reads on from after the DDL with Python.
    assert isinstance(stopped, NativeStopped) and stopped.end == after_ddl and "columns" in stopped.why


def test_every_end_carries_the_servers_gtid_position_there(
    mariadb: MariaDBServer, source_config: SourceConfig, fresh_db: str, binary: Path
) -> None:
    """Given the start's GTID position, the decoder keeps it along the stream (binlogdec/gtid.go):
    each batch's end, a DDL's place and its end carry what BINLOG_GTID_POS says there, a second
    replication domain included; without it, no end claims one (the caller asks the server)."""
    cfg = replace(source_config, tls_mode="disabled")
    table = f"`{fresh_db}`.`t`"
    mariadb.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY, v VARCHAR(10))")
    schema = source_schema(cfg, TableId(fresh_db, "t"))
    start = binlog_offset(mariadb)
    for i in range(1, 40):
        # Every fifth transaction alternately in domain 7 (the harness shares one connection).
        mariadb.execute(f"SET SESSION gtid_domain_id = {7 if i % 10 == 5 else 0}")
        mariadb.execute(f"INSERT INTO {table} VALUES ({i}, 'v{i}')")
    mariadb.execute("SET SESSION gtid_domain_id = 0")
    mariadb.execute(f"ALTER TABLE {table} MODIFY v VARCHAR(10)")  # the same columns: read on
    mariadb.execute(f"INSERT INTO {table} VALUES (100, 'last')")
    stop = binlog_offset(mariadb)

    def gtid_pos(offset: BinlogOffset) -> str:
        found = mariadb.execute("SELECT BINLOG_GTID_POS(%s, %s)", (offset.file, offset.pos))[0][0]
        return ",".join(sorted(str(found).split(","), key=lambda part: int(part.split("-")[0])))

    known = replace(start, gtid_set=gtid_pos(start))
    items = follow_items(binary, cfg, schema, known, stop)
    assert any(isinstance(i, NativeDdl) for i in items) and isinstance(items[-1], NativeBatch), items
    ends = [i.end for i in items if isinstance(i, NativeBatch)]
    ends += [o for i in items if isinstance(i, NativeDdl) for o in (i.at, i.statement.offset)]
    assert ends and all(o.gtid_set == gtid_pos(o) for o in ends), ends
    assert "7-" in ends[-1].gtid_set  # the second domain's transactions are in it

    unknown = follow_items(binary, cfg, schema, start, stop)
    assert all(i.end.gtid_set == "" for i in unknown if isinstance(i, NativeBatch)), unknown


def test_rows_of_another_definition_of_the_same_width_are_refused(
    mariadb: MariaDBServer, source_config: SourceConfig, fresh_db: str, binary: Path
) -> None:
    """A restart after ``DROP n, ADD c`` starts with the new definition; the rows before the DDL
    have as many columns but others: decoding them with it would put n's values into c."""
    cfg = replace(source_config, tls_mode="disabled")
    table = f"`{fresh_db}`.`t`"
    mariadb.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY, v VARCHAR(10), n INT)")
    start = binlog_offset(mariadb)
    mariadb.execute(f"INSERT INTO {table} VALUES (1, 'a', 10)")
    before_ddl = binlog_offset(mariadb)
    mariadb.execute(f"ALTER TABLE {table} DROP COLUMN n, ADD COLUMN c INT")
    stop = binlog_offset(mariadb)
    schema = source_schema(cfg, TableId(fresh_db, "t"))  # (id, v, c): the definition now
    items = follow_items(binary, cfg, schema, start, stop)
    assert len(items) == 1 and isinstance(items[0], NativeStopped), items
    assert items[0].end == start and "other columns" in items[0].why
    assert decode_range(binary, cfg, 4304, {schema.table: schema}, start, before_ddl) is None  # catch-up too


def test_a_rotated_binlog_is_followed_to_its_head(
    mariadb: MariaDBServer, source_config: SourceConfig, fresh_db: str, binary: Path
) -> None:
    """The events a new binlog file starts with come only between transactions: the position
    after them is a boundary, so an idle stream reaches the source's position (what
    ``--exit-when-caught-up`` waits for) instead of stopping at the last commit."""
    cfg = replace(source_config, tls_mode="disabled")
    table = f"`{fresh_db}`.`t`"
    mariadb.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY, v VARCHAR(10))")
    schema = source_schema(cfg, TableId(fresh_db, "t"))
    start = binlog_offset(mariadb)
    mariadb.execute(f"INSERT INTO {table} VALUES (1, 'a')")
    mariadb.execute("FLUSH BINARY LOGS")
    head = binlog_offset(mariadb)
    assert head.file != start.file
    items = follow_items(binary, cfg, schema, start, head)
    # MariaDB may add its binlog checkpoint event to the new file after FLUSH returned: the head
    # then ends later than ``head``, at the source's position now.
    assert isinstance(items[-1], NativeBatch) and items[-1].end >= head, items
    assert items[-1].end.same_position(binlog_offset(mariadb)), items


_FOLLOW_THEN_WAIT = """
import json, sys, time
from pathlib import Path
from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.core.rendered_log import RenderedLog
from sparkcdc.mysql.binlog.follow import FollowSettings, NativeFollower
from sparkcdc.mysql.connection import SourceConfig
from sparkcdc.mysql.schema import TableSchema
args = json.loads(sys.argv[1])
cfg = SourceConfig(args["host"], args["port"], args["user"], args["password"], tls_mode="disabled")
follower = NativeFollower(Path(args["binary"]), cfg, 4305, {}, BinlogOffset(*args["start"]), "mariadb",
                          FollowSettings(100, 200, 5))
follower.start()
print(follower._proc.pid, flush=True)
time.sleep(600)
"""


def test_the_decoder_ends_with_the_process_that_follows(
    mariadb: MariaDBServer, source_config: SourceConfig, binary: Path
) -> None:
    """A pipeline process killed outright (SIGKILL) leaves no replica connection behind: the
    decoder ends when its stdin does."""
    start = binlog_offset(mariadb)
    cfg = source_config
    args = {"host": cfg.host, "port": cfg.port, "user": cfg.user, "password": cfg.password}
    args |= {"binary": str(binary), "start": [start.file, start.pos]}
    parent = subprocess.Popen(
        [sys.executable, "-c", _FOLLOW_THEN_WAIT, json.dumps(args)], stdout=subprocess.PIPE, text=True
    )
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    assert _running(child)
    parent.kill()
    parent.wait()
    wait_until(lambda: not _running(child), timeout=10, message="the decoder outlived its caller")


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"  # a zombie has ended (its new parent may never reap it)
