"""A PySpark worker daemon that imports the snapshot task's modules before it forks workers.

Spark starts one daemon per executor (``python -m pyspark.daemon``) and forks a worker from it
for each Python task; a fresh worker then imports pyarrow, numpy, ConnectorX, PyMySQL and
sparkcdc before its first split — about half a second of CPU per worker, on the critical path
of the first wave. With ``spark.python.daemon.module=sparkcdc.spark.worker_daemon`` the daemon
imports them once and every worker inherits them through ``fork``.
"""

from __future__ import annotations

import contextlib

from pyspark import daemon

with contextlib.suppress(ImportError):  # a worker imports whatever is missing by itself
    import sparkcdc.mysql.split_reader
    import sparkcdc.sinks.changelog
    import sparkcdc.sinks.jdbc
    import sparkcdc.spark.snapshot  # noqa: F401

if __name__ == "__main__":
    daemon.manager()  # type: ignore[no-untyped-call]
