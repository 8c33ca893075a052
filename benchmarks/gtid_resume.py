"""How long a resume by GTID takes on a large binlog (docs/operations.md, "Failover").

A throwaway MariaDB writes about ``--megabytes`` of row events into one binlog file (8 KiB rows,
100 per transaction); then the two lookups a driver makes when it starts on a server that did
not write its checkpoint are timed:

* ``history_problem`` at the end of the binlog (``BINLOG_GTID_POS``, the same-server check every
  start makes), and
* ``map_gtid_positions`` of a GTID position near the end of the file (the worst case: the file's
  ``SHOW BINLOG EVENTS`` is scanned from its start to the position) and in its middle.

    .venv/bin/python benchmarks/gtid_resume.py --megabytes 1024
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


def _fill(server: MariaDBServer, megabytes: int) -> list[str]:
    """Write the binlog; returns the GTID position after each transaction."""
    server.execute("CREATE DATABASE bench")
    server.execute("CREATE TABLE bench.blobs (id INT PRIMARY KEY, payload MEDIUMBLOB)")
    transactions = megabytes * 1024 * 1024 // (_ROW_BYTES * _ROWS_PER_TRANSACTION)
    payload = "x" * _ROW_BYTES
    positions = []
    for t in range(transactions):
        base = t * _ROWS_PER_TRANSACTION
        values = ", ".join(f"({base + i}, '{payload}')" for i in range(_ROWS_PER_TRANSACTION))
        server.execute(f"INSERT INTO bench.blobs VALUES {values}")
        positions.append(str(server.execute("SELECT @@GLOBAL.gtid_binlog_pos")[0][0]))
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
            # A quarter in (with --megabytes 2048: the middle of the first 1 GiB file) is the worst
            # case, half a file scanned; at a file's end the next file's Gtid_list answers at once.
            quarter = len(positions) // 4
            for label, gtid in (("mid-file", positions[quarter]), ("last", positions[-2])):
                began = time.monotonic()
                found = map_gtid_positions(conn, [gtid], now)
                print(f"GTID {gtid} ({label}) -> {found[gtid]} in {time.monotonic() - began:.2f}s")
            conn.close()
        finally:
            server.cleanup()


if __name__ == "__main__":
    main()
