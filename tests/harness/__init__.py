"""Shared test helpers: real services for tests (see tests/conftest.py for the fixtures).

Importable as ``harness`` from every test (pyproject's ``pythonpath``). What is where:

* ``mariadb``: the throwaway MariaDB server behind the ``mariadb`` fixture, its cdc account.
* ``spark``: the local SparkSession behind the ``spark`` fixture.
* ``runner``: ``sparkcdc run`` (and any ``sparkcdc`` command) as a subprocess; killing a run
  like a pod kill; manifests and checkpoints.
* ``waiting``: ``wait_until``, the one way to wait for a condition (never assert durations).
* ``decoder``: the Go binlog decoder as the engine finds it, a table's schema from the source.
* ``writer``: ``RandomWriter``, random transactions on source tables in a thread, until stopped.
* ``ddl_writer``: a ``RandomWriter`` that renames, widens, narrows and truncates tables between
  its transactions, for the DDL-following tests.
* ``source_tables``: ``(id, name, price)`` tables and their writer, for the Kubernetes tests.
* ``type_table``: the table of every MySQL type family, its edge-case and random rows.
* ``arrow_tables``: a seeded table of canonical Arrow values, for the renderers of the sinks.
* ``schemas``: hand-written column and table schemas, for sink tests without a source table.
* ``reconcile_fixtures``: inputs of the controller's reconcile, for its unit tests.
* ``image_policy``: images and whether an allow-list lets pipelines run them, for the operator's
  check and the chart's ValidatingAdmissionPolicy alike.
* ``monitoring``: the series names the driver and the operator export, for the chart's alert
  rules and dashboard.

A helper two test modules share lives here (or in a conftest.py fixture), not in one of them.
"""
