"""The source side: talking to MySQL and MariaDB, and one canonical value per MySQL type.

Connections and their errors (``connection.py``), control queries, table schemas and chunk keys,
the snapshot's split and chunk readers (Arrow batches from ConnectorX or PyMySQL), the canonical
value of every type whichever path read it (``types.py``), and the binlog (``binlog/``).
"""
