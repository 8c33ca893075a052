"""What runs on Spark or starts it: the session, and the tasks executors run.

``session.py`` builds the driver's SparkSession (local or on Kubernetes) and ``lazy_session.py``
starts it on first use, so a small snapshot never waits for a JVM. ``snapshot.py`` is the split
reader task (read a split between watermarks, merge the binlog between them, commit to the sink),
``catchup_tasks.py`` the catch-up range task, ``frame_wave.py`` the waves of sinks that write with
Spark from the driver (Delta). The engine (``sparkcdc.engine``) decides what these run on.
"""
