"""How long a resume by GTID takes on a large binlog (docs/operations.md, "Failover").

A throwaway MariaDB writes about ``--megabytes`` of row events into one binlog file (8 KiB rows,
100 per transaction); then the two lookups a driver makes when it starts on a server that did
not write its checkpoint are timed:

* ``history_problem`` at the end of the binlog (``BINLOG_GTID_POS``, the same-server check every
  start makes), and
* ``map_gtid_positions`` of the GTID positions in the middle and near the end (the worst case:
  the file's ``SHOW BINLOG EVENTS`` is scanned from its start to the position) of the first,
  full binlog file.

MariaDB annotates row events with their statement (``binlog_annotate_row_events``), so the
binlog is about twice ``--megabytes``: 1024 gives a full 1 GiB first file and most of a second.

    nice -n 10 .venv/bin/python benchmarks/gtid_resume.py --megabytes 1024
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.mysql.failover import history_problem, map_gtid_positions
from sparkcdc.mysql.flavor import detect_flavor
from sparkcdc.mysql.queries import current_offset
from sparkcdc.testing.mariadb import MariaDBServer

_ROW_BYTES = 8192
_ROWS_PER_TRANSACTION = 100


def _fill(server: MariaDBServer, megabytes: int) -> list[tuple[str, str, int]]:
    """Write the binlog; returns the GTID position, binlog file and position after each transaction."""
    server.execute("CREATE DATABASE bench")
    server.execute("CREATE TABLE bench.blobs (id INT PRIMARY KEY, payload MEDIUMBLOB)")
    transactions = megabytes * 1024 * 1024 // (_ROW_BYTES * _ROWS_PER_TRANSACTION)
    payload = "x" * _ROW_BYTES
    positions = []
    for t in range(transactions):
        base = t * _ROWS_PER_TRANSACTION
        values = ", ".join(f"({base + i}, '{payload}')" for i in range(_ROWS_PER_TRANSACTION))
        server.execute(f"INSERT INTO bench.blobs VALUES {values}")
        gtid = str(server.execute("SELECT @@GLOBAL.gtid_binlog_pos")[0][0])
        positions.append((gtid, *server.binlog_position()))
    return positions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=1024)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sparkcdc-gtid-bench-") as tmp:
        server = MariaDBServer(Path(tmp), extra_options=["--max-binlog-size=1073741824"])
        server.start()
        try:
            began = time.monotonic()
            positions = _fill(server, args.megabytes)
            print(f"wrote {len(positions)} transactions in {time.monotonic() - began:.1f}s")
            conn = server.root_connection()
            flavor = detect_flavor(conn)
            now = current_offset(conn, flavor)
            files = server.execute("SHOW BINARY LOGS")
            print(f"binlog: {[(str(f[0]), int(f[1])) for f in files]}, end {now}")
            began = time.monotonic()
            problem = history_problem(conn, BinlogOffset(now.file, now.pos, now.gtid_set), flavor)
            seconds = time.monotonic() - began
            print(f"same-server check (BINLOG_GTID_POS at the end): {seconds:.2f}s ({problem})")
            # In the first file (full, as the --max-binlog-size): a position in its middle costs a
            # scan of half the file's event headers, the last one before the rotation all of them.
            first = str(files[0][0])
            size = int(files[0][1])
            in_first = [p for p in positions if p[1] == first]
            middle = min(in_first, key=lambda p: abs(p[2] - size // 2))
            last = in_first[-2]  # the very last one is answered by the next file's Gtid_list
            for label, (gtid, file, pos) in (("mid-file", middle), ("end of file", last)):
                began = time.monotonic()
                found = map_gtid_positions(conn, [gtid], now)
                seconds = time.monotonic() - began
                print(f"GTID {gtid} ({label}, {file}:{pos} of {size}) -> {found[gtid]} in {seconds:.2f}s")
            conn.close()
        finally:
            server.cleanup()


if __name__ == "__main__":
    main()
