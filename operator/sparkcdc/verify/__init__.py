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

TODO(operator, issue 6/9): ``spec.verify`` / ``spec.verifyNonce`` on a CdcPipeline — the driver
pod calls ``runner.verify_pipeline(runtime, spark, options, applied=<its checkpoint's
binlog offset>, checkpoint=<its checkpoint>)`` when the nonce changes and the operator writes a
``Verified`` condition (chunks checked / differing, rows, time) from the returned report.
"""
