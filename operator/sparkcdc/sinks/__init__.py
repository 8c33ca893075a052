"""The sinks a pipeline writes to: JDBC (MySQL/MariaDB and PostgreSQL), Delta Lake
(``sinks.delta``), a JSON changelog and the console.

Each sink applies snapshot splits and collapsed binlog batches idempotently, keyed by the source
table's key (``base.SinkConfig``/``Sink``), so a split or batch written twice leaves one copy:
that is what lets a killed driver resume without doubling rows. ``targets`` is the one place a
source row becomes a target row (routing, column rules, metadata columns, soft deletes);
``factory`` builds a sink from the spec; ``fence`` refuses writes of a driver a newer epoch
replaced.
"""
