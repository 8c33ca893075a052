"""Reading the source's binlog: the live reader, the catch-up range decoders, and positions.

``reader.py`` and ``stream.py`` follow the binlog with python-mysql-replication (the exact path);
``native.py`` runs the Go decoder (``binlogdec/``) for catch-up ranges it reproduces exactly;
``ranges.py`` lists transaction boundaries without decoding rows; ``search.py`` finds positions
by time or GTID; ``connection.py`` is the replication connection with what the library lacks.
"""
