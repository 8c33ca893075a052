"""Delta Lake sink: one Delta table per source table, below ``spec.sink.path``.

The modules, by responsibility:

* ``config``    settings (``DeltaSinkConfig``), the idempotent-write version of an offset
                (``txn_version``) and the ``userMetadata`` every commit carries
                (``commit_metadata`` parses it);
* ``tables``    creating tables with the mapped schema, partitions and properties; schema
                evolution (ADD/DROP COLUMN from the binlog, ``mergeSchema``);
* ``snapshot``  a wave's split ranges replaced atomically (append when the history proves
                them empty — ``ledger`` — else ``replaceWhere``);
* ``merge``     a binlog batch applied with one ``MERGE`` per table, exactly once through
                Delta's ``txnAppId``/``txnVersion``;
* ``session``   the sink's own Spark session on the driver;
* ``sink``      ``DeltaSink`` over all of them, and ``OPTIMIZE`` every N commits.

Each module's docstring is the detailed design of its part.
"""

from __future__ import annotations

from sparkcdc.sinks.delta.config import APP_ID, DeltaSinkConfig, commit_metadata, txn_version
from sparkcdc.sinks.delta.sink import DeltaSink

__all__ = ["APP_ID", "DeltaSink", "DeltaSinkConfig", "commit_metadata", "txn_version"]
