"""Real servers for tests and the demo, started on loopback and thrown away.

MariaDB with binary logging and GTID replicas (``mariadb.py``, ``replication.py``), PostgreSQL,
a Kubernetes control plane built from Go modules (``kube.py``), a node runner that runs pods as
podman containers of their images (``noderunner.py``, ``pod_container.py``), and a small PKI.
Shipped in the package because ``make demo`` uses them too; the product never imports them.
"""
