"""Patches of third-party code sparkcdc depends on, all in one place, each guarded.

A patch here replaces or wraps code its library does not offer as an interface (private methods,
a module meant to be run only by its own launcher), so it is right only for the code it was
written against. Each module patches one library through one explicit function, called where the
patch takes effect, and that function first runs ``guard.check``: the installed release must be
in the version range ``pyproject.toml`` pins for it, and the source of every upstream function the
patch replaces or relies on must hash to the digest recorded when the patch was written. Anything
else fails loudly (``UpstreamChangedError``, naming the package, its version and what to do) rather
than running a patch over code it was not written for. ``tests/unit/compat`` runs the same checks,
so an upgrade that changes patched code fails the unit tests first.

* ``mysql_replication``: python-mysql-replication's DATE, DATETIME2, TIME2 and latin1 string decoding
  (zero dates as MySQL's text, negative TIME2 with a fraction, latin1 as the server reads it);
  applied by ``mysql/binlog/reader.py``.
* ``pyspark_daemon``: the daemon Spark forks its Python workers from, run without Spark's zips on
  ``sys.path``; Spark runs it (``spark.python.daemon.module``, set by ``spark/session.py``).

The Go binlog decoder's one patch of go-mysql is a unified diff with its own version guard:
``binlogdec/go-mysql.patch``, applied by ``binlogdec/build.sh``.

This package imports nothing at import time: the operator process never loads the libraries its
modules patch (``tests/unit/test_packaging.py``).
"""
