"""The JDBC sink: MySQL/MariaDB and PostgreSQL targets written in transactions.

``sink.JdbcSink`` replaces a snapshot split's key range in one transaction and applies a binlog
batch in another; ``dialects.py`` and ``postgres.py`` hold what differs between target databases;
``fence.py`` is the epoch fence row every write checks; ``evolution.py`` follows added and
dropped columns.
"""

from sparkcdc.sinks.jdbc.config import JdbcSinkConfig
from sparkcdc.sinks.jdbc.sink import JdbcSink

__all__ = ["JdbcSink", "JdbcSinkConfig"]
