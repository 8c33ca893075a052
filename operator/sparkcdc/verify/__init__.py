"""Verify and repair: prove a replica equals its source chunk by chunk, without locks.

* ``canonical``  the canonical text of a row, rendered the same by MariaDB/MySQL, PostgreSQL
                 and Python (for binlog row images);
* ``checksum``   per-chunk ``COUNT(*)`` + sum of 60-bit row hashes, computed by each database;
                 per-row hashes for re-checks;
* ``tasks``      the first pass as Spark tasks (source and sink checksums of chunk groups);
* ``recheck``    row-by-row re-check of differing chunks once the pipeline has applied the
                 binlog past the source read, explaining rows changed meanwhile from the binlog;
* ``runner``     ``verify_pipeline``: plan, check, re-check, report, repair (through
                 ``spark.snapshot.run_wave``);
* ``report``     JSON and rich rendering; ``local``: the ``sparkcdc verify`` command.

On Kubernetes a new ``spec.verifyNonce`` (with ``spec.verify``) makes the driver pod run
``runner.verify_pipeline`` in a background thread while it streams, with ``applied`` = its own
committed offset (``driver/verify_loop.py``); the result goes into ``status.verification``
and the ``Verified`` condition (``controller.verify_status``).
"""
